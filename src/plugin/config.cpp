#include "plugin/config.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>

#include "cdi/names.hpp"
#include "discover/imex_channels.hpp"
#include "util/strings.hpp"

namespace gpuctk::plugin {

namespace {

enum class Kind { text, boolean, list };

// Every flag: NVIDIA's device plugin's names, aliases and variables (cmd/nvidia-device-plugin/main.go),
// then gpuctk's own. Names are without "--"; the first is the one Overrides keys by.
struct Flag {
  std::vector<std::string_view> names;
  std::vector<std::string_view> variables;
  Kind kind;
  std::string_view help;
};

const std::vector<Flag>& flags() {
  static const std::vector<Flag> table = {
      {{"mig-strategy"}, {"MIG_STRATEGY"}, Kind::text, "none | single | mixed (default none)"},
      {{"fail-on-init-error"},
       {"FAIL_ON_INIT_ERROR"},
       Kind::boolean,
       "exit when starting fails; false: serve nothing and wait (default true)"},
      {{"driver-root", "nvidia-driver-root"},
       {"NVIDIA_DRIVER_ROOT"},
       Kind::text,
       "the host's driver root (default /)"},
      {{"dev-root", "nvidia-dev-root"},
       {"NVIDIA_DEV_ROOT"},
       Kind::text,
       "the host's root of the device nodes, the device specs' host paths (default: the driver root)"},
      {{"pass-device-specs"},
       {"PASS_DEVICE_SPECS"},
       Kind::boolean,
       "answer Allocate with the device nodes too (default false)"},
      {{"device-list-strategy"},
       {"DEVICE_LIST_STRATEGY"},
       Kind::list,
       "envvar | volume-mounts | cdi-annotations | cdi-cri, one or several (default envvar)"},
      {{"device-id-strategy"}, {"DEVICE_ID_STRATEGY"}, Kind::text, "uuid | index (default uuid)"},
      {{"gdrcopy-enabled"}, {"GDRCOPY_ENABLED"}, Kind::boolean, "NVIDIA_GDRCOPY=enabled in every answer"},
      {{"gds-enabled"}, {"GDS_ENABLED"}, Kind::boolean, "NVIDIA_GDS=enabled in every answer"},
      {{"mofed-enabled"}, {"MOFED_ENABLED"}, Kind::boolean, "NVIDIA_MOFED=enabled in every answer"},
      {{"cdi-annotation-prefix"},
       {"CDI_ANNOTATION_PREFIX"},
       Kind::text,
       "the key prefix of CDI annotations (default cdi.k8s.io/)"},
      {{"nvidia-cdi-hook-path", "nvidia-ctk-path"},
       {"NVIDIA_CDI_HOOK_PATH", "NVIDIA_CTK_PATH"},
       Kind::text,
       "accepted and ignored: gpuctk-device-plugin writes no CDI spec (gpuctk cdi generate does)"},
      {{"container-driver-root", "driver-root-ctr-path"},
       {"DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"},
       Kind::text,
       "where this container sees the driver root; used when it exists (default /driver-root)"},
      {{"mps-root"}, {"MPS_ROOT"}, Kind::text, "the host's MPS root; required for sharing.mps"},
      {{"shared-devices-allocation-policy"},
       {"SHARED_DEVICES_ALLOCATION_POLICY"},
       Kind::text,
       "distributed | packed: how replicas and MIG devices are preferred (default distributed)"},
      {{"device-discovery-strategy"},
       {"DEVICE_DISCOVERY_STRATEGY"},
       Kind::text,
       "auto | nvml | proc (gpuctk's: no NVML, no health checks) (default auto)"},
      {{"cdi-feature-flags"},
       {"CDI_FEATURE_FLAGS"},
       Kind::list,
       "accepted and ignored (no CDI spec is written)"},
      {{"cdi-disable-hooks"},
       {"CDI_DISABLE_HOOKS"},
       Kind::list,
       "accepted and ignored (no CDI spec is written)"},
      {{"kubelet-socket"},
       {"KUBELET_SOCKET"},
       Kind::text,
       "the kubelet's registration socket; the plugins' sockets go beside it "
       "(default /var/lib/kubelet/device-plugins/kubelet.sock)"},
      {{"imex-channel-ids"},
       {"IMEX_CHANNEL_IDS"},
       Kind::list,
       "the IMEX channels in every answer: none or 0 (default none)"},
      {{"imex-required"},
       {"IMEX_REQUIRED"},
       Kind::boolean,
       "a missing IMEX channel stops the start; false: left out with a warning (default false)"},
      {{"config-file"}, {"CONFIG_FILE"}, Kind::text, "the device plugin's config file (YAML or JSON)"},
      // NVIDIA config-manager's (plugin/node_config.hpp): per-node configs; the chosen one is written to
      // --config-file.
      {{"config-file-srcdir"},
       {"CONFIG_FILE_SRCDIR"},
       Kind::text,
       "a folder of named configs (a ConfigMap mounted): the node's label picks the one written to "
       "--config-file (default none: --config-file alone)"},
      {{"node-name"}, {"NODE_NAME"}, Kind::text, "this node's name, whose label picks the config"},
      {{"node-label"},
       {"NODE_LABEL"},
       Kind::text,
       "the node label naming the config (default nvidia.com/device-plugin.config)"},
      {{"default-config"}, {"DEFAULT_CONFIG"}, Kind::text, "the config when the label is unset"},
      {{"fallback-strategies"},
       {"FALLBACK_STRATEGIES"},
       Kind::list,
       "named | single | empty, in order, when neither label nor default names a config"},
      {{"kubeconfig"},
       {"KUBECONFIG"},
       Kind::text,
       "the Kubernetes API's kubeconfig (default: the pod's service account)"},
      // gpuctk's own.
      {{"container-dev-root"},
       {"GPUCTK_CONTAINER_DEV_ROOT"},
       Kind::text,
       "where this container sees /dev, /proc and /sys for discovery (default /)"},
      {{"cdi-kind"},
       {"GPUCTK_CDI_KIND"},
       Kind::text,
       "the CDI kind of CDI answers, as gpuctk cdi generate names devices (default nvidia.com/gpu)"},
      {{"retry-interval"},
       {"GPUCTK_RETRY_INTERVAL"},
       Kind::text,
       "seconds (\"30\" or \"30s\") between tries of a start that failed with failOnInitError false "
       "(default 30)"},
  };
  return table;
}

const Flag* find_flag(std::string_view name) {
  for (const auto& flag : flags()) {
    if (std::ranges::find(flag.names, name) != flag.names.end()) {
      return &flag;
    }
  }
  return nullptr;
}

// Go's strconv.ParseBool, which the plugin's flag library uses for flags and variables alike.
std::optional<bool> parse_bool(std::string_view text) {
  for (const auto yes : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (text == yes) {
      return true;
    }
  }
  for (const auto no : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (text == no) {
      return false;
    }
  }
  return std::nullopt;
}

void give(Overrides& out, const Flag& flag, std::string value, std::string origin) {
  auto [it, fresh] = out.try_emplace(std::string(flag.names.front()), Given{value, origin});
  if (!fresh && flag.kind == Kind::list) {
    it->second.value += "," + value;  // repeated list flags add up
  } else if (!fresh) {
    it->second = Given{std::move(value), std::move(origin)};  // the last one counts
  }
}

// A value from the command line, the environment or the file, and where it came from.
template <typename T>
struct Setting {
  T value;
  std::string origin;  // "" for the default
};

class Resolver {
 public:
  Resolver(const Overrides& overrides, const labels::SharingConfig& file)
      : m_overrides(overrides), m_file(file) {}

  // The text of flag `name`: the override, else the file's (at `key`), else `fallback`.
  Setting<std::string> text(std::string_view name, const std::optional<std::string>& in_file,
                            std::string_view key, std::string fallback) const {
    if (const auto it = m_overrides.find(name); it != m_overrides.end()) {
      return {it->second.value, it->second.origin};
    }
    if (in_file) {
      return {*in_file, std::string(key)};
    }
    return {std::move(fallback), ""};
  }

  Result<bool> boolean(std::string_view name, std::optional<bool> in_file, bool fallback) const {
    if (const auto it = m_overrides.find(name); it != m_overrides.end()) {
      const auto parsed = parse_bool(it->second.value);
      if (!parsed) {
        return fail(it->second.origin + ": " + quote(it->second.value) + " is not a boolean");
      }
      return *parsed;
    }
    return in_file.value_or(fallback);
  }

  [[nodiscard]] const labels::SharingConfig& file() const { return m_file; }

 private:
  const Overrides& m_overrides;
  const labels::SharingConfig& m_file;
};

std::string where(const std::string& origin, std::string_view fallback) {
  return origin.empty() ? std::string(fallback) : origin;
}

Result<ListStrategies> list_strategies(const Setting<std::string>& setting) {
  const std::string at = where(setting.origin, "--device-list-strategy");
  ListStrategies out;
  const auto names = split(setting.value, ',');
  if (setting.value.empty()) {
    return fail(at + ": no strategy (want envvar, volume-mounts, cdi-annotations or cdi-cri)");
  }
  for (const auto name : names) {
    // One row per strategy (NVIDIA's DeviceListStrategy* constants).
    if (name == "envvar") {
      out.envvar = true;
    } else if (name == "volume-mounts") {
      out.volume_mounts = true;
    } else if (name == "cdi-annotations") {
      out.cdi_annotations = true;
    } else if (name == "cdi-cri") {
      out.cdi_cri = true;
    } else {
      return fail(at + ": invalid strategy " + quote(name) +
                  " (want envvar, volume-mounts, cdi-annotations or cdi-cri)");
    }
  }
  return out;
}

Result<void> resolve_enums(const Resolver& r, Config& c) {
  const auto& f = r.file().flags;
  const auto mig = r.text("mig-strategy",
                          r.file().mig_strategy
                              ? std::optional<std::string>(labels::mig_strategy_name(*r.file().mig_strategy))
                              : std::nullopt,
                          "flags.migStrategy", "none");
  if (auto parsed = labels::parse_mig_strategy(mig.value); parsed) {
    c.mig_strategy = *parsed;
  } else {
    return fail_with(where(mig.origin, "--mig-strategy"), parsed.error());
  }
  const auto id = r.text("device-id-strategy", f.device_id_strategy, "flags.plugin.deviceIDStrategy", "uuid");
  if (id.value != "uuid" && id.value != "index") {
    return fail(id.origin + ": invalid strategy " + quote(id.value) + " (want uuid or index)");
  }
  c.id = id.value == "uuid" ? IdStrategy::uuid : IdStrategy::index;
  const auto policy = r.text("shared-devices-allocation-policy", f.shared_devices_allocation_policy,
                             "flags.plugin.sharedDevicesAllocationPolicy", "distributed");
  if (policy.value != "distributed" && policy.value != "packed") {
    return fail(policy.origin + ": invalid policy " + quote(policy.value) + " (want distributed or packed)");
  }
  c.shared_policy = policy.value == "packed" ? AllocationPolicy::packed : AllocationPolicy::distributed;
  const auto discovery = r.text("device-discovery-strategy", f.device_discovery_strategy,
                                "flags.deviceDiscoveryStrategy", "auto");
  // One row per strategy: NVIDIA's auto and nvml, and gpuctk's proc (its tegra is not supported).
  if (discovery.value == "auto") {
    c.discovery = discover::Mode::automatic;
  } else if (discovery.value == "nvml") {
    c.discovery = discover::Mode::nvml;
  } else if (discovery.value == "proc") {
    c.discovery = discover::Mode::proc;
  } else {
    return fail(discovery.origin + ": " + quote(discovery.value) +
                " is not supported by gpuctk-device-plugin (want auto, nvml or proc)");
  }
  const std::optional<std::string> lists =
      f.device_list_strategy ? std::optional<std::string>(join(*f.device_list_strategy, ",")) : std::nullopt;
  GPUCTK_TRY_ASSIGN(c.list, list_strategies(r.text("device-list-strategy", lists,
                                                   "flags.plugin.deviceListStrategy", "envvar")));
  const auto kind = r.text("cdi-kind", std::nullopt, "", "nvidia.com/gpu");
  const auto [vendor, klass] = cdi::split_kind(kind.value);
  for (const auto& ok : {cdi::check_vendor(vendor), cdi::check_class(klass)}) {
    if (!ok) {
      return fail(kind.origin + ": " + quote(kind.value) +
                  " is not a CDI kind (vendor/class): " + ok.error().message);
    }
  }
  c.cdi_kind = kind.value;
  return {};
}

// The most seconds --retry-interval takes: an hour (a retry more rarely is no retry).
constexpr uint64_t k_max_retry_seconds = 3600;

Result<std::chrono::seconds> retry_interval(const Setting<std::string>& setting) {
  std::string_view text = setting.value;
  if (text.ends_with('s')) {
    text.remove_suffix(1);
  }
  const auto seconds = parse_unsigned(text);
  if (!seconds || *seconds == 0 || *seconds > k_max_retry_seconds) {
    return fail(setting.origin + ": " + quote(setting.value) + " is not a number of seconds from 1 to " +
                std::to_string(k_max_retry_seconds));
  }
  return std::chrono::seconds(*seconds);
}

Result<void> resolve_sharing(const Resolver& r, const Overrides& overrides, Config& c) {
  const auto& file = r.file();
  c.sharing = file.strategy;
  c.replicated = file.resources;
  const bool mps = c.sharing == labels::SharingStrategy::mps;
  c.fail_requests_greater_than_one = file.fail_requests_greater_than_one.value_or(mps);
  if (!mps) {
    return {};
  }
  if (c.mig_strategy == labels::MigStrategy::mixed) {
    const auto it = overrides.find("mig-strategy");
    return fail((it != overrides.end() ? it->second.origin : "flags.migStrategy") +
                ": mixed is not supported with MPS (sharing.mps)");
  }
  if (c.mps_root.empty()) {
    return fail(
        "sharing.mps: MPS needs flags.mpsRoot (--mps-root, MPS_ROOT): the host directory of the MPS "
        "daemon's pipes");
  }
  return {};
}

// "0,1" (a list flag's values joined) as integers; "" is none. Error: "--imex-channel-ids: \"x\" is not an
// integer".
Result<std::vector<int64_t>> integers(const Given& given) {
  std::vector<int64_t> out;
  if (given.value.empty()) {
    return out;
  }
  for (const auto item : split(given.value, ',')) {
    const std::string_view text = trim(item);
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
      return fail(given.origin + ": " + quote(item) + " is not an integer");
    }
    out.push_back(value);
  }
  return out;
}

// IMEX: the channel IDs from the flag or variable, else the file's; then NVIDIA's check of them.
Result<void> resolve_imex(const Resolver& r, const Overrides& overrides, Config& c) {
  const labels::ImexConfig& file = r.file().imex;
  if (const auto it = overrides.find("imex-channel-ids"); it != overrides.end()) {
    GPUCTK_TRY_ASSIGN(const auto ids, integers(it->second));
    auto checked = labels::check_imex_channel_ids(ids);
    if (!checked) {
      return fail_with(it->second.origin, checked.error());
    }
    c.imex_channel_ids = std::move(*checked);
  } else {
    c.imex_channel_ids = file.channel_ids.value_or(std::vector<uint32_t>{});
  }
  GPUCTK_TRY_ASSIGN(c.imex_required, r.boolean("imex-required", file.required, false));
  return {};
}

}  // namespace

Result<void> check_imex_channels(Config& config, const std::string& dev_root,
                                 std::vector<std::string>& warnings) {
  std::vector<uint32_t> present;
  for (const uint32_t id : config.imex_channel_ids) {
    const auto node = discover::imex_channel_node(dev_root, id);
    if (node) {
      present.push_back(id);
    } else if (config.imex_required) {
      return fail(node.error().message + " (IMEX channels are required)");
    } else {
      warnings.push_back(node.error().message + ": left out of the answers (IMEX channels are not required)");
    }
  }
  config.imex_channel_ids = std::move(present);
  return {};
}

Result<Arguments> parse_arguments(std::span<const std::string_view> args,
                                  const std::function<const char*(const char*)>& getenv) {
  Arguments out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") {
      out.action = Action::help;
      continue;
    }
    if (arg == "--version" || arg == "-v") {
      out.action = Action::version;
      continue;
    }
    if (!arg.starts_with("-")) {
      return fail("unexpected argument " + quote(arg) + " (see --help)");
    }
    arg.remove_prefix(arg.starts_with("--") ? 2 : 1);
    const auto equals = arg.find('=');
    const std::string_view name = arg.substr(0, equals);
    const Flag* flag = find_flag(name);
    if (flag == nullptr) {
      return fail("unknown flag --" + std::string(name) + " (see --help)");
    }
    const std::string origin = "--" + std::string(name);
    if (equals != std::string_view::npos) {
      give(out.overrides, *flag, std::string(arg.substr(equals + 1)), origin);
    } else if (flag->kind == Kind::boolean) {
      give(out.overrides, *flag, "true", origin);
    } else if (i + 1 < args.size()) {
      give(out.overrides, *flag, std::string(args[++i]), origin);
    } else {
      return fail(origin + ": needs a value");
    }
  }
  for (const auto& flag : flags()) {
    if (out.overrides.contains(flag.names.front())) {
      continue;
    }
    for (const auto variable : flag.variables) {
      if (const char* value = getenv(std::string(variable).c_str()); value != nullptr) {
        give(out.overrides, flag, value, std::string(variable));
        break;
      }
    }
  }
  for (const auto& [name, given] : out.overrides) {
    if (find_flag(name)->kind == Kind::boolean && !parse_bool(given.value)) {
      return fail(given.origin + ": " + quote(given.value) + " is not a boolean");
    }
  }
  return out;
}

Result<Config> resolve_config(const Overrides& overrides, std::optional<std::string_view> file_text) {
  labels::SharingConfig file;
  if (file_text) {
    GPUCTK_TRY_ASSIGN(file, labels::parse_sharing_config(*file_text));
  }
  Config c;
  c.warnings = file.warnings;
  const Resolver r(overrides, file);
  const auto& f = file.flags;
  GPUCTK_TRY(resolve_enums(r, c));
  GPUCTK_TRY_ASSIGN(c.fail_on_init_error, r.boolean("fail-on-init-error", f.fail_on_init_error, true));
  GPUCTK_TRY_ASSIGN(c.pass_device_specs, r.boolean("pass-device-specs", f.pass_device_specs, false));
  GPUCTK_TRY_ASSIGN(c.gdrcopy, r.boolean("gdrcopy-enabled", f.gdrcopy_enabled, false));
  GPUCTK_TRY_ASSIGN(c.gds, r.boolean("gds-enabled", f.gds_enabled, false));
  GPUCTK_TRY_ASSIGN(c.mofed, r.boolean("mofed-enabled", f.mofed_enabled, false));
  c.driver_root = r.text("driver-root", f.nvidia_driver_root, "flags.nvidiaDriverRoot", "/").value;
  // NVIDIA's default: the dev root is the driver root (a driver container has its nodes there).
  c.dev_root = r.text("dev-root", f.nvidia_dev_root, "flags.nvidiaDevRoot", "").value;
  if (c.dev_root.empty()) {
    c.dev_root = c.driver_root;
  }
  c.container_driver_root = r.text("container-driver-root", f.container_driver_root,
                                   "flags.plugin.containerDriverRoot", "/driver-root")
                                .value;
  c.container_dev_root = r.text("container-dev-root", std::nullopt, "", "/").value;
  c.cdi_annotation_prefix = r.text("cdi-annotation-prefix", f.cdi_annotation_prefix,
                                   "flags.plugin.cdiAnnotationPrefix", "cdi.k8s.io/")
                                .value;
  c.mps_root = r.text("mps-root", f.mps_root, "flags.mpsRoot", "").value;
  c.kubelet_socket = r.text("kubelet-socket", std::nullopt, "", c.kubelet_socket).value;
  c.config_file = r.text("config-file", std::nullopt, "", "").value;
  GPUCTK_TRY_ASSIGN(c.retry_interval, retry_interval(r.text("retry-interval", std::nullopt, "", "30")));
  for (const auto name : {"nvidia-cdi-hook-path", "cdi-feature-flags", "cdi-disable-hooks"}) {
    if (const auto it = overrides.find(name); it != overrides.end()) {
      c.warnings.push_back(it->second.origin +
                           ": ignored: gpuctk-device-plugin writes no CDI spec (gpuctk cdi "
                           "generate does)");
    }
  }
  if (f.nvidia_ctk_path && !overrides.contains("nvidia-cdi-hook-path")) {
    c.warnings.emplace_back(
        "flags.plugin.nvidiaCTKPath: ignored: gpuctk-device-plugin writes no CDI spec (gpuctk cdi generate "
        "does)");
  }
  GPUCTK_TRY(resolve_imex(r, overrides, c));
  GPUCTK_TRY(resolve_sharing(r, overrides, c));
  return c;
}

std::string usage() {
  std::string text =
      "Usage: gpuctk-device-plugin [flags]\n"
      "The kubelet's device plugin (API v1beta1) on gpuctk's inventory: NVIDIA's device plugin's flags,\n"
      "variables and config file. A flag beats its variable, which beats the config file.\n\nFlags:\n";
  for (const auto& flag : flags()) {
    std::vector<std::string> names;
    for (const auto name : flag.names) {
      names.push_back("--" + std::string(name));
    }
    std::vector<std::string> variables(flag.variables.begin(), flag.variables.end());
    text += "  " + join(names, ", ") + (flag.kind == Kind::boolean ? "" : " VALUE") + "  [" +
            join(variables, ", ") + "]\n      " + std::string(flag.help) + "\n";
  }
  return text + "  -h, --help\n  -v, --version\n";
}

discover::DiscoverOptions discover_options(const Config& config) {
  discover::DiscoverOptions options;
  struct stat st {};
  options.driver_root = ::stat(config.container_driver_root.c_str(), &st) == 0 && S_ISDIR(st.st_mode)
                            ? config.container_driver_root
                            : config.driver_root;
  options.dev_root = config.container_dev_root;
  options.mode = config.discovery;
  return options;
}

}  // namespace gpuctk::plugin
