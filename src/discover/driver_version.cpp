#include "discover/driver_version.hpp"

#include <optional>
#include <vector>

#include "util/strings.hpp"

namespace gpuctk::discover {
namespace {

constexpr std::string_view k_nvrm_prefix = "NVRM version:";
constexpr std::string_view k_kernel_module = "Kernel Module";

// The space- or tab-separated words of `text`.
std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  constexpr std::string_view k_blank = " \t";
  for (;;) {
    const auto start = text.find_first_not_of(k_blank);
    if (start == std::string_view::npos) {
      return out;
    }
    text.remove_prefix(start);
    const auto end = text.find_first_of(k_blank);
    out.push_back(text.substr(0, end));
    if (end == std::string_view::npos) {
      return out;
    }
    text.remove_prefix(end);
  }
}

// True for 2 or 3 non-empty runs of decimal digits joined by dots ("550.54.15", "390.157").
bool is_driver_version(std::string_view token) {
  const auto parts = split(token, '.');
  if (parts.size() != 2 && parts.size() != 3) {
    return false;
  }
  for (const auto part : parts) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string_view::npos) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<DriverVersion> parse_driver_version(std::string_view text) {
  std::optional<std::string_view> id;
  for (const auto raw : split(text, '\n')) {
    const auto line = trim(raw);
    if (line.starts_with(k_nvrm_prefix)) {
      id = trim(line.substr(k_nvrm_prefix.size()));
      break;
    }
  }
  if (!id) {
    return fail("driver version: no \"NVRM version:\" line");
  }
  const auto module_at = id->find(k_kernel_module);
  if (module_at == std::string_view::npos) {
    return fail(
        "driver version: expected \"NVIDIA UNIX ... Kernel Module <version> ...\" after "
        "\"NVRM version:\", got " +
        quote(*id));
  }
  const auto before = trim(id->substr(0, module_at));
  const auto after = words(id->substr(module_at + k_kernel_module.size()));
  // The open modules say "Open Kernel Module for <arch>"; the proprietary one names the arch before.
  const size_t version_at = !after.empty() && after[0] == "for" ? 2 : 0;
  if (version_at >= after.size()) {
    return fail("driver version: no version after \"Kernel Module\" in " + quote(*id));
  }
  if (!is_driver_version(after[version_at])) {
    return fail("driver version: expected a version like 550.54.15 after \"Kernel Module\", got " +
                quote(after[version_at]));
  }
  return DriverVersion{
      .version = std::string(after[version_at]),
      .kernel_module = before.ends_with("Open") ? KernelModule::open : KernelModule::proprietary};
}

std::optional<std::string> library_driver_version(std::string_view file_name, std::string_view stem) {
  if (!file_name.starts_with(stem) || !is_driver_version(file_name.substr(stem.size()))) {
    return std::nullopt;
  }
  return std::string(file_name.substr(stem.size()));
}

}  // namespace gpuctk::discover
