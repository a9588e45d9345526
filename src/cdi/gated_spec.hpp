#pragma once
// The specs of `cdi generate --mode gds|mofed|gdrcopy|nvswitch`: the host's devices of one opt-in feature
// (discover/gated_devices.hpp, the same discovery NVIDIA_GDS=enabled and the others use in the hook) in
// the shape NVIDIA's toolkit v1.20 writes for these modes: ONE device, "all", holding every node of the
// feature (and for GDS the read-only mounts of /etc/cufile.json and /run/udev from the driver root); common
// edits that are only NVIDIA_VISIBLE_DEVICES=void. No driver files and no hooks.

#include <string_view>

#include "cdi/spec.hpp"
#include "cdi/spec_builder.hpp"
#include "discover/gated_devices.hpp"
#include "util/error.hpp"

namespace gpuctk::cdi {

// The spec of `feature` on the host whose /dev is under `dev_root` and whose files are under
// `driver_root`, with options' vendor, class and additional_gids (the rest is for GPU specs and ignored:
// the one device is always "all", as NVIDIA's), validated as generate_spec's. Errors: discovery's, and
//   "no devices to generate: no GDRCopy devices on this host (/dev/gdrdrv under <dev_root>)"
Result<Spec> generate_gated_spec(discover::GatedFeature feature, std::string_view dev_root,
                                 std::string_view driver_root, const BuildOptions& options);

}  // namespace gpuctk::cdi
