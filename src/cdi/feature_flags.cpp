#include "cdi/feature_flags.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

#include "util/strings.hpp"

namespace gpuctk::cdi {

namespace {

// What a flag does to gpuctk's spec.
enum class Effect : uint8_t {
  no_additional_gids,  // BuildOptions::additional_gids = none
  no_ipc_files,        // BuildOptions::ipc_files = leave_out
  nothing,             // accepted: gpuctk already behaves as the flag asks
  unsupported,         // refused, with `why`
};

struct FeatureFlag {
  std::string_view name;
  Effect effect;
  std::string_view why;  // for `unsupported`: what gpuctk does instead
};

// v1.20.0's flags (pkg/nvcdi/api.go), and the spelling its first release of disable-nvsandboxutils had.
constexpr FeatureFlag k_flags[] = {
    // Device nodes that are not world read/writable add no group to additionalGids.
    {"no-additional-gids-for-device-nodes", Effect::no_additional_gids, ""},
    // NVIDIA's device queries through libnvidia-sandboxutils: gpuctk queries NVML or /proc only.
    {"disable-nvsandboxutils", Effect::nothing, ""},
    {"disable-nvsandbox-utils", Effect::nothing, ""},
    // One device per CSV file on Tegra: gpuctk has no CSV mode.
    {"disable-multiple-csv-devices", Effect::nothing, ""},
    // Mounts libglvnd's libraries and libnvidia-api.so by name.
    {"enable-explicit-driver-libraries", Effect::unsupported,
     "gpuctk mounts the driver files its classifier knows, not NVIDIA's explicit list of libraries"},
    // Device annotations for coherent (Grace) GPUs.
    {"enable-coherent-annotations", Effect::unsupported, "gpuctk writes no device annotations"},
    // Leaves out the persistenced and fabric manager sockets and the MPS pipe directory.
    {"disable-ipc-discoverer", Effect::no_ipc_files, ""},
};

Result<const FeatureFlag*> find_flag(std::string_view name) {
  const auto* flag = std::ranges::find(k_flags, name, &FeatureFlag::name);
  if (flag == std::end(k_flags)) {
    return fail("unknown feature flag " + quote(name) +
                " (nvidia-ctk v1.20's that gpuctk takes: no-additional-gids-for-device-nodes, "
                "disable-ipc-discoverer, disable-nvsandboxutils, disable-multiple-csv-devices)");
  }
  if (flag->effect == Effect::unsupported) {
    return fail("feature flag " + quote(name) + " is not supported by gpuctk: " + std::string(flag->why));
  }
  return flag;
}

}  // namespace

Result<void> check_feature_flag(std::string_view name) {
  GPUCTK_TRY(find_flag(name));
  return {};
}

Result<void> apply_feature_flag(std::string_view name, BuildOptions& options) {
  GPUCTK_TRY_ASSIGN(const auto* flag, find_flag(name));
  if (flag->effect == Effect::no_additional_gids) {
    options.additional_gids = AdditionalGids::none;
  } else if (flag->effect == Effect::no_ipc_files) {
    options.ipc_files = IpcFiles::leave_out;
  }
  return {};
}

}  // namespace gpuctk::cdi
