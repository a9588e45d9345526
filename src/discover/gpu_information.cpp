#include "discover/gpu_information.hpp"

#include <map>

#include "discover/key_value_lines.hpp"
#include "discover/pci_bus_id.hpp"
#include "util/strings.hpp"

namespace gpuctk::discover {
namespace {

constexpr std::string_view k_context = "gpu information";

// True if `uuid` is "GPU-" and 8-4-4-4-12 characters for which `is_digit` holds, dash-separated.
template <class IsDigit>
bool has_uuid_shape(std::string_view uuid, IsDigit is_digit) {
  constexpr std::string_view k_prefix = "GPU-";
  constexpr size_t k_body = 36;  // 32 digits and 4 dashes
  if (!uuid.starts_with(k_prefix) || uuid.size() != k_prefix.size() + k_body) {
    return false;
  }
  const auto body = uuid.substr(k_prefix.size());
  for (size_t i = 0; i < body.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? body[i] != '-' : !is_digit(body[i])) {
      return false;
    }
  }
  return true;
}

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

std::unexpected<Error> field_error(std::string_view key, const std::string& message) {
  return fail(std::string(k_context) + ": " + std::string(key) + ": " + message);
}

}  // namespace

Result<GpuInformation> parse_gpu_information(std::string_view text) {
  const auto lines = parse_key_value_lines(text);
  if (!lines) {
    return fail_with(k_context, lines.error());
  }
  std::map<std::string_view, std::string_view> fields;
  for (const auto& line : *lines) {
    if (!fields.emplace(line.key, line.value).second) {
      return fail(std::string(k_context) + ": line " + std::to_string(line.line) + ": duplicate \"" +
                  std::string(line.key) + ":\"");
    }
  }
  const auto field = [&](std::string_view key) -> std::optional<std::string_view> {
    const auto it = fields.find(key);
    return it == fields.end() ? std::nullopt : std::optional(it->second);
  };
  const auto required = [&](std::string_view key) -> Result<std::string_view> {
    const auto value = field(key);
    if (!value || value->empty()) {
      return fail(std::string(k_context) + ": missing \"" + std::string(key) + ":\"");
    }
    return *value;
  };

  GpuInformation info;
  GPUCTK_TRY_ASSIGN(const auto model, required("Model"));
  info.model = std::string(model);

  if (const auto uuid = field("GPU UUID")) {
    if (has_uuid_shape(*uuid, is_hex_digit)) {
      info.uuid = std::string(*uuid);
    } else if (!has_uuid_shape(*uuid, [](char c) { return c == '?'; })) {
      return field_error("GPU UUID",
                         "expected GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, got " + quote(*uuid));
    }
  }

  GPUCTK_TRY_ASSIGN(const auto bus, required("Bus Location"));
  auto bus_id = parse_pci_bus_id(bus);
  if (!bus_id) {
    return field_error("Bus Location", bus_id.error().message);
  }
  info.bus_location = std::move(*bus_id);

  GPUCTK_TRY_ASSIGN(const auto minor_text, required("Device Minor"));
  const auto minor = parse_u32(minor_text);
  if (!minor) {
    return field_error("Device Minor", "expected a decimal number, got " + quote(minor_text));
  }
  info.minor = *minor;

  if (const auto firmware = field("GPU Firmware"); firmware && !firmware->empty() && *firmware != "N/A") {
    info.firmware = std::string(*firmware);
  }

  // The flag was renamed from "Blacklisted" to "GPU Excluded"; a file has one of them.
  for (const std::string_view key : {"GPU Excluded", "Blacklisted"}) {
    if (const auto flag = field(key)) {
      if (*flag != "Yes" && *flag != "No") {
        return field_error(key, "expected Yes or No, got " + quote(*flag));
      }
      info.excluded = info.excluded || *flag == "Yes";
    }
  }
  return info;
}

}  // namespace gpuctk::discover
