#pragma once
// IMEX channels: the character devices /dev/nvidia-caps-imex-channels/channel<N> of the
// nvidia-caps-imex-channels major (discover/proc_devices.hpp), through which a process joins an IMEX
// domain's memory (multi-node NVLink). The driver makes channel0 when NVreg_CreateImexChannel0 says so;
// every other node is made by the administrator or a DRA driver. A channel's number is its minor.
//
// Container input names channels by number only: the nodes injected are always the host's own, looked
// up under the dev root, never made from what a container asked for.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/inventory.hpp"
#include "util/error.hpp"

namespace gpuctk::discover {

inline constexpr std::string_view k_imex_channels_dir = "/dev/nvidia-caps-imex-channels";
// The largest channel number: a channel's number is the minor of its node, and a dev_t minor has 20
// bits (NVIDIA's toolkit v1.20 and libnvidia-container refuse larger ones the same way).
inline constexpr uint32_t k_max_imex_channel = (1U << 20) - 1;
// At most this many channel nodes are read from the directory (discover_imex_channels): the driver's
// NVreg_ImexChannelCount is 2048 by default; a host with more is refused rather than listed unbounded.
inline constexpr size_t k_max_imex_channels = 16384;

// "<N>" or "channel<N>" (NVIDIA's two spellings), N decimal without leading zeros and at most
// k_max_imex_channel; nothing for anything else ("007", "-1", "1048576", "channel", "").
std::optional<uint32_t> parse_imex_channel(std::string_view text);

// "/dev/nvidia-caps-imex-channels/channel<N>".
std::string imex_channel_path(uint32_t channel);

// The host's node of channel `channel` under `dev_root`. Errors: "IMEX channel 3: <dev_root>/dev/
// nvidia-caps-imex-channels/channel3 does not exist", "...: not a character device" (a link, a file or a
// block device is never injected).
Result<DeviceNode> imex_channel_node(std::string_view dev_root, uint32_t channel);

// Every channel<N> character device in <dev_root>/dev/nvidia-caps-imex-channels, sorted by path; none
// when the directory is missing. Other entries are skipped; more than k_max_imex_channels is an error.
Result<std::vector<DeviceNode>> discover_imex_channels(std::string_view dev_root);

}  // namespace gpuctk::discover
