#include "discover/imex_channels.hpp"

#include <dirent.h>

#include <algorithm>

#include "discover/device_nodes.hpp"
#include "discover/host_fs.hpp"
#include "util/strings.hpp"

namespace gpuctk::discover {

namespace {

constexpr std::string_view k_channel_prefix = "channel";

}  // namespace

std::optional<uint32_t> parse_imex_channel(std::string_view text) {
  if (text.starts_with(k_channel_prefix)) {
    text.remove_prefix(k_channel_prefix.size());
  }
  // Digits only, and one spelling per channel: "007" would name a node the driver never makes.
  if (text.empty() || text.size() > 7 || (text.size() > 1 && text.front() == '0') ||
      !std::ranges::all_of(text, [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const auto number = parse_u32(text);
  if (!number || *number > k_max_imex_channel) {
    return std::nullopt;
  }
  return number;
}

std::string imex_channel_path(uint32_t channel) {
  return std::string(k_imex_channels_dir) + "/" + std::string(k_channel_prefix) + std::to_string(channel);
}

Result<DeviceNode> imex_channel_node(std::string_view dev_root, uint32_t channel) {
  const std::string context = "IMEX channel " + std::to_string(channel);
  const std::string path = imex_channel_path(channel);
  auto node = stat_device_node(dev_root, path);
  if (!node) {
    return fail_with(context, node.error());
  }
  if (!*node) {
    return fail(context + ": " + under_root(dev_root, path) + " does not exist");
  }
  if ((*node)->type != 'c') {
    return fail(context + ": " + under_root(dev_root, path) + ": not a character device");
  }
  return std::move(**node);
}

Result<std::vector<DeviceNode>> discover_imex_channels(std::string_view dev_root) {
  const std::string dir = under_root(dev_root, k_imex_channels_dir);
  GPUCTK_TRY_ASSIGN(const auto entries, list_dir(dir));
  std::vector<DeviceNode> nodes;
  for (const auto& entry : entries) {
    if (entry.type != DT_CHR || !entry.name.starts_with(k_channel_prefix) ||
        !parse_imex_channel(entry.name)) {
      continue;
    }
    if (nodes.size() == k_max_imex_channels) {
      return fail(dir + ": more than " + std::to_string(k_max_imex_channels) + " IMEX channels");
    }
    GPUCTK_TRY_ASSIGN(auto node,
                      stat_device_node(dev_root, std::string(k_imex_channels_dir) + "/" + entry.name));
    if (node) {
      nodes.push_back(std::move(*node));
    }
  }
  std::ranges::sort(nodes, {}, &DeviceNode::path);
  return nodes;
}

}  // namespace gpuctk::discover
