#pragma once
// What the fuzz targets and the seed generator share: the input layouts of the targets that take more
// than one file, an ld.so.cache writer, and the check that turns a broken invariant into a crash.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cdi/apply.hpp"
#include "cdi/spec.hpp"
#include "ldcache/cache_file.hpp"

namespace gpuctk::fuzz {

// Prints "invariant broken: <what>" (and `detail`, quoted) and aborts, which libFuzzer reports as a
// crash with the input that caused it.
[[noreturn]] void invariant_broken(std::string_view what, std::string_view detail = {});
#define GPUCTK_FUZZ_CHECK(condition, detail)                \
  do {                                                      \
    if (!(condition)) {                                     \
      ::gpuctk::fuzz::invariant_broken(#condition, detail); \
    }                                                       \
  } while (false)

// What every spec the codec accepted must satisfy: it can be written in both formats and read back;
// what is read back is a fixed point (the first write may replace invalid UTF-8); the YAML the writer
// produces takes the fast canonical path, which must build yaml-cpp's tree; validation and the
// minimum version run on it. Aborts through invariant_broken otherwise.
void check_spec_round_trip(const cdi::Spec& spec);

// fuzz_oci_apply's input: one flags byte, the config.json text, a NUL byte, the CDI spec text. Bits of
// the flags byte (the rest are ignored):
inline constexpr uint8_t k_envvar_when_unprivileged = 1;  // RequestConfig::accept_envvar_when_unprivileged
inline constexpr uint8_t k_volume_mounts = 2;             // RequestConfig::accept_volume_mounts
inline constexpr uint8_t k_disable_require = 4;           // RequestConfig::disable_require
inline constexpr uint8_t k_spec_is_yaml = 8;              // the spec is YAML (else JSON)
struct ApplyInput {
  uint8_t flags = 0;
  std::string_view config;
  std::string_view spec;
};
// Splits `data`; an input without a flags byte gives an empty config and spec.
ApplyInput split_apply_input(std::string_view data);
std::string join_apply_input(uint8_t flags, std::string_view config, std::string_view spec);

// A host for apply_edits that is a pure function of the path (no file system): some paths are missing,
// the others are char, block or fifo nodes with numbers derived from the path.
cdi::StatNode fake_host_nodes();

// fuzz_proc_files' input: one byte choosing the parser (its value modulo k_proc_file_kinds), then the
// file's text.
enum class ProcFile : uint8_t {
  proc_devices,       // /proc/devices
  driver_params,      // /proc/driver/nvidia/params
  key_value_lines,    // any "Key: value" file of the driver
  gpu_information,    // /proc/driver/nvidia/gpus/<bus>/information
  mig_minors,         // /proc/driver/nvidia-caps/mig-minors
  capability_file,    // /proc/driver/nvidia/capabilities/...
  pci_bus_id,         // a bus id (directory names in /proc and /sys, NVML's busId)
  driver_version,     // /proc/driver/nvidia/version
  library_file_name,  // a driver library's file name (libcuda.so.550.54.15)
};
inline constexpr uint8_t k_proc_file_kinds = 9;
std::string proc_file_input(ProcFile kind, std::string_view text);

// An ld.so.cache holding `entries`, in the layout `format` (fields as ldconfig writes them; for
// compat, the old table repeats the entries, as ldconfig does).
std::string write_ld_cache(const std::vector<ldcache::LdCacheEntry>& entries, ldcache::LdCacheFormat format);

}  // namespace gpuctk::fuzz
