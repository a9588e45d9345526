// The Allocate answers, each compared exactly with what NVIDIA's device plugin answers for the same
// request (internal/plugin/server.go: getAllocateResponse, updateResponseForCDI, updateResponseForMPS,
// updateResponseForDeviceListEnvVar, updateResponseForDeviceMounts, apiDeviceSpecs; cmd/mps-control-daemon
// for the MPS limits), and every deviceListStrategy x sharing x MIG strategy combination held to
// tests/golden/plugin/allocate.txt.
#include "plugin/allocate.hpp"

#include <gtest/gtest.h>

#include "support/golden_file.hpp"
#include "test_host.hpp"
#include "util/strings.hpp"

namespace gpuctk::plugin {
namespace {

using namespace test;

constexpr std::string_view k_response = "0f0e0d0c-0b0a-4908-8706-050403020100";

// A configuration from a config file's text, as the daemon makes it.
Config configured(std::string_view file) {
  auto config = resolve_config({}, file);
  EXPECT_TRUE(config) << config.error().message;
  return config.value_or(Config{});
}

// The answer for `ids` of `resource` under `config_text` on `inventory`, as describe() prints it, or
// "error: ..." (a resource or allocation refusal).
std::string answer(std::string_view config_text, std::string_view resource, std::vector<std::string> ids,
                   const discover::Inventory& inventory = two_gpus()) {
  const Config config = configured(config_text);
  std::vector<std::string> warnings;
  auto resources = build_resources(inventory, config, {}, warnings);
  if (!resources) {
    return "error: " + resources.error().message;
  }
  for (const auto& r : *resources) {
    if (r.name == resource) {
      auto out = Allocator(r, config, inventory.control_nodes).answer(ids, k_response);
      return out ? describe(*out) : "error: " + out.error().message;
    }
  }
  return "no resource " + std::string(resource);
}

const std::string g0 = k_gpu0;
const std::string g1 = k_gpu1;

TEST(PluginAllocate, EnvvarNamesTheUuidsInRequestOrder) {
  EXPECT_EQ(answer("", "nvidia.com/gpu", {g0}), "env NVIDIA_VISIBLE_DEVICES=" + g0 + "\n");
  EXPECT_EQ(answer("", "nvidia.com/gpu", {g1, g0}), "env NVIDIA_VISIBLE_DEVICES=" + g1 + "," + g0 + "\n");
}

TEST(PluginAllocate, IndexStrategyNamesIndexesAndMigDevicesGpuColonMig) {
  EXPECT_EQ(answer("flags: {plugin: {deviceIDStrategy: index}}", "nvidia.com/gpu", {g1, g0}),
            "env NVIDIA_VISIBLE_DEVICES=1,0\n");
  EXPECT_EQ(answer("flags: {migStrategy: mixed, plugin: {deviceIDStrategy: index}}", "nvidia.com/mig-3g.20gb",
                   {k_mig11}),
            "env NVIDIA_VISIBLE_DEVICES=1:1\n");
  EXPECT_EQ(answer("flags: {migStrategy: mixed}", "nvidia.com/mig-3g.20gb", {k_mig11}),
            "env NVIDIA_VISIBLE_DEVICES=" + std::string(k_mig11) + "\n");
}

TEST(PluginAllocate, VolumeMountsPointTheVariableAtTheMarkersDirectory) {
  EXPECT_EQ(answer("flags: {plugin: {deviceListStrategy: volume-mounts}}", "nvidia.com/gpu", {g0, g1}),
            "env NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices\n"
            "mount /dev/null -> /var/run/nvidia-container-devices/" +
                g0 +
                "\n"
                "mount /dev/null -> /var/run/nvidia-container-devices/" +
                g1 + "\n");
  // With envvar too, the markers' directory wins the variable, as in NVIDIA's plugin.
  EXPECT_EQ(answer("flags: {plugin: {deviceListStrategy: [envvar, volume-mounts], deviceIDStrategy: index}}",
                   "nvidia.com/gpu", {g0}),
            "env NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices\n"
            "mount /dev/null -> /var/run/nvidia-container-devices/0\n");
}

TEST(PluginAllocate, CdiAnnotationsAloneAnswerOneAnnotationAndNoVariable) {
  EXPECT_EQ(
      answer("flags: {plugin: {deviceListStrategy: cdi-annotations}}", "nvidia.com/gpu", {g0, g1}),
      "annotation cdi.k8s.io/nvidia-device-plugin_0f0e0d0c-0b0a-4908-8706-050403020100=nvidia.com/gpu=" + g0 +
          ",nvidia.com/gpu=" + g1 + "\n");
  EXPECT_EQ(
      answer("flags: {plugin: {deviceListStrategy: cdi-annotations, cdiAnnotationPrefix: cdi.example.com/}}",
             "nvidia.com/gpu", {g0}),
      "annotation cdi.example.com/nvidia-device-plugin_0f0e0d0c-0b0a-4908-8706-050403020100=nvidia.com/gpu=" +
          g0 + "\n");
}

TEST(PluginAllocate, CdiCriAnswersCdiDevicesAndEnvvarBesideItAddsTheVariable) {
  EXPECT_EQ(answer("flags: {plugin: {deviceListStrategy: cdi-cri, deviceIDStrategy: index}}",
                   "nvidia.com/gpu", {g1}),
            "cdi nvidia.com/gpu=1\n");
  EXPECT_EQ(answer("flags: {plugin: {deviceListStrategy: [envvar, cdi-cri]}}", "nvidia.com/gpu", {g1}),
            "env NVIDIA_VISIBLE_DEVICES=" + g1 + "\ncdi nvidia.com/gpu=" + g1 + "\n");
}

TEST(PluginAllocate, DeviceSpecsAreTheControlNodesFoundThenTheDevicesNodesOnlyWithANonCdiStrategy) {
  const std::string file =
      "flags: {nvidiaDriverRoot: /run/nvidia/driver, migStrategy: mixed, plugin: "
      "{passDeviceSpecs: true, deviceListStrategy: [envvar, cdi-cri]}}";
  EXPECT_EQ(answer(file, "nvidia.com/mig-3g.20gb", {k_mig10}),
            "env NVIDIA_VISIBLE_DEVICES=" + std::string(k_mig10) +
                "\n"
                "device /run/nvidia/driver/dev/nvidiactl -> /dev/nvidiactl rw\n"
                "device /run/nvidia/driver/dev/nvidia-uvm -> /dev/nvidia-uvm rw\n"
                "device /run/nvidia/driver/dev/nvidia-uvm-tools -> /dev/nvidia-uvm-tools rw\n"
                "device /run/nvidia/driver/dev/nvidia1 -> /dev/nvidia1 rw\n"
                "device /run/nvidia/driver/dev/nvidia-caps/nvidia-cap12 -> /dev/nvidia-caps/nvidia-cap12 rw\n"
                "device /run/nvidia/driver/dev/nvidia-caps/nvidia-cap13 -> /dev/nvidia-caps/nvidia-cap13 rw\n"
                "cdi nvidia.com/gpu=" +
                std::string(k_mig10) + "\n");
  EXPECT_EQ(
      answer("flags: {plugin: {passDeviceSpecs: true, deviceListStrategy: cdi-cri}}", "nvidia.com/gpu", {g0}),
      "cdi nvidia.com/gpu=" + g0 + "\n");
}

// IMEX channels in every answer, as NVIDIA's plugin gives them: the variable with envvar, a marker mount
// with volume-mounts, the CDI name with a CDI strategy, the node with passDeviceSpecs.
TEST(PluginAllocate, ImexChannelsAreAnsweredByEveryStrategyAsNvidiasPlugin) {
  const std::string imex = "imex: {channelIDs: [0]}\n";
  EXPECT_EQ(answer(imex + "flags: {plugin: {deviceIDStrategy: index}}", "nvidia.com/gpu", {g1}),
            "env NVIDIA_IMEX_CHANNELS=0\nenv NVIDIA_VISIBLE_DEVICES=1\n");
  EXPECT_EQ(answer(imex + "flags: {plugin: {deviceListStrategy: volume-mounts, deviceIDStrategy: index}}",
                   "nvidia.com/gpu", {g0}),
            "env NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices\n"
            "mount /dev/null -> /var/run/nvidia-container-devices/0\n"
            "mount /dev/null -> /var/run/nvidia-container-devices/imex/0\n");
  EXPECT_EQ(
      answer(imex + "flags: {plugin: {deviceListStrategy: [cdi-cri, cdi-annotations], deviceIDStrategy: "
                    "index}}",
             "nvidia.com/gpu", {g0, g1}),
      "annotation cdi.k8s.io/nvidia-device-plugin_0f0e0d0c-0b0a-4908-8706-050403020100=nvidia.com/gpu=0,"
      "nvidia.com/gpu=1,nvidia.com/imex-channel=0\n"
      "cdi nvidia.com/gpu=0\ncdi nvidia.com/gpu=1\ncdi nvidia.com/imex-channel=0\n");
  EXPECT_EQ(answer(imex + "flags: {nvidiaDevRoot: /host, plugin: {passDeviceSpecs: true, deviceIDStrategy: "
                          "index}}",
                   "nvidia.com/gpu", {g0}),
            "env NVIDIA_IMEX_CHANNELS=0\nenv NVIDIA_VISIBLE_DEVICES=0\n"
            "device /host/dev/nvidiactl -> /dev/nvidiactl rw\n"
            "device /host/dev/nvidia-uvm -> /dev/nvidia-uvm rw\n"
            "device /host/dev/nvidia-uvm-tools -> /dev/nvidia-uvm-tools rw\n"
            "device /host/dev/nvidia0 -> /dev/nvidia0 rw\n"
            "device /host/dev/nvidia-caps-imex-channels/channel0 -> /dev/nvidia-caps-imex-channels/channel0 "
            "rw\n");
  // The CDI name's vendor is the CDI kind's.
  Config config =
      configured(imex + "flags: {plugin: {deviceListStrategy: cdi-cri, deviceIDStrategy: index}}");
  config.cdi_kind = "example.com/device";
  std::vector<std::string> warnings;
  const auto resources = build_resources(two_gpus(), config, {}, warnings);
  ASSERT_TRUE(resources) << resources.error().message;
  const auto out = Allocator(resources->front(), config, {}).answer(std::vector<std::string>{g0}, k_response);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(describe(*out), "cdi example.com/device=0\ncdi example.com/imex-channel=0\n");
  // No channels (the default, or [] in the file): nothing of IMEX.
  EXPECT_EQ(
      answer("imex: {channelIDs: []}\nflags: {plugin: {deviceIDStrategy: index}}", "nvidia.com/gpu", {g0}),
      "env NVIDIA_VISIBLE_DEVICES=0\n");
}

TEST(PluginAllocate, ReplicasFoldIntoTheirGpuAndLargeRequestsAreRefusedWhenAsked) {
  const std::string sharing = "sharing: {timeSlicing: {resources: [{name: gpu, replicas: 4}]}}";
  EXPECT_EQ(answer(sharing, "nvidia.com/gpu", {g0 + "::3", g0 + "::1", g1 + "::0"}),
            "env NVIDIA_VISIBLE_DEVICES=" + g0 + "," + g1 + "\n");
  EXPECT_EQ(
      answer(
          "sharing: {timeSlicing: {failRequestsGreaterThanOne: true, resources: [{name: gpu, replicas: 4}]}}",
          "nvidia.com/gpu", {g0 + "::3", g0 + "::1"}),
      "error: invalid allocation request for \"nvidia.com/gpu\": maximum request size for shared resources "
      "is "
      "1; found 2");
  EXPECT_EQ(answer(sharing, "nvidia.com/gpu", {g0}),
            "error: invalid allocation request for \"nvidia.com/gpu\": unknown device: \"" + g0 + "\"");
  EXPECT_EQ(answer(sharing, "nvidia.com/gpu", {}),
            "error: invalid allocation request for \"nvidia.com/gpu\": no devices");
}

// The limits are the MPS daemon's (mps_control_test.cpp): no CUDA_MPS_ACTIVE_THREAD_PERCENTAGE or
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT a workload could override, as NVIDIA answers.
TEST(PluginAllocate, MpsAnswersThePipeDirectoryAndItsMountsOnly) {
  EXPECT_EQ(
      answer("flags: {mpsRoot: /run/nvidia/mps}\nsharing: {mps: {renameByDefault: true, resources: [{name: "
             "gpu, replicas: 4}]}}",
             "nvidia.com/gpu.shared", {g1 + "::2"}),
      "env CUDA_MPS_PIPE_DIRECTORY=/mps/nvidia.com/gpu.shared/pipe\n"
      "env NVIDIA_VISIBLE_DEVICES=" +
          g1 +
          "\n"
          "mount /run/nvidia/mps/nvidia.com/gpu.shared/pipe -> /mps/nvidia.com/gpu.shared/pipe\n"
          "mount /run/nvidia/mps/shm -> /dev/shm\n");
  // Two GPUs in one container.
  EXPECT_EQ(answer("flags: {mpsRoot: /m, plugin: {deviceListStrategy: cdi-cri}}\nsharing: {mps: "
                   "{failRequestsGreaterThanOne: false, resources: [{name: gpu, replicas: 2}]}}",
                   "nvidia.com/gpu", {g1 + "::0", g0 + "::1"}),
            "env CUDA_MPS_PIPE_DIRECTORY=/mps/nvidia.com/gpu/pipe\n"
            "mount /m/nvidia.com/gpu/pipe -> /mps/nvidia.com/gpu/pipe\n"
            "mount /m/shm -> /dev/shm\n"
            "cdi nvidia.com/gpu=" +
                g1 + "\ncdi nvidia.com/gpu=" + g0 + "\n");
}

TEST(PluginAllocate, GdrcopyGdsAndMofedVariables) {
  EXPECT_EQ(
      answer("flags: {gdrcopyEnabled: true, gdsEnabled: true, mofedEnabled: true, plugin: "
             "{deviceListStrategy: cdi-annotations}}",
             "nvidia.com/gpu", {g0}),
      "env NVIDIA_GDRCOPY=enabled\nenv NVIDIA_GDS=enabled\nenv NVIDIA_MOFED=enabled\n"
      "annotation cdi.k8s.io/nvidia-device-plugin_0f0e0d0c-0b0a-4908-8706-050403020100=nvidia.com/gpu=" +
          g0 + "\n");
}

TEST(PluginAllocate, TheCdiKindIsTheGeneratedSpecs) {
  Config config = configured("flags: {plugin: {deviceListStrategy: cdi-cri}}");
  config.cdi_kind = "example.com/gpu";
  std::vector<std::string> warnings;
  auto resources = build_resources(two_gpus(), config, {}, warnings);
  ASSERT_TRUE(resources);
  auto out = Allocator(resources->front(), config, {}).answer(std::vector<std::string>{g0}, k_response);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->cdi_devices, std::vector<std::string>{"example.com/gpu=" + g0});
}

// Every combination: MIG strategy (single on a host whose GPUs are all in MIG mode) x sharing x the
// device list strategies, each resource's first device and, where it has several, its first and last.
TEST(PluginAllocate, EveryStrategySharingAndMigCombinationMatchesTheGoldenAnswers) {
  const std::pair<const char*, const char*> strategies[] = {
      {"envvar", "deviceListStrategy: envvar"},
      {"volume-mounts", "deviceListStrategy: volume-mounts"},
      {"cdi-annotations", "deviceListStrategy: cdi-annotations"},
      {"cdi-cri", "deviceListStrategy: cdi-cri"},
      {"all four, index, passDeviceSpecs",
       "deviceListStrategy: [envvar, volume-mounts, cdi-annotations, cdi-cri], deviceIDStrategy: index, "
       "passDeviceSpecs: true"},
  };
  const std::pair<const char*, const char*> sharings[] = {
      {"none", ""},
      {"time-slicing",
       "sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2}, {name: mig-3g.20gb, replicas: 2}]}}"},
      {"time-slicing renamed",
       "sharing: {timeSlicing: {renameByDefault: true, resources: [{name: gpu, replicas: 2}, {name: "
       "mig-3g.20gb, "
       "replicas: 2}]}}"},
      {"mps", "sharing: {mps: {resources: [{name: gpu, replicas: 2}]}}"},
  };
  std::string out;
  for (const auto mig : {"none", "single", "mixed"}) {
    const auto inventory = std::string_view(mig) == "single" ? all_mig() : two_gpus();
    for (const auto& [sharing_name, sharing] : sharings) {
      for (const auto& [strategy_name, strategy] : strategies) {
        out +=
            std::string("== migStrategy ") + mig + ", sharing " + sharing_name + ", " + strategy_name + "\n";
        const std::string file = std::string("flags: {migStrategy: ") + mig +
                                 ", mpsRoot: /run/nvidia/mps, "
                                 "nvidiaDriverRoot: /host, plugin: {" +
                                 strategy + "}}\n" + sharing + "\n";
        auto config = resolve_config({}, file);
        if (!config) {
          out += "config error: " + config.error().message + "\n";
          continue;
        }
        std::vector<std::string> warnings;
        auto resources = build_resources(inventory, *config, {}, warnings);
        if (!resources) {
          out += "resources error: " + resources.error().message + "\n";
          continue;
        }
        for (const auto& resource : *resources) {
          const Allocator allocator(resource, *config, inventory.control_nodes);
          std::vector<std::vector<std::string>> requests = {{resource.devices.front().id}};
          if (resource.devices.size() > 1) {
            requests.push_back({resource.devices.front().id, resource.devices.back().id});
          }
          for (const auto& ids : requests) {
            out += "-- " + resource.name + " " + join(ids, " ") + "\n";
            auto result = allocator.answer(ids, k_response);
            out += result ? describe(*result) : "error: " + result.error().message + "\n";
          }
        }
      }
    }
  }
  EXPECT_TRUE(gpuctk::test::matches_golden("plugin/allocate.txt", out));
}

}  // namespace
}  // namespace gpuctk::plugin
