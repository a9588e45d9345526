#pragma once
// The spec of `cdi generate --mode imex`: the host's IMEX channels (discover/imex_channels.hpp) as CDI
// devices, the shape NVIDIA's toolkit v1.20 writes for that mode: one device per channel, named by its
// number ("0"), holding the channel's node; the device "all" with every channel (unless
// BuildOptions::all_device is off); common edits that are only NVIDIA_VISIBLE_DEVICES=void (channels
// alone give no GPU). No driver files and no hooks: a channel is only its node.

#include <string_view>

#include "cdi/spec.hpp"
#include "cdi/spec_builder.hpp"
#include "util/error.hpp"

namespace gpuctk::cdi {

// The IMEX spec of the host whose /dev is under `dev_root`, for the channels `options.device_ids` names
// (N or channel<N>; none or "all": every channel the host has), with options' vendor, class, all_device
// and additional_gids (the rest is for GPU specs and ignored), validated as generate_spec's. Errors:
//   "--device-ids: invalid IMEX channel \"x\" (want a channel number from 0 to 1048575, channel<N> or all)"
//   "IMEX channel 3: <dev_root>/dev/nvidia-caps-imex-channels/channel3 does not exist"
//   "no devices to generate: no IMEX channels in <dev_root>/dev/nvidia-caps-imex-channels"
Result<Spec> generate_imex_spec(std::string_view dev_root, const BuildOptions& options);

}  // namespace gpuctk::cdi
