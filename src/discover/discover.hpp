#pragma once
// Host -> Inventory: the one entry point of discovery.

#include <string>
#include <vector>

#include "discover/inventory.hpp"
#include "util/error.hpp"

namespace gpuctk::discover {

enum class Mode {
  automatic,   // nvml when libnvidia-ml.so.1 loads and initialises, else proc (with one warning saying why)
  nvml,        // GPUs and MIG devices from NVML (required to load)
  proc,        // GPUs from /proc/driver/nvidia and /sys only; NVML is never loaded
  management,  // proc discovery plus every NVIDIA node (caps, IMEX channels, NVSwitch)
};

// Parses "auto", "nvml", "proc", "management".
Result<Mode> parse_mode(std::string_view text);

struct DiscoverOptions {
  std::string driver_root = "/";  // libraries, binaries, configs, firmware, ld.so.cache
  std::string dev_root = "/";     // /dev, /proc, /sys
  Mode mode = Mode::automatic;
  std::vector<std::string> library_search_paths;  // extra library directories inside the driver root
  // The libnvidia-ml.so.1 to read the GPUs through (a host path); "" : the driver root's, found as
  // find_nvml_library finds it. For a daemon whose NVML is not the driver root's (a test's mock).
  std::string nvml_library;
};

// Whether the two roots are directories: "driver root /x does not exist", "dev root /y is not a
// directory". discover() checks them first; a command that discovers more than NVIDIA's GPUs
// (`gpuctk info`) checks them itself.
Result<void> check_roots(const DiscoverOptions& options);

// The path of libnvidia-ml.so.1 inside `driver_root`, found as discover() finds it (the root's ld.so.cache,
// then the standard library directories), for a service that opens NVML again and again (gpuctk-exporter).
// Errors: "libnvidia-ml.so.1: not found under <root> (ld.so.cache and standard library directories)", or
// a corrupt ld.so.cache.
Result<std::string> find_nvml_library(const std::string& driver_root);

// Discovers everything about the host. Errors name the path and the cause: a root that does not exist,
// no driver under the root (with "; <root>/run/nvidia/driver is a driver container's root: use
// --driver-root <root>/run/nvidia/driver" when there is one),
// an unreadable /dev or /proc file, NVML failing (to load or initialise only in nvml mode; a failing
// query after a successful start in every mode), a GPU or MIG device whose nodes are missing.
Result<Inventory> discover(const DiscoverOptions& options);

}  // namespace gpuctk::discover
