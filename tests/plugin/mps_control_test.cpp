// gpuctk-mps-control-daemon's decisions, against what NVIDIA's mps-control-daemon computes
// (cmd/mps-control-daemon/mps/daemon.go: perDevicePinnedDeviceMemoryLimits, activeThreadPercentage,
// EnvVars; mount/mount-shm.go: getDefaultShmSize).
#include "plugin/mps_control.hpp"

#include <gtest/gtest.h>

#include "test_host.hpp"
#include "util/strings.hpp"

namespace gpuctk::plugin {
namespace {

using namespace test;

Config configured(std::string_view file) {
  auto config = resolve_config({}, file);
  EXPECT_TRUE(config) << config.error().message;
  return config.value_or(Config{});
}

// The plans for `file` on `inventory`, one block per daemon, or "error: ...".
std::string plans(std::string_view file, const discover::Inventory& inventory) {
  const Config config = configured(file);
  std::vector<std::string> warnings;
  auto resources = build_resources(inventory, config, {}, warnings);
  if (!resources) {
    return "error: " + resources.error().message;
  }
  auto out = plan_mps_daemons(config, *resources);
  if (!out) {
    return "error: " + out.error().message;
  }
  std::string text;
  for (const auto& plan : *out) {
    text += "daemon " + plan.resource + " gpus " + join(plan.uuids, ",") + " threads " +
            std::to_string(plan.thread_percentage) + "\n";
    text += "  pipe " + plan.pipe_dir + " log " + plan.log_dir + "\n";
    for (const auto& variable : plan.environment) {
      text += "  env " + variable + "\n";
    }
    for (const auto& command : plan.commands) {
      text += "  cmd " + command + "\n";
    }
  }
  return text;
}

const std::string g0 = k_gpu0;
const std::string g1 = k_gpu1;

TEST(PluginMpsControl, OneDaemonPerSharedResourceWithNvidiasLimits) {
  // 40 GiB / 4 replicas = 10240 MiB per GPU; 100 / 4 = 25 %.
  EXPECT_EQ(
      plans("flags: {mpsRoot: /run/nvidia/mps}\nsharing: {mps: {resources: [{name: gpu, replicas: 4}]}}",
            whole_gpus(2)),
      "daemon nvidia.com/gpu gpus GPU-00000000-0000-4000-8000-000000000000,"
      "GPU-00000001-0000-4000-8000-000000000000 threads 25\n"
      "  pipe /run/nvidia/mps/nvidia.com/gpu/pipe log /run/nvidia/mps/nvidia.com/gpu/log\n"
      "  env CUDA_MPS_PIPE_DIRECTORY=/run/nvidia/mps/nvidia.com/gpu/pipe\n"
      "  env CUDA_MPS_LOG_DIRECTORY=/run/nvidia/mps/nvidia.com/gpu/log\n"
      "  env CUDA_VISIBLE_DEVICES=GPU-00000000-0000-4000-8000-000000000000,"
      "GPU-00000001-0000-4000-8000-000000000000\n"
      "  cmd set_default_device_pinned_mem_limit 0 10240M\n"
      "  cmd set_default_device_pinned_mem_limit 1 10240M\n"
      "  cmd set_default_active_thread_percentage 25\n");
}

TEST(PluginMpsControl, RenamedResourceAndThirdsRoundDown) {
  // 40 GiB / 3 = 13653.33 MiB -> 13653M; 100 / 3 = 33.
  EXPECT_EQ(plans("flags: {mpsRoot: /m}\nsharing: {mps: {renameByDefault: true, resources: [{name: gpu, "
                  "replicas: 3}]}}",
                  whole_gpus(1)),
            "daemon nvidia.com/gpu.shared gpus GPU-00000000-0000-4000-8000-000000000000 threads 33\n"
            "  pipe /m/nvidia.com/gpu.shared/pipe log /m/nvidia.com/gpu.shared/log\n"
            "  env CUDA_MPS_PIPE_DIRECTORY=/m/nvidia.com/gpu.shared/pipe\n"
            "  env CUDA_MPS_LOG_DIRECTORY=/m/nvidia.com/gpu.shared/log\n"
            "  env CUDA_VISIBLE_DEVICES=GPU-00000000-0000-4000-8000-000000000000\n"
            "  cmd set_default_device_pinned_mem_limit 0 13653M\n"
            "  cmd set_default_active_thread_percentage 33\n");
}

TEST(PluginMpsControl, AGpuOfUnknownMemoryGetsNoPinnedLimit) {
  auto inventory = whole_gpus(2);
  inventory.gpus[1].memory_bytes = 0;
  const auto text =
      plans("flags: {mpsRoot: /m}\nsharing: {mps: {resources: [{name: gpu, replicas: 2}]}}", inventory);
  EXPECT_NE(text.find("  cmd set_default_device_pinned_mem_limit 0 20480M\n"
                      "  cmd set_default_active_thread_percentage 50\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("pinned_mem_limit 1"), std::string::npos) << text;
}

TEST(PluginMpsControl, NoDaemonWithoutMpsOrForAnUnsharedResource) {
  EXPECT_EQ(plans("", whole_gpus(2)), "");
  EXPECT_EQ(plans("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2}]}}", whole_gpus(2)), "");
  // MPS configured for a resource the node does not have: the GPUs are advertised unshared, no daemon.
  EXPECT_EQ(plans("flags: {mpsRoot: /m}\nsharing: {mps: {resources: [{name: nvidia.com/mig-1g.5gb, replicas: "
                  "2}]}}",
                  whole_gpus(1)),
            "");
}

TEST(PluginMpsControl, MigDevicesAreRefused) {
  EXPECT_EQ(plans("flags: {mpsRoot: /m, migStrategy: single}\nsharing: {mps: {resources: [{name: gpu, "
                  "replicas: 2}]}}",
                  all_mig()),
            "error: sharing.mps: not supported for MIG devices (nvidia.com/gpu has MIG device 0:0)");
  // The plan refuses them too, should a resource with MIG devices reach it.
  Resource resource{.name = "nvidia.com/gpu", .devices = {}};
  Device device;
  device.uuid = k_mig10;
  device.index = "1:0";
  device.gi = 1;
  device.replicas = 2;
  resource.devices = {device, device};
  auto out = plan_mps_daemons(configured("flags: {mpsRoot: /m}\nsharing: {mps: {resources: [{name: gpu, "
                                         "replicas: 2}]}}"),
                              {resource});
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().message, "nvidia.com/gpu: MPS does not share MIG devices (MIG device 1:0)");
}

TEST(PluginMpsControl, GpusOfOneDaemonMustHaveTheSameReplicas) {
  Device a;
  a.uuid = g0;
  a.gpu = 0;
  a.replicas = 2;
  Device b = a;
  b.uuid = g1;
  b.gpu = 1;
  const Resource resource{.name = "nvidia.com/gpu", .devices = {a, a, b}};
  auto out = plan_mps_daemons(configured("flags: {mpsRoot: /m}\nsharing: {mps: {resources: [{name: gpu, "
                                         "replicas: 2}]}}"),
                              {resource});
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().message,
            "nvidia.com/gpu: GPU 1 has 1 replicas, GPU 0 has 2 (MPS sets one thread percentage per daemon)");
}

TEST(PluginMpsControl, ShmSizeIsHalfOfMemTotalWithItsUnitLetter) {
  for (const auto& [in, want] : std::vector<std::pair<std::string, std::string>>{
           {"MemTotal:       32780132 kB\nMemFree:        1 kB\n", "16390066k"},
           {"MemFree: 1 kB\nMemTotal: 3 kB\n", "1k"},
           {"MemTotal: 1000\n", "500"},
           {"MemTotal: lots kB\n", "65536k"},
           {"", "65536k"},
       }) {
    EXPECT_EQ(mps_shm_size(in), want) << in;
  }
  EXPECT_EQ(mps_shm_mount_data("16390066k"), "size=16390066k");
}

TEST(PluginMpsControl, ThreadPercentageAnswerMustMatch) {
  EXPECT_TRUE(check_thread_percentage("25.0\n", 25));
  EXPECT_TRUE(check_thread_percentage("100", 100));
  const auto wrong = check_thread_percentage("100.0\n", 25);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().message, "get_default_active_thread_percentage answered \"100.0\\n\", not 25");
  EXPECT_FALSE(check_thread_percentage("25.5", 25));
  EXPECT_FALSE(check_thread_percentage("25.", 25));
  EXPECT_FALSE(check_thread_percentage("", 25));
  EXPECT_FALSE(check_thread_percentage("Error: no daemon\n", 25));
}

TEST(PluginMpsControl, ResourceComponentsRefuseEscapes) {
  auto parts = mps_resource_components("nvidia.com/gpu");
  ASSERT_TRUE(parts);
  EXPECT_EQ(*parts, (std::vector<std::string>{"nvidia.com", "gpu"}));
  for (const auto* bad : {"..", "nvidia.com/../x", "/abs", "a//b", "", "a/."}) {
    const auto out = mps_resource_components(bad);
    ASSERT_FALSE(out) << bad;
    EXPECT_EQ(out.error().message, "resource " + quote(bad) + ": not a name for a folder below the MPS root");
  }
}

}  // namespace
}  // namespace gpuctk::plugin
