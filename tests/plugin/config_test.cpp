// gpuctk-device-plugin's configuration: NVIDIA's defaults, flags, variables and file, their precedence, and
// every refusal with the name of where the value came from.
#include "plugin/config.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::plugin {
namespace {

using Env = std::map<std::string, std::string>;

Result<Arguments> parse(std::vector<std::string_view> args, const Env& env = {}) {
  return parse_arguments(args, [&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

Config resolve_ok(std::vector<std::string_view> args, std::optional<std::string_view> file,
                  const Env& env = {}) {
  auto arguments = parse(std::move(args), env);
  EXPECT_TRUE(arguments) << arguments.error().message;
  auto config = resolve_config(arguments ? arguments->overrides : Overrides{}, file);
  EXPECT_TRUE(config) << config.error().message;
  return config.value_or(Config{});
}

std::string resolve_error(std::vector<std::string_view> args, std::optional<std::string_view> file,
                          const Env& env = {}) {
  auto arguments = parse(std::move(args), env);
  if (!arguments) {
    return arguments.error().message;
  }
  auto config = resolve_config(arguments->overrides, file);
  EXPECT_FALSE(config);
  return config ? std::string() : config.error().message;
}

TEST(PluginConfig, DefaultsAreNvidiasDevicePlugins) {
  const Config c = resolve_ok({}, std::nullopt);
  EXPECT_EQ(c.mig_strategy, labels::MigStrategy::none);
  EXPECT_TRUE(c.fail_on_init_error);
  EXPECT_EQ(c.driver_root, "/");
  EXPECT_EQ(c.dev_root, "/");
  EXPECT_EQ(c.container_driver_root, "/driver-root");
  EXPECT_EQ(c.container_dev_root, "/");
  EXPECT_EQ(c.discovery, discover::Mode::automatic);
  EXPECT_FALSE(c.pass_device_specs);
  EXPECT_EQ(c.list, ListStrategies{.envvar = true});
  EXPECT_EQ(c.id, IdStrategy::uuid);
  EXPECT_EQ(c.cdi_annotation_prefix, "cdi.k8s.io/");
  EXPECT_EQ(c.cdi_kind, "nvidia.com/gpu");
  EXPECT_EQ(c.shared_policy, AllocationPolicy::distributed);
  EXPECT_EQ(c.sharing, labels::SharingStrategy::none);
  EXPECT_FALSE(c.fail_requests_greater_than_one);
  EXPECT_EQ(c.kubelet_socket, "/var/lib/kubelet/device-plugins/kubelet.sock");
  EXPECT_EQ(c.retry_interval, std::chrono::seconds(30));
  EXPECT_TRUE(c.warnings.empty());
}

TEST(PluginConfig, RetryIntervalIsSecondsWithOrWithoutTheirUnit) {
  EXPECT_EQ(resolve_ok({"--retry-interval=2"}, std::nullopt).retry_interval, std::chrono::seconds(2));
  EXPECT_EQ(resolve_ok({}, std::nullopt, {{"GPUCTK_RETRY_INTERVAL", "90s"}}).retry_interval,
            std::chrono::seconds(90));
  EXPECT_EQ(resolve_error({"--retry-interval", "0"}, std::nullopt),
            "--retry-interval: \"0\" is not a number of seconds from 1 to 3600");
  EXPECT_EQ(resolve_error({}, std::nullopt, {{"GPUCTK_RETRY_INTERVAL", "1m"}}),
            "GPUCTK_RETRY_INTERVAL: \"1m\" is not a number of seconds from 1 to 3600");
}

TEST(PluginConfig, AFlagBeatsItsVariableWhichBeatsTheFile) {
  const std::string_view file =
      "flags: {migStrategy: mixed, plugin: {deviceIDStrategy: index, passDeviceSpecs: true}}\n";
  EXPECT_EQ(resolve_ok({}, file).id, IdStrategy::index);
  EXPECT_EQ(resolve_ok({}, file, {{"DEVICE_ID_STRATEGY", "uuid"}}).id, IdStrategy::uuid);
  const Config c =
      resolve_ok({"--device-id-strategy=index", "--pass-device-specs=false", "--mig-strategy", "none"}, file,
                 {{"DEVICE_ID_STRATEGY", "uuid"}, {"MIG_STRATEGY", "single"}});
  EXPECT_EQ(c.id, IdStrategy::index);
  EXPECT_FALSE(c.pass_device_specs);
  EXPECT_EQ(c.mig_strategy, labels::MigStrategy::none);
  EXPECT_EQ(resolve_ok({}, file, {{"MIG_STRATEGY", "single"}}).mig_strategy, labels::MigStrategy::single);
  EXPECT_EQ(resolve_ok({}, file).mig_strategy, labels::MigStrategy::mixed);
}

TEST(PluginConfig, ParsesEveryFlagFormAndAliasesAndListsAddUp) {
  auto args = parse({"--pass-device-specs", "-device-list-strategy", "envvar,cdi-cri",
                     "--device-list-strategy=volume-mounts", "--nvidia-driver-root", "/run/nvidia/driver",
                     "--driver-root-ctr-path=/host", "--kubelet-socket", "/tmp/k/kubelet.sock"});
  ASSERT_TRUE(args) << args.error().message;
  EXPECT_EQ(args->action, Action::run);
  const auto& o = args->overrides;
  EXPECT_EQ(o.at("pass-device-specs").value, "true");
  EXPECT_EQ(o.at("device-list-strategy").value, "envvar,cdi-cri,volume-mounts");
  EXPECT_EQ(o.at("driver-root").value, "/run/nvidia/driver");
  EXPECT_EQ(o.at("driver-root").origin, "--nvidia-driver-root");
  EXPECT_EQ(o.at("container-driver-root").value, "/host");
  auto config = resolve_config(o, std::nullopt);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(
      config->list,
      (ListStrategies{.envvar = true, .volume_mounts = true, .cdi_annotations = false, .cdi_cri = true}));
  EXPECT_TRUE(config->pass_device_specs);
  EXPECT_EQ(config->driver_root, "/run/nvidia/driver");
  EXPECT_EQ(config->dev_root, "/run/nvidia/driver");  // the dev root defaults to the driver root
  EXPECT_EQ(config->container_driver_root, "/host");
  EXPECT_EQ(config->kubelet_socket, "/tmp/k/kubelet.sock");
  EXPECT_EQ(parse({"--help"})->action, Action::help);
  EXPECT_EQ(parse({"--version"})->action, Action::version);
}

TEST(PluginConfig, VariablesAreReadForFlagsNotGivenWithTheirFirstNameWinning) {
  const Config c = resolve_ok({}, std::nullopt,
                              {{"PASS_DEVICE_SPECS", "True"},
                               {"DEVICE_LIST_STRATEGY", "cdi-annotations,cdi-cri"},
                               {"NVIDIA_DEV_ROOT", "/run/nvidia/driver"},
                               {"CONTAINER_DRIVER_ROOT", "/b"},
                               {"DRIVER_ROOT_CTR_PATH", "/a"},
                               {"MPS_ROOT", "/run/nvidia/mps"},
                               {"GPUCTK_CDI_KIND", "example.com/gpu"},
                               {"GPUCTK_CONTAINER_DEV_ROOT", "/host"}});
  EXPECT_TRUE(c.pass_device_specs);
  EXPECT_EQ(c.list, (ListStrategies{
                        .envvar = false, .volume_mounts = false, .cdi_annotations = true, .cdi_cri = true}));
  EXPECT_EQ(c.driver_root, "/");
  EXPECT_EQ(c.dev_root, "/run/nvidia/driver");
  EXPECT_EQ(c.container_driver_root, "/a");
  EXPECT_EQ(c.mps_root, "/run/nvidia/mps");
  EXPECT_EQ(c.cdi_kind, "example.com/gpu");
  EXPECT_EQ(c.container_dev_root, "/host");
}

TEST(PluginConfig, SharingComesFromTheFileWithNvidiasDefaultsForLargeRequests) {
  const Config ts = resolve_ok({}, "sharing: {timeSlicing: {resources: [{name: gpu, replicas: 4}]}}\n");
  EXPECT_EQ(ts.sharing, labels::SharingStrategy::time_slicing);
  ASSERT_EQ(ts.replicated.size(), 1u);
  EXPECT_EQ(ts.replicated[0].replicas, 4u);
  EXPECT_FALSE(ts.fail_requests_greater_than_one);
  const Config mps =
      resolve_ok({"--mps-root=/run/nvidia/mps"}, "sharing: {mps: {resources: [{name: gpu, replicas: 2}]}}\n");
  EXPECT_EQ(mps.sharing, labels::SharingStrategy::mps);
  EXPECT_TRUE(mps.fail_requests_greater_than_one);  // NVIDIA's default for MPS
  const Config relaxed = resolve_ok({},
                                    "flags: {mpsRoot: /m}\nsharing: {mps: {failRequestsGreaterThanOne: "
                                    "false, resources: [{name: gpu, replicas: 2}]}}\n");
  EXPECT_FALSE(relaxed.fail_requests_greater_than_one);
  EXPECT_EQ(relaxed.mps_root, "/m");
}

TEST(PluginConfig, RefusalsNameTheKeyFlagOrVariable) {
  EXPECT_EQ(resolve_error({}, "flags: {plugin: {deviceListStrategy: [envvar, env]}}\n"),
            "flags.plugin.deviceListStrategy: invalid strategy \"env\" (want envvar, volume-mounts, "
            "cdi-annotations "
            "or cdi-cri)");
  EXPECT_EQ(resolve_error({"--device-id-strategy", "serial"}, std::nullopt),
            "--device-id-strategy: invalid strategy \"serial\" (want uuid or index)");
  EXPECT_EQ(resolve_error({}, std::nullopt, {{"MIG_STRATEGY", "some"}}),
            "MIG_STRATEGY: unknown MIG strategy \"some\" (want none, single or mixed)");
  EXPECT_EQ(
      resolve_error({}, "flags: {plugin: {sharedDevicesAllocationPolicy: spread}}\n"),
      "flags.plugin.sharedDevicesAllocationPolicy: invalid policy \"spread\" (want distributed or packed)");
  EXPECT_EQ(resolve_error({"--device-discovery-strategy=tegra"}, std::nullopt),
            "--device-discovery-strategy: \"tegra\" is not supported by gpuctk-device-plugin (want auto, "
            "nvml or proc)");
  EXPECT_EQ(
      resolve_error({}, "sharing: {mps: {resources: [{name: gpu, replicas: 2}]}}\n"),
      "sharing.mps: MPS needs flags.mpsRoot (--mps-root, MPS_ROOT): the host directory of the MPS daemon's "
      "pipes");
  EXPECT_EQ(resolve_error({},
                          "flags: {migStrategy: mixed, mpsRoot: /m}\nsharing: {mps: {resources: [{name: gpu, "
                          "replicas: 2}]}}\n"),
            "flags.migStrategy: mixed is not supported with MPS (sharing.mps)");
  EXPECT_EQ(resolve_error({"--mig-strategy=mixed"},
                          "flags: {mpsRoot: /m}\nsharing: {mps: {resources: [{name: gpu, replicas: 2}]}}\n"),
            "--mig-strategy: mixed is not supported with MPS (sharing.mps)");
  EXPECT_EQ(resolve_error({"--cdi-kind=nvidia.com"}, std::nullopt),
            "--cdi-kind: \"nvidia.com\" is not a CDI kind (vendor/class): empty vendor");
  EXPECT_EQ(resolve_error({}, std::nullopt, {{"DEVICE_LIST_STRATEGY", ""}}),
            "DEVICE_LIST_STRATEGY: no strategy (want envvar, volume-mounts, cdi-annotations or cdi-cri)");
  EXPECT_EQ(resolve_error({}, "flags: {plugin: {passDeviceSpecs: maybe}}\n"),
            "flags.plugin.passDeviceSpecs: expected true or false");
}

TEST(PluginConfig, CommandLineRefusals) {
  EXPECT_EQ(resolve_error({"--colour"}, std::nullopt), "unknown flag --colour (see --help)");
  EXPECT_EQ(resolve_error({"--mig-strategy"}, std::nullopt), "--mig-strategy: needs a value");
  EXPECT_EQ(resolve_error({"extra"}, std::nullopt), "unexpected argument \"extra\" (see --help)");
  EXPECT_EQ(resolve_error({"--pass-device-specs=yes"}, std::nullopt),
            "--pass-device-specs: \"yes\" is not a boolean");
  EXPECT_EQ(resolve_error({}, std::nullopt, {{"FAIL_ON_INIT_ERROR", "nope"}}),
            "FAIL_ON_INIT_ERROR: \"nope\" is not a boolean");
}

TEST(PluginConfig, SpecGenerationFlagsAreAcceptedAndIgnoredWithAWarning) {
  const Config c =
      resolve_ok({"--nvidia-ctk-path=/usr/bin/nvidia-ctk"}, std::nullopt, {{"CDI_FEATURE_FLAGS", "a"}});
  EXPECT_EQ(
      c.warnings,
      (std::vector<std::string>{
          "--nvidia-ctk-path: ignored: gpuctk-device-plugin writes no CDI spec (gpuctk cdi generate does)",
          "CDI_FEATURE_FLAGS: ignored: gpuctk-device-plugin writes no CDI spec (gpuctk cdi generate does)"}));
  EXPECT_EQ(resolve_ok({}, "flags: {plugin: {nvidiaCTKPath: /x}}\n").warnings,
            std::vector<std::string>{"flags.plugin.nvidiaCTKPath: ignored: gpuctk-device-plugin writes no "
                                     "CDI spec (gpuctk cdi generate does)"});
}

// IMEX as NVIDIA's plugin takes it: --imex-channel-ids / IMEX_CHANNEL_IDS / imex.channelIDs, [] or [0].
TEST(PluginConfig, ImexChannelsFromTheFlagItsVariableOrTheFile) {
  const Config none = resolve_ok({}, std::nullopt);
  EXPECT_TRUE(none.imex_channel_ids.empty());
  EXPECT_FALSE(none.imex_required);
  const std::string_view file = "imex: {channelIDs: [0], required: true}\n";
  const Config from_file = resolve_ok({}, file);
  EXPECT_EQ(from_file.imex_channel_ids, std::vector<uint32_t>{0});
  EXPECT_TRUE(from_file.imex_required);
  const Config from_flags = resolve_ok({"--imex-channel-ids", "0", "--imex-required"}, std::nullopt);
  EXPECT_EQ(from_flags.imex_channel_ids, std::vector<uint32_t>{0});
  EXPECT_TRUE(from_flags.imex_required);
  // A flag beats its variable, which beats the file; an empty list is none.
  const Config flag_over_file =
      resolve_ok({"--imex-channel-ids="}, file, {{"IMEX_CHANNEL_IDS", "1"}, {"IMEX_REQUIRED", "false"}});
  EXPECT_TRUE(flag_over_file.imex_channel_ids.empty());
  EXPECT_FALSE(flag_over_file.imex_required);
  EXPECT_EQ(resolve_ok({}, std::nullopt, {{"IMEX_CHANNEL_IDS", " 0 "}}).imex_channel_ids,
            std::vector<uint32_t>{0});
  EXPECT_TRUE(resolve_ok({}, file, {{"IMEX_CHANNEL_IDS", ""}}).imex_channel_ids.empty());
}

TEST(PluginConfig, ImexRefusalsNameTheFlagVariableOrKey) {
  EXPECT_EQ(resolve_error({"--imex-channel-ids", "1"}, std::nullopt),
            "--imex-channel-ids: must be [] or [0]; found [1]");
  // Repeated list flags add up, as NVIDIA's IntSlice does.
  EXPECT_EQ(resolve_error({"--imex-channel-ids=0", "--imex-channel-ids=0"}, std::nullopt),
            "--imex-channel-ids: must be [] or [0]; found [0 0]");
  EXPECT_EQ(resolve_error({}, std::nullopt, {{"IMEX_CHANNEL_IDS", "0,x"}}),
            "IMEX_CHANNEL_IDS: \"x\" is not an integer");
  EXPECT_EQ(resolve_error({}, std::nullopt, {{"IMEX_CHANNEL_IDS", "-1"}}),
            "IMEX_CHANNEL_IDS: must be [] or [0]; found [-1]");
  EXPECT_EQ(resolve_error({}, std::nullopt, {{"IMEX_REQUIRED", "sure"}}),
            "IMEX_REQUIRED: \"sure\" is not a boolean");
  EXPECT_EQ(resolve_error({}, "imex: {channelIDs: [0, 1]}\n"),
            "imex.channelIDs: must be [] or [0]; found [0 1]");
  EXPECT_EQ(resolve_error({}, "imex: {required: yes}\n"), "imex.required: expected true or false");
}

// The start's check: a channel without its node is an error when required, else left out with a warning.
class PluginImexCheckTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(m_root.path().empty()); }
  [[nodiscard]] std::string channel0() const {
    return m_root.path() + "/dev/nvidia-caps-imex-channels/channel0";
  }
  test::TempDir m_root{"gpuctk-plugin-imex"};
};

TEST_F(PluginImexCheckTest, AMissingChannelIsLeftOutWithAWarningUnlessRequired) {
  Config config;
  config.imex_channel_ids = {0};
  std::vector<std::string> warnings;
  ASSERT_TRUE(check_imex_channels(config, m_root.path(), warnings));
  EXPECT_TRUE(config.imex_channel_ids.empty());
  EXPECT_EQ(warnings, std::vector<std::string>{"IMEX channel 0: " + channel0() +
                                               " does not exist: left out of the answers (IMEX channels "
                                               "are not required)"});
  config.imex_channel_ids = {0};
  config.imex_required = true;
  warnings.clear();
  const auto checked = check_imex_channels(config, m_root.path(), warnings);
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().message,
            "IMEX channel 0: " + channel0() + " does not exist (IMEX channels are required)");
  EXPECT_TRUE(warnings.empty());
}

TEST_F(PluginImexCheckTest, AFileInPlaceOfTheNodeIsNoChannel) {
  std::filesystem::create_directories(m_root.path() + "/dev/nvidia-caps-imex-channels");
  ASSERT_TRUE(write_file_atomic(channel0(), "", 0644));
  Config config;
  config.imex_channel_ids = {0};
  config.imex_required = true;
  std::vector<std::string> warnings;
  const auto checked = check_imex_channels(config, m_root.path(), warnings);
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().message,
            "IMEX channel 0: " + channel0() + ": not a device node (IMEX channels are required)");
}

TEST_F(PluginImexCheckTest, APresentChannelStays) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "device nodes need root to mknod";
  }
  std::filesystem::create_directories(m_root.path() + "/dev/nvidia-caps-imex-channels");
  ASSERT_EQ(::mknod(channel0().c_str(), S_IFCHR | 0666, makedev(234, 0)), 0);
  Config config;
  config.imex_channel_ids = {0};
  config.imex_required = true;
  std::vector<std::string> warnings;
  ASSERT_TRUE(check_imex_channels(config, m_root.path(), warnings));
  EXPECT_EQ(config.imex_channel_ids, std::vector<uint32_t>{0});
  EXPECT_TRUE(warnings.empty());
}

TEST(PluginConfig, UsageListsEveryFlagWithItsVariables) {
  const std::string text = usage();
  EXPECT_NE(text.find("  --device-list-strategy VALUE  [DEVICE_LIST_STRATEGY]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  --pass-device-specs  [PASS_DEVICE_SPECS]\n"), std::string::npos) << text;
  for (const char* line :
       {"  --imex-channel-ids VALUE  [IMEX_CHANNEL_IDS]\n", "  --imex-required  [IMEX_REQUIRED]\n",
        "  --config-file-srcdir VALUE  [CONFIG_FILE_SRCDIR]\n", "  --node-name VALUE  [NODE_NAME]\n",
        "  --node-label VALUE  [NODE_LABEL]\n", "  --default-config VALUE  [DEFAULT_CONFIG]\n",
        "  --fallback-strategies VALUE  [FALLBACK_STRATEGIES]\n", "  --kubeconfig VALUE  [KUBECONFIG]\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
  EXPECT_NE(text.find("  --container-driver-root, --driver-root-ctr-path VALUE  [DRIVER_ROOT_CTR_PATH, "
                      "CONTAINER_DRIVER_ROOT]\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace gpuctk::plugin
