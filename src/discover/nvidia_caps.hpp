#pragma once
// NVIDIA capability devices (nvidia-caps): the MIG minor table and the per-capability files.
//
// With "dev"-style capabilities (driver param nv_cap_enable_devfs=1, the default on current drivers) each
// capability is a character device /dev/nvidia-caps/nvidia-cap<minor> of the "nvidia-caps" major, and
// /proc/driver/nvidia/capabilities/... holds one small file per capability naming that minor.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::discover {

// The minors of every possible capability, from /proc/driver/nvidia-caps/mig-minors. The driver
// pre-numbers them for 32 GPUs: "config 1", "monitor 2", then per GPU minor M and GPU instance G
// (0-14) "gpuM/giG/access" followed by its compute instances C (0-7) "gpuM/giG/ciC/access", numbered
// consecutively ("gpu0/gi0/access 3", "gpu0/gi0/ci0/access 4", …, "gpu31/gi14/ci7/access 4322").
// Newer drivers append other capabilities (e.g. "fabric-imex-mgmt"); they are kept by name.
struct MigMinors {
  // The access capabilities, keyed by access_key(gpu_minor, gi, ci) and sorted by it: a flat table,
  // because the driver lists 4320 of them and a host reads this file on every generate.
  std::vector<std::pair<uint64_t, uint32_t>> access;
  // Every other capability ("config", "monitor", "fabric-imex-mgmt", ...) by name.
  std::map<std::string, uint32_t, std::less<>> named;

  // The key of "gpu<gpu_minor>/gi<gi>/access" (ci absent) or "gpu<gpu_minor>/gi<gi>/ci<ci>/access".
  static std::optional<uint64_t> access_key(uint32_t gpu_minor, uint32_t gi, std::optional<uint32_t> ci);

  [[nodiscard]] size_t size() const { return access.size() + named.size(); }
  [[nodiscard]] std::optional<uint32_t> minor(std::string_view name) const;
  [[nodiscard]] std::optional<uint32_t> config() const;   // "config": MIG reconfiguration
  [[nodiscard]] std::optional<uint32_t> monitor() const;  // "monitor": MIG-wide monitoring
  // "gpu<gpu_minor>/gi<gi>/access": the GPU instance. gpu_minor is the /dev/nvidia<N> minor.
  [[nodiscard]] std::optional<uint32_t> gi_access(uint32_t gpu_minor, uint32_t gi) const;
  // "gpu<gpu_minor>/gi<gi>/ci<ci>/access": a compute instance inside it.
  [[nodiscard]] std::optional<uint32_t> ci_access(uint32_t gpu_minor, uint32_t gi, uint32_t ci) const;
  bool operator==(const MigMinors&) const = default;

 private:
  [[nodiscard]] std::optional<uint32_t> find_access(std::optional<uint64_t> key) const;
};

// Parses mig-minors: lines "<name> <minor>" (any blanks between; blank lines skipped). A line that is
// not a name and a decimal 32-bit minor, or a name given twice, is an error
// "mig-minors: line <n>: ...".
Result<MigMinors> parse_mig_minors(std::string_view text);

// Where the driver publishes the table, under the dev root.
inline constexpr std::string_view k_mig_minors_path = "/proc/driver/nvidia-caps/mig-minors";

// parse_mig_minors of <dev_root>/proc/driver/nvidia-caps/mig-minors; errors name the file.
Result<MigMinors> read_mig_minors(const std::string& dev_root);

// A dev-style capability file, e.g. /proc/driver/nvidia/capabilities/mig/config:
//   DeviceFileMinor: 1
//   DeviceFileMode: 256      (decimal permission bits: 256 = 0400, 292 = 0444, 438 = 0666)
//   DeviceFileModify: 1      (whether nvidia-modprobe may fix up the node)
struct CapabilityFile {
  uint32_t minor = 0;  // of /dev/nvidia-caps/nvidia-cap<minor>
  uint32_t mode = 0;   // permission bits, at most 07777
  bool modify = false;
  bool operator==(const CapabilityFile&) const = default;
};

// Parses a capability file. All three keys are required (missing -> error
// `capability file: missing "DeviceFileMode:"`); a value that is not a decimal number in range (mode
// <= 07777, modify 0 or 1) is an error naming the key. Other keys are ignored; a key given twice or a
// line without ':' is an error with its line number.
Result<CapabilityFile> parse_capability_file(std::string_view text);

// "/dev/nvidia-caps/nvidia-cap<minor>".
std::string capability_device_path(uint32_t minor);

}  // namespace gpuctk::discover
