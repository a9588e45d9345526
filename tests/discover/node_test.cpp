// The node's discovery: which vendors are looked for, the NVIDIA driver that is not loaded, and the
// hardware facts read from sysfs below the dev root (DMI product name, PCI class, an NVIDIA display
// controller on the PCI bus), where a missing, oversized or malformed file is an unknown fact.
#include "discover/node.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fixtures/builder/hosts.hpp"
#include "support/fixture_host.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk::discover {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

#define MATERIALISE_OR_SKIP(f, name)                                       \
  const auto f = test::host_with_real_nodes(name, "discovery needs them"); \
  if (!(f)) {                                                              \
    return;                                                                \
  }

// A host with NVIDIA's driver and an Intel GPU: both inventories, each GPU's PCI class, the DMI name.
TEST(DiscoverNode, FindsEveryVendorAndTheHardwareFactsOfAFixtureHost) {
  MATERIALISE_OR_SKIP(f, "mixed-nvidia-intel");
  write(fs::path(f->host.dev_root) / "sys/class/dmi/id/product_name", "  PowerEdge R760xa \n");
  auto node = discover_node(test::discover_options(*f, Mode::automatic));
  ASSERT_TRUE(node) << node.error().message;
  ASSERT_EQ(node->nvidia.gpus.size(), 1u);
  EXPECT_EQ(node->nvidia.gpus[0].bus_id, "0000:00:1e.0");
  ASSERT_EQ(node->drm.gpus.size(), 1u);
  EXPECT_EQ(node->drm.gpus[0].vendor, DrmVendor::intel);
  EXPECT_EQ(node->no_nvidia_driver, "");
  EXPECT_EQ(node->facts.machine, std::optional<std::string>("PowerEdge R760xa"));
  EXPECT_EQ(node->facts.pci_classes,
            (std::map<std::string, uint32_t>{{"0000:00:1e.0", 0x030200}, {"0000:03:00.0", 0x038000}}));
  EXPECT_TRUE(node->facts.nvidia_pci_gpu);
}

// Only the vendors asked for are discovered (cdi generate --vendor-set intel): no NVIDIA inventory and
// no note about NVIDIA's driver; an empty DRM set discovers no DRM GPU at all.
TEST(DiscoverNode, LooksOnlyForTheVendorsAskedFor) {
  MATERIALISE_OR_SKIP(f, "mixed-nvidia-intel");
  auto intel = discover_node(test::discover_options(*f, Mode::automatic),
                             {.nvidia = false, .drm = {DrmVendor::intel}});
  ASSERT_TRUE(intel) << intel.error().message;
  EXPECT_TRUE(intel->nvidia.gpus.empty());
  EXPECT_EQ(intel->nvidia.driver_version, "");
  EXPECT_EQ(intel->no_nvidia_driver, "");
  ASSERT_EQ(intel->drm.gpus.size(), 1u);
  EXPECT_EQ(intel->facts.pci_classes, (std::map<std::string, uint32_t>{{"0000:03:00.0", 0x038000}}));

  auto nvidia = discover_node(test::discover_options(*f, Mode::automatic), {.nvidia = true, .drm = {}});
  ASSERT_TRUE(nvidia) << nvidia.error().message;
  EXPECT_EQ(nvidia->nvidia.gpus.size(), 1u);
  EXPECT_TRUE(nvidia->drm.gpus.empty());
  EXPECT_EQ(nvidia->drm.searched, "");
}

// An NVIDIA GPU on the PCI bus whose driver is not loaded: no inventory, the reason, and the GPU still
// seen on the bus (what nvidia.com/gpu.present stands for).
TEST(DiscoverNode, NvidiaGpuOnThePciBusWithoutALoadedDriver) {
  MATERIALISE_OR_SKIP(f, "t4-debian");
  const std::string proc = f->host.dev_root + "/proc/driver/nvidia";
  fs::remove_all(proc);
  auto node = discover_node(test::discover_options(*f, Mode::automatic));
  ASSERT_TRUE(node) << node.error().message;
  EXPECT_TRUE(node->nvidia.gpus.empty());
  EXPECT_EQ(node->no_nvidia_driver, "no NVIDIA driver (" + proc + " missing)");
  EXPECT_TRUE(node->drm.gpus.empty());
  EXPECT_EQ(node->facts.machine, std::nullopt);
  EXPECT_TRUE(node->facts.pci_classes.empty());  // no GPU discovered: no class looked up
  EXPECT_TRUE(node->facts.nvidia_pci_gpu);
}

// nvidia_pci_gpu: an NVIDIA VGA or 3D controller on the PCI bus; not NVIDIA's other PCI functions
// (audio, USB), nor another vendor's GPU.
TEST(HardwareFacts, NvidiaPciGpuIsAnNvidiaDisplayControllerOnThePciBus) {
  const test::TempDir tmp{"gpuctk-node-pci"};
  ASSERT_FALSE(tmp.path().empty());
  const fs::path root = tmp.path();
  const auto device = [&](const std::string& bus, const std::string& vendor, const std::string& klass) {
    write(root / "sys/bus/pci/devices" / bus / "vendor", vendor + "\n");
    write(root / "sys/bus/pci/devices" / bus / "class", klass + "\n");
  };
  EXPECT_FALSE(read_hardware_facts(root, Inventory{}).nvidia_pci_gpu);  // no sysfs at all
  device("0000:00:1f.3", "0x8086", "0x040300");                         // Intel audio
  device("0000:3b:00.1", "0x10de", "0x040300");                         // an NVIDIA GPU's HDMI audio function
  device("0000:65:00.0", "0x1002", "0x030200");                         // an AMD GPU
  EXPECT_FALSE(read_hardware_facts(root, Inventory{}).nvidia_pci_gpu);
  for (const std::string klass : {"0x030200", "0x030000"}) {  // a 3D controller (A100), a VGA one (T4)
    device("0000:3b:00.0", "0x10de", klass);
    EXPECT_TRUE(read_hardware_facts(root, Inventory{}).nvidia_pci_gpu) << klass;
  }
}

// A missing, empty, oversized or malformed file is an unknown fact, never an error or a guess.
TEST(HardwareFacts, MissingOversizedOrMalformedFilesAreUnknownFacts) {
  const test::TempDir tmp{"gpuctk-node-facts"};
  ASSERT_FALSE(tmp.path().empty());
  const fs::path root = tmp.path();
  const fs::path machine = root / "sys/class/dmi/id/product_name";
  const auto klass = [&](const std::string& bus) { return root / "sys/bus/pci/devices" / bus / "class"; };
  Inventory nvidia;
  for (const char* bus : {"0000:01:00.0", "0000:02:00.0", "0000:03:00.0", "0000:04:00.0", "0000:05:00.0"}) {
    nvidia.gpus.push_back(Gpu{});
    nvidia.gpus.back().bus_id = bus;
  }
  write(klass("0000:01:00.0"), "0x030200\n");                              // known
  write(klass("0000:02:00.0"), "0x030200" + std::string(57, ' ') + "\n");  // 66 bytes: over 64
  write(klass("0000:03:00.0"), "030200\n");                                // no 0x
  write(klass("0000:04:00.0"), "0x1ffffffff\n");                           // more than 32 bits
  // 0000:05:00.0 has no class file.
  write(machine, std::string(4096 - 1, 'M') + "\n");  // 4 KiB exactly: read
  auto facts = read_hardware_facts(root, nvidia);
  EXPECT_EQ(facts.pci_classes, (std::map<std::string, uint32_t>{{"0000:01:00.0", 0x030200}}));
  EXPECT_EQ(facts.machine, std::optional<std::string>(std::string(4096 - 1, 'M')));
  write(machine, std::string(4096, 'M') + "\n");  // one byte over
  EXPECT_EQ(read_hardware_facts(root, nvidia).machine, std::nullopt);
  write(machine, " \n");
  EXPECT_EQ(read_hardware_facts(root, nvidia).machine, std::nullopt);
  fs::remove(machine);
  EXPECT_EQ(read_hardware_facts(root, nvidia).machine, std::nullopt);
}

}  // namespace
}  // namespace gpuctk::discover
