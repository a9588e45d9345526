// The device plugin's config file as labels read it: what it selects, and every refusal the plugin
// makes, with the key path.
#include "labels/sharing_config.hpp"

#include <gtest/gtest.h>

#include "util/file.hpp"

namespace gpuctk::labels {
namespace {

SharingConfig parse_ok(std::string_view text) {
  auto config = parse_sharing_config(text);
  EXPECT_TRUE(config) << config.error().message;
  return config.value_or(SharingConfig{});
}

std::string parse_error(std::string_view text) {
  auto config = parse_sharing_config(text);
  EXPECT_FALSE(config) << text;
  return config ? std::string() : config.error().message;
}

TEST(SharingConfig, TimeSlicingOfTheDocumentedExample) {
  const auto text = read_file(std::string(GPUCTK_SOURCE_DIR) + "/tests/data/labels/time-slicing.yaml");
  ASSERT_TRUE(text);
  const auto config = parse_ok(*text);
  EXPECT_EQ(config.mig_strategy, MigStrategy::none);
  EXPECT_EQ(config.strategy, SharingStrategy::time_slicing);
  ASSERT_EQ(config.resources.size(), 1u);
  EXPECT_EQ(config.resources[0].name, "nvidia.com/gpu");
  EXPECT_EQ(config.resources[0].replicas, 4u);
  EXPECT_FALSE(config.resources[0].renamed);
  EXPECT_NE(config.find("nvidia.com/gpu"), nullptr);
  EXPECT_EQ(config.find("nvidia.com/mig-1g.5gb"), nullptr);
  EXPECT_TRUE(config.warnings.empty());
}

TEST(SharingConfig, RenameByDefaultMarksEveryResourceAndNamesGetThePrefix) {
  const auto config = parse_ok(R"(
sharing:
  timeSlicing:
    renameByDefault: true
    resources:
      - {name: gpu, replicas: 2}
      - {name: nvidia.com/mig-1g.5gb, replicas: 3}
)");
  ASSERT_EQ(config.resources.size(), 2u);
  EXPECT_EQ(config.resources[0].name, "nvidia.com/gpu");
  EXPECT_EQ(config.resources[1].name, "nvidia.com/mig-1g.5gb");
  EXPECT_TRUE(config.resources[0].renamed);
  EXPECT_TRUE(config.resources[1].renamed);
  EXPECT_EQ(config.mig_strategy, std::nullopt);
}

TEST(SharingConfig, MpsIsInForceWhenPresentAndJsonIsRead) {
  const auto config = parse_ok(
      R"({"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "gpu", "replicas": 2}]},
          "mps": {"resources": [{"name": "gpu", "replicas": 10}]}}})");
  EXPECT_EQ(config.strategy, SharingStrategy::mps);
  ASSERT_EQ(config.resources.size(), 1u);
  EXPECT_EQ(config.resources[0].replicas, 10u);
  EXPECT_EQ(config.warnings,
            std::vector<std::string>{"sharing.timeSlicing: ignored, sharing.mps is in force"});
}

TEST(SharingConfig, EmptyAndSharingLessFilesShareNothing) {
  EXPECT_EQ(parse_ok("").strategy, SharingStrategy::none);
  const auto config =
      parse_ok("version: v1\nflags: {migStrategy: single, plugin: {passDeviceSpecs: true}}\n");
  EXPECT_EQ(config.strategy, SharingStrategy::none);
  EXPECT_EQ(config.mig_strategy, MigStrategy::single);
  EXPECT_TRUE(config.resources.empty());
}

TEST(SharingConfig, DeviceSelectionAndRenameAreCheckedThenIgnoredWithAWarning) {
  const auto config = parse_ok(R"(
sharing:
  timeSlicing:
    resources:
      - name: gpu
        replicas: 2
        devices: [0, "1", "0:1", GPU-8b5a1e2c-6f0e-4d55-9b3a-2f4c8d7e6a10, MIG-GPU-8b5a1e2c-6f0e-4d55-9b3a-2f4c8d7e6a10/3/0]
        rename: my-gpu
)");
  EXPECT_EQ(
      config.warnings,
      (std::vector<std::string>{
          "sharing.timeSlicing.resources[0].devices: only \"all\" is supported, as in the device plugin; "
          "the 2 replicas apply to every device",
          "sharing.timeSlicing.resources[0].rename: ignored, as in the device plugin (renameByDefault "
          "decides)"}));
}

TEST(SharingConfig, RefusesWhatThePluginRefuses) {
  EXPECT_EQ(parse_error("version: v2\n"), "version: unknown version \"v2\" (want v1)");
  EXPECT_EQ(parse_error("flags: {migStrategy: some}\n"),
            "flags.migStrategy: unknown MIG strategy \"some\" (want none, single or mixed)");
  EXPECT_EQ(parse_error("sharing: {timeSlicing: {}}\n"), "sharing.timeSlicing: no resources");
  EXPECT_EQ(parse_error("sharing: {mps: {resources: []}}\n"), "sharing.mps: no resources");
  EXPECT_EQ(parse_error("sharing: {timeSlicing: {resources: [{replicas: 2}]}}\n"),
            "sharing.timeSlicing.resources[0]: no name");
  EXPECT_EQ(parse_error("sharing: {timeSlicing: {resources: [{name: gpu}]}}\n"),
            "sharing.timeSlicing.resources[0]: no replicas");
  EXPECT_EQ(parse_error("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 1}]}}\n"),
            "sharing.timeSlicing.resources[0].replicas: must be at least 2, got 1");
  EXPECT_EQ(parse_error("sharing: {timeSlicing: {resources: [{name: gpu, replicas: \"4\"}]}}\n"),
            "sharing.timeSlicing.resources[0].replicas: expected an integer");
  EXPECT_EQ(
      parse_error("sharing: {timeSlicing: {resources: [{name: GPU, replicas: 2}]}}\n"),
      "sharing.timeSlicing.resources[0].name: \"nvidia.com/GPU\" is not a valid resource name (lower-case "
      "letters, digits, '-' and '.' after nvidia.com/)");
  EXPECT_EQ(parse_error("sharing: {timeSlicing: {resources: [{name: " + std::string(60, 'g') +
                        ", replicas: 2}]}}\n"),
            "sharing.timeSlicing.resources[0].name: \"nvidia.com/" + std::string(60, 'g') +
                "\" is longer than 63 characters");
  EXPECT_EQ(parse_error("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2, devices: some}]}}\n"),
            "sharing.timeSlicing.resources[0].devices: \"some\" is neither \"all\", a count nor a list");
  EXPECT_EQ(parse_error("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2, devices: 0}]}}\n"),
            "sharing.timeSlicing.resources[0].devices: a count of devices must be at least 1, got 0");
  EXPECT_EQ(
      parse_error("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2, devices: [GPU-1]}]}}\n"),
      "sharing.timeSlicing.resources[0].devices[0]: expected a GPU index, a MIG index (gpu:mig) or a GPU or "
      "MIG UUID");
  EXPECT_EQ(parse_error("sharing: {timeSlicing: {renameByDefault: yes please, resources: []}}\n"),
            "sharing.timeSlicing.renameByDefault: expected true or false");
  EXPECT_EQ(parse_error("- a list\n"), "expected a mapping at the top level");
  EXPECT_EQ(parse_error("sharing: {timeSlicing: [\n"),
            "YAML syntax error at line 2, column 1: end of sequence flow not found");
}

// imex, as NVIDIA's plugin reads it (api/config/v1/imex.go): channelIDs [] or [0], required.
TEST(SharingConfig, ReadsAndChecksTheImexSection) {
  const auto config = parse_ok("imex: {channelIDs: [0], required: true}\n");
  EXPECT_EQ(config.imex.channel_ids, std::vector<uint32_t>{0});
  EXPECT_EQ(config.imex.required, true);
  EXPECT_TRUE(config.warnings.empty());
  const auto empty = parse_ok("imex:\n  channelIDs: []\n");
  EXPECT_EQ(empty.imex.channel_ids, std::vector<uint32_t>{});
  EXPECT_EQ(empty.imex.required, std::nullopt);
  const auto none = parse_ok("imex:\n");
  EXPECT_EQ(none.imex.channel_ids, std::nullopt);
  EXPECT_EQ(none.imex.required, std::nullopt);
  for (const auto& [in, want] : std::vector<std::pair<std::string, std::string>>{
           {"imex: {channelIDs: [1]}\n", "imex.channelIDs: must be [] or [0]; found [1]"},
           {"imex: {channelIDs: [0, 0]}\n", "imex.channelIDs: must be [] or [0]; found [0 0]"},
           {"imex: {channelIDs: [-1]}\n", "imex.channelIDs: must be [] or [0]; found [-1]"},
           {"imex: {channelIDs: 0}\n", "imex.channelIDs: expected a list of integers"},
           {"imex: {channelIDs: [channel0]}\n", "imex.channelIDs[0]: expected an integer"},
           {"imex: {required: maybe}\n", "imex.required: expected true or false"},
           {"imex: [0]\n", "imex: expected a mapping"},
       }) {
    EXPECT_EQ(parse_error(in), want) << in;
  }
}

TEST(SharingConfig, ImexChannelIdsAreNoneOrChannelZero) {
  EXPECT_EQ(check_imex_channel_ids(std::vector<int64_t>{}).value_or(std::vector<uint32_t>{9}),
            std::vector<uint32_t>{});
  EXPECT_EQ(check_imex_channel_ids(std::vector<int64_t>{0}).value_or(std::vector<uint32_t>{}),
            std::vector<uint32_t>{0});
  const auto refused = check_imex_channel_ids(std::vector<int64_t>{2, 0});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "must be [] or [0]; found [2 0]");
}

TEST(SharingConfig, ATwiceListedResourceCountsOnceAsItsFirstEntry) {
  const auto config =
      parse_ok("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2}, {name: gpu, replicas: 3}]}}\n");
  ASSERT_NE(config.find("nvidia.com/gpu"), nullptr);
  EXPECT_EQ(config.find("nvidia.com/gpu")->replicas, 2u);
  EXPECT_EQ(config.warnings,
            std::vector<std::string>{"sharing.timeSlicing.resources[1].name: \"nvidia.com/gpu\" is "
                                     "listed twice; the first entry counts"});
}

TEST(SharingConfig, StrategyNames) {
  EXPECT_EQ(sharing_strategy_name(SharingStrategy::time_slicing), "time-slicing");
  EXPECT_EQ(sharing_strategy_name(SharingStrategy::mps), "mps");
  EXPECT_EQ(sharing_strategy_name(SharingStrategy::none), "none");
  EXPECT_EQ(mig_strategy_name(MigStrategy::mixed), "mixed");
  EXPECT_EQ(parse_mig_strategy("single"), MigStrategy::single);
}

TEST(SharingConfig, ReadsThePluginsFlagsAsTheFileSpellsThem) {
  const auto config = parse_ok(R"(
version: v1
flags:
  migStrategy: mixed
  failOnInitError: false
  nvidiaDriverRoot: /run/nvidia/driver
  nvidiaDevRoot: /
  mpsRoot: /run/nvidia/mps
  gdrcopyEnabled: true
  gdsEnabled: false
  mofedEnabled: true
  deviceDiscoveryStrategy: nvml
  gfd: {oneshot: true}
  plugin:
    passDeviceSpecs: true
    deviceListStrategy: [envvar, cdi-cri]
    deviceIDStrategy: index
    cdiAnnotationPrefix: cdi.example.com/
    nvidiaCTKPath: /usr/bin/nvidia-ctk
    containerDriverRoot: /driver-root
    sharedDevicesAllocationPolicy: packed
sharing:
  timeSlicing:
    failRequestsGreaterThanOne: true
    resources: [{name: gpu, replicas: 2}]
)");
  const PluginFlags& f = config.flags;
  EXPECT_EQ(f.fail_on_init_error, false);
  EXPECT_EQ(f.nvidia_driver_root, "/run/nvidia/driver");
  EXPECT_EQ(f.nvidia_dev_root, "/");
  EXPECT_EQ(f.mps_root, "/run/nvidia/mps");
  EXPECT_EQ(f.gdrcopy_enabled, true);
  EXPECT_EQ(f.gds_enabled, false);
  EXPECT_EQ(f.mofed_enabled, true);
  EXPECT_EQ(f.device_discovery_strategy, "nvml");
  EXPECT_EQ(f.pass_device_specs, true);
  EXPECT_EQ(f.device_list_strategy, (std::vector<std::string>{"envvar", "cdi-cri"}));
  EXPECT_EQ(f.device_id_strategy, "index");
  EXPECT_EQ(f.cdi_annotation_prefix, "cdi.example.com/");
  EXPECT_EQ(f.nvidia_ctk_path, "/usr/bin/nvidia-ctk");
  EXPECT_EQ(f.container_driver_root, "/driver-root");
  EXPECT_EQ(f.shared_devices_allocation_policy, "packed");
  EXPECT_EQ(config.fail_requests_greater_than_one, true);
  EXPECT_TRUE(config.warnings.empty());

  // One strategy as a plain string; flags the file leaves out stay unset.
  const auto single = parse_ok("flags: {plugin: {deviceListStrategy: volume-mounts}}\n");
  EXPECT_EQ(single.flags.device_list_strategy, std::vector<std::string>{"volume-mounts"});
  EXPECT_EQ(single.flags.pass_device_specs, std::nullopt);
  EXPECT_EQ(single.flags.fail_on_init_error, std::nullopt);
  EXPECT_EQ(single.fail_requests_greater_than_one, std::nullopt);
}

TEST(SharingConfig, RefusesPluginFlagsOfTheWrongTypeNamingTheKey) {
  EXPECT_EQ(parse_error("flags: {failOnInitError: sometimes}\n"),
            "flags.failOnInitError: expected true or false");
  EXPECT_EQ(parse_error("flags: {plugin: {passDeviceSpecs: 1}}\n"),
            "flags.plugin.passDeviceSpecs: expected true or false");
  EXPECT_EQ(parse_error("flags: {plugin: {deviceListStrategy: {a: b}}}\n"),
            "flags.plugin.deviceListStrategy: expected a string or a list of strings");
  EXPECT_EQ(parse_error("flags: {plugin: {deviceListStrategy: [envvar, [x]]}}\n"),
            "flags.plugin.deviceListStrategy[1]: expected a string");
  EXPECT_EQ(parse_error("flags: {plugin: {deviceIDStrategy: [uuid]}}\n"),
            "flags.plugin.deviceIDStrategy: expected a string");
  EXPECT_EQ(parse_error("flags: {plugin: [passDeviceSpecs]}\n"), "flags.plugin: expected a mapping");
  EXPECT_EQ(
      parse_error(
          "sharing: {mps: {failRequestsGreaterThanOne: no way, resources: [{name: gpu, replicas: 2}]}}\n"),
      "sharing.mps.failRequestsGreaterThanOne: expected true or false");
}

TEST(SharingConfig, CustomResourceNamesAreIgnoredWithAWarningAsThePluginIgnoresThem) {
  const auto config = parse_ok("resources: {gpus: [{pattern: \"*A100*\", name: a100}]}\n");
  EXPECT_EQ(
      config.warnings,
      std::vector<std::string>{"resources: ignored, as in the device plugin (custom resource names are not "
                               "supported; GPUs are nvidia.com/gpu, MIG devices follow flags.migStrategy)"});
}

}  // namespace
}  // namespace gpuctk::labels
