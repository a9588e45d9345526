#pragma once
// Per-node configs, as NVIDIA's config-manager picks them: a folder of named config files (a ConfigMap
// mounted; its "..data"-style entries and folders are not configs), the node label
// nvidia.com/device-plugin.config naming one, else a default name, else the fallback strategies in order:
//   named   the config called "default", when there is one
//   single  the only config, when there is exactly one
//   empty   no config file at all (the built-in defaults)
// A label or default naming a config the folder lacks is an error (NVIDIA's too); so is "no fallback
// matched". The chosen config's text is written (atomically, a regular file) to the plugin's
// --config-file, where the labels sidecar reads it, so both read the same bytes.
//
// The flags are NVIDIA config-manager's names and variables: --config-file-srcdir (CONFIG_FILE_SRCDIR),
// --node-name (NODE_NAME), --node-label (NODE_LABEL), --default-config (DEFAULT_CONFIG),
// --fallback-strategies (FALLBACK_STRATEGIES, comma list), --kubeconfig (KUBECONFIG: empty means the
// in-cluster service account).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/config.hpp"
#include "util/error.hpp"

namespace gpuctk::plugin {

enum class Fallback { named, single, empty };

struct NodeConfigOptions {
  std::string srcdir;  // "" : per-node configs are off (the plugin reads --config-file alone)
  std::string node_name;
  std::string node_label = "nvidia.com/device-plugin.config";
  std::string default_config;
  std::vector<Fallback> fallbacks;
  std::string kubeconfig;   // "" : in-cluster
  std::string destination;  // --config-file: where the chosen config is written ("" : not written)
  [[nodiscard]] bool enabled() const { return !srcdir.empty(); }
};

// The options from the flags and variables. Errors name the flag: "--fallback-strategies: unknown
// strategy \"x\" (want named, single or empty)", "--node-name: needed with --config-file-srcdir (NODE_NAME)".
Result<NodeConfigOptions> resolve_node_config_options(const Overrides& overrides);

// The config names in `srcdir` (regular files, or links to them, not starting with ".."), sorted. A folder
// of more than 256 entries is refused. Errors: "list <srcdir>: No such file or directory",
// "list <srcdir>: more than 256 entries".
Result<std::vector<std::string>> list_configs(const std::string& srcdir);

// Which config `label` (the node label's value; nullopt or "" when unset) selects among `available`:
// its name, or nullopt for the empty config. Errors as NVIDIA's config-manager words them (names quoted):
// "no configuration files available", "specified config \"x\" does not exist" (the label's or the
// default's), "no config was set, no default was provided, and all fallbacks failed".
Result<std::optional<std::string>> select_config(const NodeConfigOptions& options,
                                                 const std::vector<std::string>& available,
                                                 std::optional<std::string_view> label);

// Writes the text of config `name` of options.srcdir (a regular file, links followed: a ConfigMap's files
// are links into its "..data" folder; at most 1 MiB), or "" for the empty config (nullopt), to
// options.destination, atomically (util/file.hpp); returns whether the destination's bytes changed
// (false: nothing written). Errors: "--config-file: needed to write the chosen config",
// "read <srcdir>/<name>: not a regular file", "read <srcdir>/<name>: larger than 1048576 bytes",
// "write <destination>: ...".
Result<bool> write_chosen_config(const NodeConfigOptions& options, const std::optional<std::string>& name);

}  // namespace gpuctk::plugin
