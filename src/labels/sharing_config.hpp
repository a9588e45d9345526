#pragma once
// The configuration file of NVIDIA's device plugin and GPU Feature Discovery (version v1), read once for
// both of gpuctk's readers: `gpuctk labels` (flags.migStrategy and the `sharing` section) and
// gpuctk-device-plugin (also the plugin's flags, PluginFlags). YAML or JSON:
//
//   version: v1                      # optional; any other version is refused
//   flags:
//     migStrategy: mixed             # none | single | mixed
//     failOnInitError: true          # the plugin's flags (PluginFlags): type-checked here, their values
//     plugin:                        # judged by the plugin (plugin/config.hpp); labels ignore them
//       deviceListStrategy: [envvar, cdi-cri]
//   imex:                            # the plugin's IMEX channels (plugin/config.hpp); labels ignore them
//     channelIDs: [0]                # [] or [0], as NVIDIA's plugin allows
//     required: true
//   sharing:
//     timeSlicing:                   # or mps: (same shape); when both are present mps is the one in force
//       renameByDefault: false       # true: the plugin advertises <name>.shared; the product label then
//                                    # has no -SHARED suffix
//       failRequestsGreaterThanOne: false   # the plugin refuses a request of several replicas (mps: true)
//       resources:                   # at least one
//         - name: gpu                # nvidia.com/ is implied; "mig-1g.5gb" for a MIG type (mixed strategy)
//           replicas: 4              # required, at least 2
//           devices: all             # all | a count > 0 | a list of GPU indexes, "gpu:mig" or UUIDs
//
// The file is checked the way the plugin checks it, so that a file the plugin refuses is refused here
// too, with the key path in the error: "sharing.timeSlicing.resources[0].replicas: must be at least 2,
// got 1", "flags.plugin.passDeviceSpecs: expected true or false", "imex.channelIDs: must be [] or [0];
// found [1]". GFD's flags (flags.gfd) are not read; `resources` (custom resource names) is ignored with a
// warning, as the plugin ignores it. Like the plugin, gpuctk applies replicas to every device of a resource:
// `devices` and `rename` are checked, then ignored with a warning.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::labels {

enum class MigStrategy { none, single, mixed };

// "none", "single", "mixed"; anything else is `unknown MIG strategy "x" (want none, single or mixed)`.
Result<MigStrategy> parse_mig_strategy(std::string_view text);
std::string_view mig_strategy_name(MigStrategy strategy);

enum class SharingStrategy { none, time_slicing, mps };

// The value of nvidia.com/gpu.sharing-strategy: "none", "time-slicing", "mps".
std::string_view sharing_strategy_name(SharingStrategy strategy);

// One resource of the sharing section in force.
struct ReplicatedResource {
  std::string name;       // fully qualified: "nvidia.com/gpu", "nvidia.com/mig-1g.5gb"
  uint32_t replicas = 0;  // at least 2
  // renameByDefault: the plugin advertises the replicas as "<name>.shared", so the product label keeps
  // the plain model name (no -SHARED suffix).
  bool renamed = false;
};

// The device plugin's flags in the file, each as the file spells it (nullopt: not there). Types are
// checked as the plugin's decoder checks them; values are the plugin's to judge.
struct PluginFlags {
  std::optional<bool> fail_on_init_error;                // flags.failOnInitError
  std::optional<std::string> mps_root;                   // flags.mpsRoot
  std::optional<std::string> nvidia_driver_root;         // flags.nvidiaDriverRoot
  std::optional<std::string> nvidia_dev_root;            // flags.nvidiaDevRoot
  std::optional<bool> gdrcopy_enabled;                   // flags.gdrcopyEnabled
  std::optional<bool> gds_enabled;                       // flags.gdsEnabled
  std::optional<bool> mofed_enabled;                     // flags.mofedEnabled
  std::optional<std::string> device_discovery_strategy;  // flags.deviceDiscoveryStrategy
  std::optional<bool> pass_device_specs;                 // flags.plugin.passDeviceSpecs
  std::optional<std::vector<std::string>>
      device_list_strategy;                          // flags.plugin.deviceListStrategy (one or a list)
  std::optional<std::string> device_id_strategy;     // flags.plugin.deviceIDStrategy
  std::optional<std::string> cdi_annotation_prefix;  // flags.plugin.cdiAnnotationPrefix
  std::optional<std::string> nvidia_ctk_path;        // flags.plugin.nvidiaCTKPath
  std::optional<std::string> container_driver_root;  // flags.plugin.containerDriverRoot
  std::optional<std::string> shared_devices_allocation_policy;  // flags.plugin.sharedDevicesAllocationPolicy
};

// The file's imex section, each key as the file spells it (nullopt: not there).
struct ImexConfig {
  std::optional<std::vector<uint32_t>> channel_ids;  // imex.channelIDs, checked by check_imex_channel_ids
  std::optional<bool> required;                      // imex.required
};

// IMEX channel IDs as NVIDIA's plugin allows them: none, or channel 0 alone. Error (the caller prefixes
// where the list came from): "must be [] or [0]; found [0 1]".
Result<std::vector<uint32_t>> check_imex_channel_ids(std::span<const int64_t> ids);

struct SharingConfig {
  std::optional<MigStrategy> mig_strategy;  // flags.migStrategy; nullopt when the file has none
  // mps when the file has an mps section, else time-slicing when it has a timeSlicing section.
  SharingStrategy strategy = SharingStrategy::none;
  std::vector<ReplicatedResource> resources;  // of that section, in file order
  // failRequestsGreaterThanOne of that section; nullopt when it does not say.
  std::optional<bool> fail_requests_greater_than_one;
  PluginFlags flags;
  ImexConfig imex;
  std::vector<std::string> warnings;  // what the file asks for that is ignored

  // The resource named `name` ("nvidia.com/gpu"); nullptr when the section does not replicate it.
  [[nodiscard]] const ReplicatedResource* find(std::string_view name) const;
};

// Parses the text of a configuration file (YAML or JSON). Errors name the key path and the problem:
// "sharing.timeSlicing: no resources", "version: unknown version \"v2\" (want v1)", or the YAML syntax
// error with its line and column.
Result<SharingConfig> parse_sharing_config(std::string_view text);

}  // namespace gpuctk::labels
