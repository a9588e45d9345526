// The resources the device plugin advertises under each MIG strategy and sharing configuration, and the
// refusals NVIDIA's plugin makes.
#include "plugin/resources.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/temp_dir.hpp"
#include "test_host.hpp"

namespace gpuctk::plugin {
namespace {

using namespace test;

// "name: id index paths... [numa N] [replicas N]" per device, resources in order.
std::string describe(const std::vector<Resource>& resources) {
  std::string out;
  for (const auto& r : resources) {
    out += r.name + "\n";
    for (const auto& d : r.devices) {
      out += "  " + d.id + " " + d.index;
      for (const auto& p : d.paths) {
        out += " " + p;
      }
      if (d.numa_node) {
        out += " numa " + std::to_string(*d.numa_node);
      }
      if (d.replicas > 0) {
        out += " replicas " + std::to_string(d.replicas);
      }
      out += "\n";
    }
  }
  return out;
}

// A configuration of the MIG strategy and, when `replicated` is given, time-slicing (or `sharing`).
Config with(labels::MigStrategy strategy, std::vector<labels::ReplicatedResource> replicated = {},
            std::optional<labels::SharingStrategy> sharing = std::nullopt) {
  Config c;
  c.mig_strategy = strategy;
  c.sharing = sharing.value_or(replicated.empty() ? labels::SharingStrategy::none
                                                  : labels::SharingStrategy::time_slicing);
  c.replicated = std::move(replicated);
  return c;
}

std::string built(const discover::Inventory& inv, const Config& config, const NumaNodes& numa = {}) {
  std::vector<std::string> warnings;
  auto resources = build_resources(inv, config, numa, warnings);
  if (!resources) {
    return "error: " + resources.error().message;
  }
  std::string out = describe(*resources);
  for (const auto& w : warnings) {
    out += "warning: " + w + "\n";
  }
  return out;
}

TEST(PluginResources, NoneAdvertisesEveryGpuWholeByUuidWithItsNumaNode) {
  EXPECT_EQ(built(two_gpus(), with(labels::MigStrategy::none), {{"0000:0f:00.0", 1}}),
            "nvidia.com/gpu\n"
            "  GPU-00000000-0000-4000-8000-000000000000 0 /dev/nvidia0\n"
            "  GPU-11111111-1111-4111-8111-111111111111 1 /dev/nvidia1 numa 1\n");
}

TEST(PluginResources, MixedAdvertisesMigDevicesByProfileAndTheOtherGpusWhole) {
  auto inv = two_gpus();
  inv.gpus[1].mig_devices[1].profile = "1g.10gb+me";
  EXPECT_EQ(built(inv, with(labels::MigStrategy::mixed)),
            "nvidia.com/gpu\n"
            "  GPU-00000000-0000-4000-8000-000000000000 0 /dev/nvidia0\n"
            "nvidia.com/mig-1g.10gb.me\n"
            "  MIG-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb 1:1 /dev/nvidia1 /dev/nvidia-caps/nvidia-cap21 "
            "/dev/nvidia-caps/nvidia-cap22\n"
            "nvidia.com/mig-3g.20gb\n"
            "  MIG-aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa 1:0 /dev/nvidia1 /dev/nvidia-caps/nvidia-cap12 "
            "/dev/nvidia-caps/nvidia-cap13\n");
}

TEST(PluginResources, MixedRefusesProfilesOfFewerComputeSlicesAndUnknownProfiles) {
  auto inv = two_gpus();
  inv.gpus[1].mig_devices[1].profile = "1c.3g.20gb";
  EXPECT_EQ(built(inv, with(labels::MigStrategy::mixed)),
            "error: migStrategy mixed: MIG profile 1c.3g.20gb (GPU 1, MIG 1) matches no resource (fewer "
            "compute than "
            "GPU slices)");
  inv.gpus[1].mig_devices[0].profile.clear();
  EXPECT_EQ(
      built(inv, with(labels::MigStrategy::mixed)),
      "error: migStrategy mixed: the profile of MIG device 1:0 is unknown (MIG profiles come from NVML)");
}

TEST(PluginResources, MixedWarnsOfAMigGpuWithoutMigDevices) {
  auto inv = two_gpus();
  inv.gpus[1].mig_devices.clear();
  inv.gpus[1].mig_enabled = true;
  EXPECT_EQ(built(inv, with(labels::MigStrategy::mixed)),
            "nvidia.com/gpu\n"
            "  GPU-00000000-0000-4000-8000-000000000000 0 /dev/nvidia0\n"
            "warning: migStrategy mixed: GPU 1 is in MIG mode without MIG devices: it offers nothing\n");
}

TEST(PluginResources, SingleAdvertisesTheMigDevicesAsGpus) {
  EXPECT_EQ(built(all_mig(), with(labels::MigStrategy::single)),
            "nvidia.com/gpu\n"
            "  MIG-cccccccc-cccc-4ccc-8ccc-cccccccccccc 0:0 /dev/nvidia0 /dev/nvidia-caps/nvidia-cap12 "
            "/dev/nvidia-caps/nvidia-cap13\n"
            "  MIG-aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa 1:0 /dev/nvidia1 /dev/nvidia-caps/nvidia-cap147 "
            "/dev/nvidia-caps/nvidia-cap148\n");
}

TEST(PluginResources, SingleRefusesWhatNvidiasRefuses) {
  EXPECT_EQ(built(two_gpus(), with(labels::MigStrategy::single)),
            "error: migStrategy single: all GPUs must be in MIG mode or none (GPU 0 is not, GPU 1 is)");
  auto inv = all_mig();
  inv.gpus[1].mig_devices[0].profile = "2g.10gb";
  EXPECT_EQ(built(inv, with(labels::MigStrategy::single)),
            "error: migStrategy single: more than one MIG device type (3g.20gb on GPU 0, 2g.10gb on GPU 1)");
  inv.gpus[1].mig_devices.clear();
  EXPECT_EQ(built(inv, with(labels::MigStrategy::single)),
            "error: migStrategy single: GPU 1 is in MIG mode without MIG devices");
  // Without NVML a MIG device has no UUID, and device IDs are UUIDs.
  inv = all_mig();
  inv.gpus[0].mig_devices[0].uuid.clear();
  EXPECT_EQ(built(inv, with(labels::MigStrategy::single)),
            "error: MIG device 0:0 has no UUID (MIG UUIDs come from NVML)");
}

TEST(PluginResources, ReplicasOfEachDeviceInOrderAndRenamedUnderRenameByDefault) {
  const std::vector<labels::ReplicatedResource> gpu2 = {{"nvidia.com/gpu", 2, false}};
  EXPECT_EQ(built(two_gpus(), with(labels::MigStrategy::none, gpu2)),
            "nvidia.com/gpu\n"
            "  GPU-00000000-0000-4000-8000-000000000000::0 0 /dev/nvidia0 replicas 2\n"
            "  GPU-00000000-0000-4000-8000-000000000000::1 0 /dev/nvidia0 replicas 2\n"
            "  GPU-11111111-1111-4111-8111-111111111111::0 1 /dev/nvidia1 replicas 2\n"
            "  GPU-11111111-1111-4111-8111-111111111111::1 1 /dev/nvidia1 replicas 2\n");
  const std::vector<labels::ReplicatedResource> mig3 = {{"nvidia.com/mig-3g.20gb", 3, true},
                                                        {"nvidia.com/mig-7g.40gb", 2, false}};
  EXPECT_EQ(built(two_gpus(), with(labels::MigStrategy::mixed, mig3)),
            "nvidia.com/gpu\n"
            "  GPU-00000000-0000-4000-8000-000000000000 0 /dev/nvidia0\n"
            "nvidia.com/mig-3g.20gb.shared\n"
            "  MIG-aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa::0 1:0 /dev/nvidia1 /dev/nvidia-caps/nvidia-cap12 "
            "/dev/nvidia-caps/nvidia-cap13 replicas 3\n"
            "  MIG-aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa::1 1:0 /dev/nvidia1 /dev/nvidia-caps/nvidia-cap12 "
            "/dev/nvidia-caps/nvidia-cap13 replicas 3\n"
            "  MIG-aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa::2 1:0 /dev/nvidia1 /dev/nvidia-caps/nvidia-cap12 "
            "/dev/nvidia-caps/nvidia-cap13 replicas 3\n"
            "  MIG-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb::0 1:1 /dev/nvidia1 /dev/nvidia-caps/nvidia-cap21 "
            "/dev/nvidia-caps/nvidia-cap22 replicas 3\n"
            "  MIG-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb::1 1:1 /dev/nvidia1 /dev/nvidia-caps/nvidia-cap21 "
            "/dev/nvidia-caps/nvidia-cap22 replicas 3\n"
            "  MIG-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb::2 1:1 /dev/nvidia1 /dev/nvidia-caps/nvidia-cap21 "
            "/dev/nvidia-caps/nvidia-cap22 replicas 3\n");
}

TEST(PluginResources, MpsRefusesMigDevices) {
  const std::vector<labels::ReplicatedResource> gpu2 = {{"nvidia.com/gpu", 2, false}};
  EXPECT_EQ(built(all_mig(), with(labels::MigStrategy::single, gpu2, labels::SharingStrategy::mps)),
            "error: sharing.mps: not supported for MIG devices (nvidia.com/gpu has MIG device 0:0)");
}

TEST(PluginResources, ReadsNumaNodesFromSysfsBelowTheDevRoot) {
  const gpuctk::test::TempDir tmp{"gpuctk-numa"};
  ASSERT_FALSE(tmp.path().empty());
  const std::filesystem::path root = tmp.path();
  const auto write = [&](const std::string& bus, const std::string& text) {
    std::filesystem::create_directories(root / "sys/bus/pci/devices" / bus);
    std::ofstream(root / "sys/bus/pci/devices" / bus / "numa_node") << text;
  };
  write("0000:07:00.0", "1\n");
  write("0000:0f:00.0", "-1\n");  // no affinity
  auto inv = whole_gpus(3);
  inv.gpus[0].bus_id = "0000:07:00.0";
  inv.gpus[1].bus_id = "0000:0f:00.0";  // GPU 2's file is missing
  EXPECT_EQ(read_numa_nodes(root.string(), inv), (NumaNodes{{"0000:07:00.0", 1}}));
}

}  // namespace
}  // namespace gpuctk::plugin
