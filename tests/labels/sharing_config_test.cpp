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

}  // namespace
}  // namespace gpuctk::labels
