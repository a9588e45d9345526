#pragma once
// gpuctk-device-plugin's configuration: NVIDIA's device plugin's flags, environment variables and config
// file (the same names, defaults and precedence: a command-line flag, else its environment variable, else
// the file, else the default), plus gpuctk's few own flags. The config file is read by the one parser
// `gpuctk labels --config-file` uses (labels/sharing_config.hpp).
//
// Every refusal is one line naming where the value came from, the file's key path or the flag or variable:
//   flags.plugin.deviceListStrategy: invalid strategy "env" (want envvar, volume-mounts, cdi-annotations or
//   cdi-cri)
//   --device-id-strategy: invalid strategy "serial" (want uuid or index)
//   sharing.mps: MPS needs flags.mpsRoot (--mps-root, MPS_ROOT): the host directory of the MPS daemon's pipes

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "discover/discover.hpp"
#include "labels/sharing_config.hpp"
#include "util/error.hpp"

namespace gpuctk::plugin {

// How Allocate hands the devices over (flags.plugin.deviceListStrategy); several at once are allowed.
struct ListStrategies {
  bool envvar = false;           // NVIDIA_VISIBLE_DEVICES=<ids>
  bool volume_mounts = false;    // /dev/null on /var/run/nvidia-container-devices/<id>
  bool cdi_annotations = false;  // cdi.k8s.io/<plugin>_<response id>=<CDI names>
  bool cdi_cri = false;          // the CRI's CDI devices (the kubelet's CDIDevices)
  [[nodiscard]] bool any_cdi() const { return cdi_annotations || cdi_cri; }
  [[nodiscard]] bool only_cdi() const { return !envvar && !volume_mounts; }
  bool operator==(const ListStrategies&) const = default;
};

// What names a device in the answer (flags.plugin.deviceIDStrategy): its UUID or its index ("0", "1:0").
enum class IdStrategy { uuid, index };

// How replicas and MIG devices are picked for a preferred allocation
// (flags.plugin.sharedDevicesAllocationPolicy): spread over GPUs, or packed onto few.
enum class AllocationPolicy { distributed, packed };

struct Config {
  labels::MigStrategy mig_strategy = labels::MigStrategy::none;
  bool fail_on_init_error = true;  // false: on a failed start, wait (serve nothing) instead of exiting
  // The host's driver root and dev root (nvidiaDriverRoot, nvidiaDevRoot; the dev root defaults to the
  // driver root): device specs' host paths are below the dev root.
  std::string driver_root = "/";
  std::string dev_root = "/";
  // Where discovery reads the driver (containerDriverRoot, where a pod mounts the host's driver root;
  // used when it exists, else driver_root) and /dev, /proc, /sys (gpuctk's --container-dev-root).
  std::string container_driver_root = "/driver-root";
  std::string container_dev_root = "/";
  discover::Mode discovery = discover::Mode::automatic;  // deviceDiscoveryStrategy: auto, nvml (gpuctk: proc)
  bool pass_device_specs = false;
  ListStrategies list{.envvar = true};
  IdStrategy id = IdStrategy::uuid;
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  // The CDI kind of the devices named in CDI answers: the spec `gpuctk cdi generate` writes (gpuctk's
  // --cdi-kind; NVIDIA's plugin writes a spec of its own, k8s.device-plugin.nvidia.com/gpu).
  std::string cdi_kind = "nvidia.com/gpu";
  bool gdrcopy = false;  // NVIDIA_GDRCOPY=enabled in every answer
  bool gds = false;      // NVIDIA_GDS=enabled
  bool mofed = false;    // NVIDIA_MOFED=enabled
  std::string mps_root;  // the host's MPS root (pipe and shm directories); required for MPS
  AllocationPolicy shared_policy = AllocationPolicy::distributed;
  labels::SharingStrategy sharing = labels::SharingStrategy::none;
  std::vector<labels::ReplicatedResource> replicated;
  // A request of more than one replica is refused (time-slicing: default false; MPS: default true).
  bool fail_requests_greater_than_one = false;
  // IMEX channels (imex.channelIDs, --imex-channel-ids, IMEX_CHANNEL_IDS): [] or [0], as NVIDIA's plugin
  // allows; each is answered as its device node /dev/nvidia-caps-imex-channels/channel<id> (allocate.hpp).
  // imex_required (imex.required, --imex-required, IMEX_REQUIRED): a channel whose node is missing at the
  // start is an error; otherwise it is left out of the answers with a warning.
  std::vector<uint32_t> imex_channel_ids;
  bool imex_required = false;
  std::string kubelet_socket = "/var/lib/kubelet/device-plugins/kubelet.sock";  // plugins' sockets beside it
  std::string config_file;                                                      // "" when none
  // How often a start that failed with failOnInitError false is tried again (gpuctk's --retry-interval;
  // NVIDIA's plugin retries a failed plugin start every 30 s).
  std::chrono::seconds retry_interval{30};
  std::vector<std::string> warnings;  // what is accepted but ignored
};

// The flags and environment variables as given (argv and the environment; the file not yet read):
// flag name ("device-list-strategy") -> value and where it came from ("--device-list-strategy",
// "DEVICE_LIST_STRATEGY"). A list flag's values are joined with ','.
struct Given {
  std::string value;
  std::string origin;
};
using Overrides = std::map<std::string, Given, std::less<>>;

// What the command line asks for besides a configuration.
enum class Action { run, help, version };

struct Arguments {
  Action action = Action::run;
  Overrides overrides;
};

// Parses argv (without argv[0]): `--name value`, `--name=value`, a bare boolean flag, `-h`/`--help`,
// `--version`; then each flag not on the command line from its environment variables (`getenv`).
// Errors: "unknown flag --x", "--mig-strategy: needs a value", "PASS_DEVICE_SPECS: \"maybe\" is not a
// boolean". k_flags (config.cpp) is the table of names.
Result<Arguments> parse_arguments(std::span<const std::string_view> args,
                                  const std::function<const char*(const char*)>& getenv);

// The configuration: the overrides over the file's text (nullopt: no file) over the defaults, checked.
// Warnings of the file's parser are kept in Config::warnings.
Result<Config> resolve_config(const Overrides& overrides, std::optional<std::string_view> file_text);

// Where the daemons discover under `config`: the driver at containerDriverRoot when that folder exists (a
// pod mounts the host's driver root there), else at driver_root; /dev, /proc and /sys below
// container_dev_root; the discovery strategy.
discover::DiscoverOptions discover_options(const Config& config);

// The daemon's check of the IMEX channels at its start, as NVIDIA's plugin makes it: each channel of
// config.imex_channel_ids whose character device <dev_root>/dev/nvidia-caps-imex-channels/channel<id> is
// missing (or not a character device) is an error when config.imex_required, else removed from
// config.imex_channel_ids with a warning. `dev_root` is where this process sees the host's /dev
// (Config::container_dev_root). Error: "IMEX channel 0: /dev/nvidia-caps-imex-channels/channel0 does not
// exist (IMEX channels are required)"; warning: "IMEX channel 0: ... does not exist: left out of the
// answers (IMEX channels are not required)".
Result<void> check_imex_channels(Config& config, const std::string& dev_root,
                                 std::vector<std::string>& warnings);

// The usage text of --help: every flag with its variables and default.
std::string usage();

}  // namespace gpuctk::plugin
