#pragma once
// PCI bus ids of GPUs, in the one spelling the kernel uses for /proc and /sys directory names.

#include <string>
#include <string_view>

#include "util/error.hpp"

namespace gpuctk::discover {

// Normalises a PCI bus id to sysfs' canonical form "dddd:bb:dd.f" (lower-case hex, domain at least four
// digits, as the kernel prints "%04x:%02x:%02x.%x"). Accepted inputs, in any letter case:
//   "00000000:07:00.0"  NVML's busId (8-digit domain)
//   "0000:07:00.0"      sysfs / /proc/driver/nvidia/gpus (4-digit domain)
//   "07:00.0"           no domain: domain 0
// The domain has 1 to 8 hex digits (values above 0xffff, e.g. Intel VMD's 10000, keep their digits), the
// bus and device exactly 2 (device <= 0x1f), the function exactly 1 (<= 7). Anything else -> error
// `invalid PCI bus id "<input>": <reason>`.
Result<std::string> parse_pci_bus_id(std::string_view text);

}  // namespace gpuctk::discover
