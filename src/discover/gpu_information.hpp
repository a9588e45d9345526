#pragma once
// One GPU as the kernel driver describes it in /proc/driver/nvidia/gpus/<bus id>/information.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace gpuctk::discover {

struct GpuInformation {
  std::string model;                    // "Model:", e.g. "NVIDIA A100-SXM4-40GB"
  std::optional<std::string> uuid;      // "GPU UUID:", e.g. "GPU-6c1e9b1c-..."; nothing if unknown
  std::string bus_location;             // "Bus Location:", canonical "0000:07:00.0" (parse_pci_bus_id)
  uint32_t minor = 0;                   // "Device Minor:": the N of /dev/nvidiaN
  std::optional<std::string> firmware;  // "GPU Firmware:" (GSP version); nothing if none
  bool excluded = false;                // "GPU Excluded: Yes" (older drivers: "Blacklisted: Yes")
  bool operator==(const GpuInformation&) const = default;
};

// Parses the information file: lines "Key:" + spaces/tabs + value, in any order.
//   Required: "Model:" (non-empty), "Bus Location:" (a PCI bus id), "Device Minor:" (decimal, 32-bit).
//     Missing -> error `gpu information: missing "Device Minor:"`; invalid -> error naming the field.
//   "GPU UUID:" must look like GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (hex). uuid is nothing when the
//     line is absent (the driver omits it when it cannot read the UUID) or all question marks
//     ("GPU-????????-????-…", printed while the GPU is not initialised); other text is an error.
//   "GPU Firmware:" is optional (drivers before GSP support lack it); "N/A" (no GSP) is nothing too.
//   "GPU Excluded:" / "Blacklisted:" are optional ("No" when absent); values other than Yes/No are errors.
//   Other keys (IRQ, Video BIOS, Bus Type, DMA Size, DMA Mask, BARn, future ones) are ignored.
//   A key given twice, or a non-blank line without ':', is an error with its line number.
// All errors start with "gpu information: ".
Result<GpuInformation> parse_gpu_information(std::string_view text);

}  // namespace gpuctk::discover
