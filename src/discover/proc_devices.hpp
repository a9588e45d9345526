#pragma once
// Character-device majors from /proc/devices, and the ones the NVIDIA driver registers.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace gpuctk::discover {

// Names of the NVIDIA character devices in /proc/devices.
// GPUs /dev/nvidia<N> and /dev/nvidiactl (major 195), drivers before 550.40:
inline constexpr std::string_view k_nvidia_frontend = "nvidia-frontend";
// The same major from 550.40 on, registered as "nvidia", "nvidiactl" and "nvidia-modeset" (minor 254):
inline constexpr std::string_view k_nvidia = "nvidia";
inline constexpr std::string_view k_nvidiactl = "nvidiactl";
inline constexpr std::string_view k_nvidia_modeset = "nvidia-modeset";
// /dev/nvidia-uvm (minor 0) and /dev/nvidia-uvm-tools (minor 1); the major is dynamic:
inline constexpr std::string_view k_nvidia_uvm = "nvidia-uvm";
// /dev/nvidia-caps/nvidia-cap<N> (MIG and fabric capabilities); dynamic:
inline constexpr std::string_view k_nvidia_caps = "nvidia-caps";
// /dev/nvidia-caps-imex-channels/channel<N>; dynamic:
inline constexpr std::string_view k_nvidia_caps_imex_channels = "nvidia-caps-imex-channels";
// /dev/nvidia-nvswitch<N> and /dev/nvidia-nvswitchctl; dynamic:
inline constexpr std::string_view k_nvidia_nvswitch = "nvidia-nvswitch";

struct CharDevices {
  std::map<std::string, uint32_t, std::less<>> majors;  // name -> major

  // The major registered under `name`, if any.
  [[nodiscard]] std::optional<uint32_t> major(std::string_view name) const;
  // The major of /dev/nvidia<N>, /dev/nvidiactl and /dev/nvidia-modeset as nvidia-ctk reads it: "nvidia",
  // else "nvidia-frontend" (drivers before 550.40); "nvidiactl" alone is not looked up. 195 on every
  // driver so far.
  [[nodiscard]] std::optional<uint32_t> nvidia_gpu_major() const;
  bool operator==(const CharDevices&) const = default;
};

// Parses /proc/devices: the lines "<major> <name>" of the "Character devices:" section; the
// "Block devices:" section (and anything after it) is ignored. Blank lines are skipped. A line that is
// not a decimal major and a name, a name listed twice, or a file without the "Character devices:"
// header is an error "/proc/devices: ..." (with the line number for line errors).
Result<CharDevices> parse_proc_devices(std::string_view text);

}  // namespace gpuctk::discover
