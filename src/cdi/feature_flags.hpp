#pragma once
// nvidia-ctk's CDI feature flags (`cdi generate --feature-flag`, the names of v1.20.0's pkg/nvcdi) and what
// each means for the spec gpuctk writes: one table, a row per flag (feature_flags.cpp).

#include <string_view>

#include "cdi/spec_builder.hpp"
#include "util/error.hpp"

namespace gpuctk::cdi {

// Applies the feature flag `name` to `options`:
//   no-additional-gids-for-device-nodes  options.additional_gids = AdditionalGids::none
//   disable-ipc-discoverer               options.ipc_files = IpcFiles::leave_out
//   disable-nvsandboxutils (also its first spelling, disable-nvsandbox-utils), disable-multiple-csv-devices
//                                        accepted, nothing changes (gpuctk never uses nvsandboxutils and
//                                        has no CSV mode)
//   enable-explicit-driver-libraries, enable-coherent-annotations
//                                        an error: `feature flag "enable-coherent-annotations" is not
//                                        supported by gpuctk: <why>`
// Any other name is an error: `unknown feature flag "x" (nvidia-ctk v1.20's that gpuctk takes:
// no-additional-gids-for-device-nodes, disable-ipc-discoverer, disable-nvsandboxutils,
// disable-multiple-csv-devices)`. NVIDIA's
// toolkit ignores a name it does not know; a spec written without what the operator asked for is worse
// than a command that stops.
Result<void> apply_feature_flag(std::string_view name, BuildOptions& options);

// apply_feature_flag's checks alone, for the command line's parser.
Result<void> check_feature_flag(std::string_view name);

}  // namespace gpuctk::cdi
