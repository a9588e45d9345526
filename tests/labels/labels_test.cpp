// Node labels: golden label files for every fixture host (MIG strategies, time-slicing with and without
// renameByDefault, MPS), and GFD's rules on small hand-made inventories.
#include "labels/labels.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "discover/discover.hpp"
#include "fixtures/builder/hosts.hpp"
#include "support/fixture_host.hpp"
#include "support/golden_file.hpp"
#include "util/file.hpp"

namespace gpuctk::labels {
namespace {

using discover::HardwareFacts;

std::string data_file(std::string_view name) {
  return std::string(GPUCTK_SOURCE_DIR) + "/tests/data/labels/" + std::string(name);
}

SharingConfig load_config(std::string_view name) {
  auto text = read_file(data_file(name));
  EXPECT_TRUE(text) << text.error().message;
  auto config = parse_sharing_config(text.value_or(""));
  EXPECT_TRUE(config) << config.error().message;
  return config.value_or(SharingConfig{});
}

struct GoldenCase {
  const char* host;
  discover::Mode mode;
  const char* variant;       // the golden file is tests/golden/labels/<host>.<variant>.labels
  const char* config;        // tests/data/labels/<config>, or nullptr
  const char* mig_strategy;  // nullptr: the config's, else none
  const char* machine;       // written to <dev-root>/sys/class/dmi/id/product_name, or nullptr
};

class GoldenLabels : public ::testing::TestWithParam<GoldenCase> {};

// Discovers a fixture host and compares its labels (NFD format) with the golden file.
// GPUCTK_UPDATE_GOLDEN=1 rewrites the golden file instead (read its diff!).
TEST_P(GoldenLabels, MatchGoldenFileByteForByte) {
  const auto& param = GetParam();
  const auto f = test::host_with_real_nodes(param.host, "discovery needs them");
  if (!f) {
    return;
  }
  if (param.machine != nullptr) {
    const auto dir = std::filesystem::path(f->host.dev_root) / "sys/class/dmi/id";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "product_name") << param.machine << "\n";
  }
  auto node = discover::discover_node(test::discover_options(*f, param.mode));
  ASSERT_TRUE(node) << node.error().message;

  std::optional<SharingConfig> config;
  NvidiaOptions nvidia;
  if (param.config != nullptr) {
    config = load_config(param.config);
    nvidia.sharing = &*config;
    nvidia.mig_strategy = config->mig_strategy.value_or(MigStrategy::none);
  }
  if (param.mig_strategy != nullptr) {
    nvidia.mig_strategy = parse_mig_strategy(param.mig_strategy).value();
  }
  std::vector<std::string> warnings;
  auto labels = node_labels(node->nvidia, node->facts, nvidia, warnings, node->drm);
  ASSERT_TRUE(labels) << labels.error().message;
  const std::string text = format_nfd(*labels);

  EXPECT_TRUE(
      test::matches_golden("labels/" + std::string(param.host) + "." + param.variant + ".labels", text));
  // Same input, same bytes.
  std::vector<std::string> again;
  EXPECT_EQ(format_nfd(*node_labels(node->nvidia, node->facts, nvidia, again, node->drm)), text);
}

using discover::Mode;
constexpr const char* k_dgx = "DGXA100 920-23687-2530-000";

INSTANTIATE_TEST_SUITE_P(
    Hosts, GoldenLabels,
    ::testing::Values(
        GoldenCase{"t4-debian", Mode::nvml, "nvml", nullptr, nullptr, nullptr},
        GoldenCase{"t4-debian", Mode::proc, "proc", nullptr, nullptr, nullptr},
        GoldenCase{"t4-debian", Mode::nvml, "mps", "mps.yaml", nullptr, nullptr},
        GoldenCase{"dgx-a100", Mode::nvml, "nvml", nullptr, nullptr, k_dgx},
        GoldenCase{"dgx-a100", Mode::proc, "proc", nullptr, nullptr, k_dgx},
        GoldenCase{"dgx-a100", Mode::nvml, "mig-single", nullptr, "single", k_dgx},
        GoldenCase{"dgx-a100", Mode::nvml, "mig-mixed", nullptr, "mixed", k_dgx},
        GoldenCase{"dgx-a100", Mode::proc, "proc-mig-mixed", nullptr, "mixed", k_dgx},
        GoldenCase{"dgx-a100", Mode::nvml, "time-slicing", "time-slicing.yaml", nullptr, k_dgx},
        GoldenCase{"dgx-a100", Mode::nvml, "time-slicing-rename", "time-slicing-rename.yaml", nullptr, k_dgx},
        GoldenCase{"dgx-a100", Mode::nvml, "mixed-time-slicing", "mixed-time-slicing.yaml", nullptr, k_dgx},
        GoldenCase{"h100-rhel", Mode::nvml, "nvml", nullptr, nullptr, nullptr},
        GoldenCase{"h100-rhel", Mode::nvml, "time-slicing-rename", "time-slicing-rename.yaml", nullptr,
                   nullptr},
        GoldenCase{"driver-container", Mode::nvml, "nvml", nullptr, nullptr, nullptr},
        GoldenCase{"a10-debian-packaged", Mode::automatic, "auto", nullptr, nullptr, nullptr},
        GoldenCase{"nvml-init-fails", Mode::automatic, "auto", nullptr, nullptr, nullptr},
        GoldenCase{"nvml-missing-required", Mode::automatic, "auto", nullptr, nullptr, nullptr},
        GoldenCase{"nvml-missing-optional", Mode::nvml, "mig-mixed", nullptr, "mixed", nullptr},
        GoldenCase{"rtx-pro-6000-mig", Mode::nvml, "mig-mixed", nullptr, "mixed", nullptr},
        GoldenCase{"mi300x-amd", Mode::automatic, "auto", nullptr, nullptr, nullptr},
        GoldenCase{"flex170-intel", Mode::automatic, "auto", nullptr, nullptr, nullptr},
        GoldenCase{"mixed-nvidia-intel", Mode::automatic, "auto", nullptr, nullptr, nullptr}),
    [](const auto& test_info) {
      std::string name = std::string(test_info.param.host) + "_" + test_info.param.variant;
      std::ranges::replace(name, '-', '_');
      return name;
    });

// Every fixture host with GPUs has at least one golden label file.
TEST(GoldenLabelFiles, CoverEveryFixtureHost) {
  const auto names = fixture::list_hosts();
  ASSERT_TRUE(names) << names.error().message;
  const std::filesystem::path dir = std::string(GPUCTK_SOURCE_DIR) + "/tests/golden/labels";
  for (const auto& name : *names) {
    auto host = fixture::load_host(name);
    ASSERT_TRUE(host) << host.error().message;
    if (host->gpus.empty() && host->drm_gpus.empty()) {
      continue;
    }
    const bool covered = std::ranges::any_of(
        std::filesystem::directory_iterator(dir),
        [&](const auto& entry) { return entry.path().filename().string().starts_with(name + "."); });
    EXPECT_TRUE(covered) << "no tests/golden/labels/" << name << ".*.labels";
  }
}

// --- GFD's rules on hand-made inventories ------------------------------------------------------------

discover::Gpu gpu(uint32_t index, std::string model, uint64_t memory_mib, discover::ComputeCapability cc) {
  discover::Gpu g;
  g.index = index;
  g.minor = index;
  g.model = std::move(model);
  g.bus_id = "0000:0" + std::to_string(index) + ":00.0";
  g.memory_bytes = memory_mib * 1024 * 1024;
  g.compute_capability = cc;
  g.mig_capable = false;
  return g;
}

discover::MigDevice mig(std::string profile, uint64_t memory_mib, uint32_t slices) {
  discover::MigDevice m;
  m.profile = std::move(profile);
  m.memory_bytes = memory_mib * 1024 * 1024;
  m.attributes = discover::MigAttributes{.gi_slices = slices,
                                         .ci_slices = slices,
                                         .multiprocessors = 14 * slices,
                                         .copy_engines = slices,
                                         .decoders = 0,
                                         .encoders = 0,
                                         .jpeg_engines = 0,
                                         .ofa_engines = 0};
  return m;
}

discover::Inventory inventory(std::vector<discover::Gpu> gpus) {
  discover::Inventory inv;
  inv.driver_version = "550.54.15";
  inv.cuda_version = "12.4";
  inv.gpu_source = discover::GpuSource::nvml;
  inv.gpus = std::move(gpus);
  return inv;
}

Labels make(const discover::Inventory& inv, NvidiaOptions options = {},
            std::vector<std::string>* warnings = nullptr) {
  std::vector<std::string> ignored;
  auto labels = node_labels(inv, HardwareFacts{}, options, warnings != nullptr ? *warnings : ignored);
  EXPECT_TRUE(labels) << labels.error().message;
  return labels.value_or(Labels{});
}

// Two A100s, both in MIG mode with 7 x 1g.5gb each: the layout the single strategy is for.
discover::Inventory all_1g() {
  std::vector<discover::Gpu> gpus;
  for (uint32_t i = 0; i < 2; ++i) {
    auto g = gpu(i, "NVIDIA A100-SXM4-40GB", 40960, {8, 0});
    g.mig_capable = true;
    g.mig_enabled = true;
    for (int m = 0; m < 7; ++m) {
      g.mig_devices.push_back(mig("1g.5gb", 4864, 1));
    }
    gpus.push_back(std::move(g));
  }
  return inventory(std::move(gpus));
}

TEST(NvidiaLabels, SingleStrategyDescribesTheOneMigProfileAsNvidiaComGpu) {
  const auto labels = make(all_1g(), {.mig_strategy = MigStrategy::single});
  EXPECT_EQ(labels.at("nvidia.com/mig.strategy"), "single");
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb");
  EXPECT_EQ(labels.at("nvidia.com/gpu.count"), "14");
  EXPECT_EQ(labels.at("nvidia.com/gpu.memory"), "4864");
  EXPECT_EQ(labels.at("nvidia.com/gpu.multiprocessors"), "14");
  EXPECT_EQ(labels.at("nvidia.com/gpu.slices.gi"), "1");
  EXPECT_EQ(labels.at("nvidia.com/gpu.slices.ci"), "1");
  EXPECT_EQ(labels.at("nvidia.com/gpu.engines.copy"), "1");
  EXPECT_EQ(labels.at("nvidia.com/gpu.replicas"), "1");
  EXPECT_EQ(labels.at("nvidia.com/gpu.sharing-strategy"), "none");
  // The whole GPU's architecture stays.
  EXPECT_EQ(labels.at("nvidia.com/gpu.family"), "ampere");
  EXPECT_EQ(labels.at("nvidia.com/gpu.compute.major"), "8");
  EXPECT_EQ(labels.count("nvidia.com/mig-1g.5gb.count"), 0u);
}

TEST(NvidiaLabels, SingleStrategyWithTimeSlicingOfTheMigDevicesMarksThemShared) {
  SharingConfig sharing;
  sharing.strategy = SharingStrategy::time_slicing;
  sharing.resources.push_back({"nvidia.com/gpu", 3, false});
  auto labels = make(all_1g(), {.mig_strategy = MigStrategy::single, .sharing = &sharing});
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED");
  EXPECT_EQ(labels.at("nvidia.com/gpu.replicas"), "3");
  EXPECT_EQ(labels.at("nvidia.com/gpu.sharing-strategy"), "time-slicing");
  sharing.resources.front().renamed = true;
  labels = make(all_1g(), {.mig_strategy = MigStrategy::single, .sharing = &sharing});
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb");
  EXPECT_EQ(labels.at("nvidia.com/gpu.replicas"), "3");
}

TEST(NvidiaLabels, SingleStrategyWithTwoProfilesOrAnEmptyMigGpuIsInvalid) {
  auto inv = all_1g();
  inv.gpus[1].mig_devices.back() = mig("2g.10gb", 9984, 2);
  std::vector<std::string> warnings;
  auto labels = make(inv, {.mig_strategy = MigStrategy::single}, &warnings);
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-40GB-MIG-INVALID");
  EXPECT_EQ(labels.at("nvidia.com/gpu.count"), "0");
  EXPECT_EQ(labels.at("nvidia.com/gpu.replicas"), "0");
  EXPECT_EQ(labels.at("nvidia.com/gpu.memory"), "0");
  EXPECT_EQ(labels.at("nvidia.com/gpu.sharing-strategy"), "");
  EXPECT_EQ(warnings,
            std::vector<std::string>{"mig-strategy single: more than one MIG profile: "
                                     "nvidia.com/gpu.product is NVIDIA-A100-SXM4-40GB-MIG-INVALID"});

  inv = all_1g();
  inv.gpus[0].mig_devices.clear();
  labels = make(inv, {.mig_strategy = MigStrategy::single});
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-40GB-MIG-INVALID");
}

TEST(NvidiaLabels, SingleStrategyWithoutMigEnabledGpusIsTheNoneSet) {
  const auto inv = inventory({gpu(0, "Tesla T4", 15360, {7, 5})});
  auto labels = make(inv, {.mig_strategy = MigStrategy::single});
  EXPECT_EQ(labels.at("nvidia.com/mig.strategy"), "single");
  labels.erase("nvidia.com/mig.strategy");
  EXPECT_EQ(labels, make(inv));
}

TEST(NvidiaLabels, UnknownProfilesLeaveTheMigLabelsOutInsteadOfGuessing) {
  auto inv = all_1g();
  for (auto& g : inv.gpus) {
    for (auto& m : g.mig_devices) {
      m.profile.clear();
      m.attributes.reset();
      m.memory_bytes = 0;
    }
  }
  const auto single = make(inv, {.mig_strategy = MigStrategy::single});
  for (const char* key : {"nvidia.com/gpu.product", "nvidia.com/gpu.count", "nvidia.com/gpu.memory",
                          "nvidia.com/gpu.replicas", "nvidia.com/gpu.sharing-strategy"}) {
    EXPECT_EQ(single.count(key), 0u) << key;
  }
  const auto mixed = make(inv, {.mig_strategy = MigStrategy::mixed});
  EXPECT_FALSE(
      std::ranges::any_of(mixed, [](const auto& kv) { return kv.first.starts_with("nvidia.com/mig-"); }));
}

TEST(NvidiaLabels, MigEnabledGpusAloneAreLabelledWithoutSharing) {
  SharingConfig sharing;
  sharing.strategy = SharingStrategy::time_slicing;
  sharing.resources.push_back({"nvidia.com/gpu", 4, false});
  const auto labels = make(all_1g(), {.sharing = &sharing});
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-40GB");
  EXPECT_EQ(labels.at("nvidia.com/gpu.replicas"), "0");
  EXPECT_EQ(labels.at("nvidia.com/gpu.sharing-strategy"), "none");
  EXPECT_EQ(labels.at("nvidia.com/gpu.count"), "2");
}

TEST(NvidiaLabels, WithoutNvmlFactsTheirLabelsAreLeftOut) {
  discover::Inventory inv;
  inv.driver_version = "535.183.01";
  discover::Gpu g;
  g.model = "Tesla T4";
  g.bus_id = "0000:00:1e.0";
  inv.gpus.push_back(g);
  const auto labels = make(inv);
  for (const char* key : {"nvidia.com/gpu.memory", "nvidia.com/gpu.family", "nvidia.com/gpu.compute.major",
                          "nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime-version.full",
                          "nvidia.com/mig.capable", "nvidia.com/gpu.machine", "nvidia.com/gpu.mode"}) {
    EXPECT_EQ(labels.count(key), 0u) << key;
  }
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"), "Tesla-T4");
  EXPECT_EQ(labels.at("nvidia.com/gpu.count"), "1");
  EXPECT_EQ(labels.at("nvidia.com/cuda.driver.rev"), "01");
}

TEST(NvidiaLabels, NoGpusNoLabels) {
  EXPECT_EQ(make(inventory({})), Labels{});
}

TEST(NvidiaLabels, SeveralModelsDescribeTheFirstWholeGpuAndSaySo) {
  auto a100 = gpu(0, "NVIDIA A100-SXM4-40GB", 40960, {8, 0});
  a100.mig_enabled = true;
  a100.mig_capable = true;
  const auto inv = inventory({a100, gpu(1, "Tesla T4", 15360, {7, 5}), gpu(2, "Tesla T4", 15360, {7, 5})});
  std::vector<std::string> warnings;
  const auto labels = make(inv, {}, &warnings);
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"), "Tesla-T4");
  EXPECT_EQ(labels.at("nvidia.com/gpu.count"), "2");
  EXPECT_EQ(labels.at("nvidia.com/gpu.family"), "turing");
  EXPECT_EQ(labels.at("nvidia.com/mig.capable"), "true");
  EXPECT_EQ(warnings,
            std::vector<std::string>{"GPUs of several models (NVIDIA A100-SXM4-40GB, Tesla T4): the "
                                     "nvidia.com/gpu labels describe Tesla T4 (GPU 1)"});
}

TEST(NvidiaLabels, MpsWithAMigGpuIsAnError) {
  SharingConfig sharing;
  sharing.strategy = SharingStrategy::mps;
  sharing.resources.push_back({"nvidia.com/gpu", 2, false});
  std::vector<std::string> warnings;
  auto labels = node_labels(all_1g(), HardwareFacts{}, {.sharing = &sharing}, warnings);
  ASSERT_FALSE(labels);
  EXPECT_EQ(labels.error().message,
            "MPS sharing is not supported with MIG: GPU 0 (0000:00:00.0) is in MIG mode");
}

TEST(NvidiaLabels, MachineAndModeComeFromHardwareFacts) {
  HardwareFacts facts;
  facts.machine = "  ProLiant DL380 Gen10 (x86)";
  facts.pci_classes = {{"0000:00:00.0", 0x030200}, {"0000:01:00.0", 0x030200}};
  const auto inv = inventory({gpu(0, "Tesla T4", 15360, {7, 5}), gpu(1, "Tesla T4", 15360, {7, 5})});
  std::vector<std::string> warnings;
  auto labels = node_labels(inv, facts, {}, warnings).value();
  EXPECT_EQ(labels.at("nvidia.com/gpu.machine"), "ProLiant-DL380-Gen10-x86");
  EXPECT_EQ(labels.at("nvidia.com/gpu.mode"), "compute");
  facts.pci_classes["0000:01:00.0"] = 0x030000;  // one in display mode: GFD's "unknown", left out
  labels = node_labels(inv, facts, {}, warnings).value();
  EXPECT_EQ(labels.count("nvidia.com/gpu.mode"), 0u);
  facts.pci_classes = {{"0000:00:00.0", 0x030000}, {"0000:01:00.0", 0x030000}};
  labels = node_labels(inv, facts, {}, warnings).value();
  EXPECT_EQ(labels.at("nvidia.com/gpu.mode"), "graphics");
}

// The GPU Operator's nvidia.com/gpu.present: for an NVIDIA GPU on the PCI bus (HardwareFacts'
// nvidia_pci_gpu, which tests/discover/node_test.cpp reads from sysfs), with or without a driver, or for
// one discovery found.
TEST(Labels, GpuPresentForNvidiaDisplayControllersOnThePciBus) {
  HardwareFacts facts;
  std::vector<std::string> warnings;
  EXPECT_EQ(node_labels(inventory({}), facts, {}, warnings).value(), Labels{});
  facts.nvidia_pci_gpu = true;
  // No driver: no inventory, only this label (it is what schedules the driver).
  EXPECT_EQ(node_labels(inventory({}), facts, {}, warnings).value(),
            (Labels{{"nvidia.com/gpu.present", "true"}}));
  // GPUs discovery found are present whatever sysfs says.
  const auto labels =
      node_labels(inventory({gpu(0, "Tesla T4", 15360, {7, 5})}), HardwareFacts{}, {}, warnings).value();
  EXPECT_EQ(labels.at("nvidia.com/gpu.present"), "true");
  EXPECT_TRUE(warnings.empty());
}

discover::DrmGpu drm_gpu(discover::DrmVendor vendor, std::string bus, uint16_t device,
                         uint32_t partition = 0) {
  discover::DrmGpu g;
  g.vendor = vendor;
  g.bus_id = std::move(bus);
  g.device_id = device;
  g.partition = partition;
  return g;
}

TEST(AmdLabels, OneDeviceIdIsTheValueSeveralAreCountedAndPartitionsCountOnce) {
  discover::DrmInventory drm;
  using discover::DrmVendor;
  drm.gpus = {
      drm_gpu(DrmVendor::amd, "0000:05:00.0", 0x74a1), drm_gpu(DrmVendor::amd, "0000:26:00.0", 0x74a1),
      drm_gpu(DrmVendor::amd, "0000:26:00.0", 0x74a1, 1), drm_gpu(DrmVendor::intel, "0000:4d:00.0", 0x56c0)};
  EXPECT_EQ(amd_labels(drm), (Labels{{"amd.com/gpu.device-id", "74a1"}}));
  drm.gpus.push_back(drm_gpu(DrmVendor::amd, "0000:46:00.0", 0x740f));
  EXPECT_EQ(amd_labels(drm),
            (Labels{{"amd.com/gpu.device-id.740f", "1"}, {"amd.com/gpu.device-id.74a1", "2"}}));
  EXPECT_EQ(amd_labels({}), Labels{});
}

// An AMD GPU (or a partition) with what sysfs and KFD said of it; 0 / "" for unknown.
discover::DrmGpu amd_gpu(std::string bus, std::string product, uint64_t vram_bytes, uint32_t simds,
                         uint32_t cus, uint32_t partition = 0) {
  auto g = drm_gpu(discover::DrmVendor::amd, std::move(bus), 0x74a1, partition);
  g.product_name = std::move(product);
  const auto known = [](auto v) { return v != 0 ? std::optional(v) : std::nullopt; };
  g.vram_bytes = known(vram_bytes);
  g.simd_count = known(simds);
  g.cu_count = known(cus);
  return g;
}

constexpr uint64_t k_gib = 1024ULL * 1024 * 1024;

TEST(AmdLabels, ProductVramSimdsAndCusTheLabellersWay) {
  discover::DrmInventory drm;
  drm.gpus = {amd_gpu("0000:05:00.0", "AMD Instinct MI300X OAM", 192 * k_gib, 1216, 304),
              amd_gpu("0000:26:00.0", "AMD Instinct MI300X OAM", 192 * k_gib, 1216, 304)};
  EXPECT_EQ(amd_labels(drm), (Labels{{"amd.com/gpu.cu-count", "304"},
                                     {"amd.com/gpu.device-id", "74a1"},
                                     {"amd.com/gpu.product-name", "AMD_Instinct_MI300X_OAM"},
                                     {"amd.com/gpu.simd-count", "1216"},
                                     {"amd.com/gpu.vram", "192G"}}));
  // A GPU in CPX mode: its product counts once (per PCI device), its partitions' memory and CUs each.
  for (uint32_t p = 0; p < 2; ++p) {
    drm.gpus.push_back(amd_gpu("0000:46:00.0", "AMD Instinct MI300X OAM", 24 * k_gib, 152, 38, p));
  }
  EXPECT_EQ(amd_labels(drm), (Labels{{"amd.com/gpu.cu-count.304", "2"},
                                     {"amd.com/gpu.cu-count.38", "2"},
                                     {"amd.com/gpu.device-id", "74a1"},
                                     {"amd.com/gpu.product-name", "AMD_Instinct_MI300X_OAM"},
                                     {"amd.com/gpu.simd-count.1216", "2"},
                                     {"amd.com/gpu.simd-count.152", "2"},
                                     {"amd.com/gpu.vram.192G", "2"},
                                     {"amd.com/gpu.vram.24G", "2"}}));
}

TEST(AmdLabels, UnknownValuesAreNotCountedAndNoneKnownMeansNoLabel) {
  discover::DrmInventory drm;
  drm.gpus = {amd_gpu("0000:05:00.0", "", 0, 0, 0)};  // no product_name, no KFD
  EXPECT_EQ(amd_labels(drm), (Labels{{"amd.com/gpu.device-id", "74a1"}}));
  // A second GPU that is known: its values alone, as the labeller skips the GPUs it cannot read.
  drm.gpus.push_back(amd_gpu("0000:26:00.0", "Radeon Pro W7900 (Navi 31)", 48 * k_gib, 384, 96));
  EXPECT_EQ(amd_labels(drm), (Labels{{"amd.com/gpu.cu-count", "96"},
                                     {"amd.com/gpu.device-id", "74a1"},
                                     {"amd.com/gpu.product-name", "Radeon_Pro_W7900_Navi_31"},
                                     {"amd.com/gpu.simd-count", "384"},
                                     {"amd.com/gpu.vram", "48G"}}));
}

TEST(AmdLabels, VramIsWholeGibRoundedHalfUp) {
  constexpr uint64_t mib = 1024ULL * 1024;
  const std::pair<uint64_t, const char*> cases[] = {
      {68702699520, "64G"},    // an MI210: 65520 MiB
      {205822885888, "192G"},  // 196288 MiB: 191.69 GiB
      {1535 * mib, "1G"},      // 1.499 GiB
      {1536 * mib, "2G"},      // 1.5 GiB: half rounds up
      {1536 * mib - 1, "1G"},  // whole MiB first: 1535 MiB
      {511 * mib, "0G"},       // the labeller's "0G" for under half a GiB
  };
  for (const auto& [bytes, label] : cases) {
    discover::DrmInventory drm;
    drm.gpus = {amd_gpu("0000:05:00.0", "", bytes, 0, 0)};
    EXPECT_EQ(amd_labels(drm).at("amd.com/gpu.vram"), label) << bytes;
  }
}

TEST(AmdLabels, AProductNameNoLabelCanHoldIsLeftOutWithAWarning) {
  discover::DrmInventory drm;
  drm.gpus = {amd_gpu("0000:05:00.0", "AMD Instinct MI300X/OAM", 0, 0, 0),
              amd_gpu("0000:26:00.0", "AMD Instinct MI300X OAM", 0, 0, 0)};
  std::vector<std::string> warnings;
  const auto labels = node_labels(inventory({}), {}, {}, warnings, drm).value();
  EXPECT_EQ(labels, (Labels{{"amd.com/gpu.device-id", "74a1"},
                            {"amd.com/gpu.product-name.AMD_Instinct_MI300X_OAM", "1"}}));
  EXPECT_EQ(
      warnings,
      std::vector<std::string>{
          "label \"amd.com/gpu.product-name.AMD_Instinct_MI300X/OAM\" left out: not a valid label name"});
}

TEST(IntelLabels, DeviceIdsByClassAndTheProductOfNfdsRules) {
  discover::DrmInventory drm;
  using discover::DrmVendor;
  drm.gpus = {drm_gpu(DrmVendor::intel, "0000:4d:00.0", 0x56c0),
              drm_gpu(DrmVendor::intel, "0000:ca:00.0", 0x56c0),
              drm_gpu(DrmVendor::amd, "0000:05:00.0", 0x74a1)};
  HardwareFacts facts;
  facts.pci_classes = {{"0000:4d:00.0", 0x038000}, {"0000:ca:00.0", 0x038000}, {"0000:05:00.0", 0x120000}};
  EXPECT_EQ(intel_labels(drm, facts), (Labels{{"gpu.intel.com/device-id.0380-56c0.count", "2"},
                                              {"gpu.intel.com/device-id.0380-56c0.present", "true"},
                                              {"gpu.intel.com/device.count", "2"},
                                              {"gpu.intel.com/family", "Flex_Series"},
                                              {"gpu.intel.com/product", "Flex_170"}}));
  // A Flex 140 beside them: two products, one family; an Arc in display class; one GPU of unknown class.
  drm.gpus.push_back(drm_gpu(DrmVendor::intel, "0000:03:00.0", 0x56c1));
  drm.gpus.push_back(drm_gpu(DrmVendor::intel, "0000:04:00.0", 0x56a0));
  facts.pci_classes["0000:04:00.0"] = 0x030000;
  EXPECT_EQ(intel_labels(drm, facts), (Labels{{"gpu.intel.com/device-id.0300-56a0.count", "1"},
                                              {"gpu.intel.com/device-id.0300-56a0.present", "true"},
                                              {"gpu.intel.com/device-id.0380-56c0.count", "2"},
                                              {"gpu.intel.com/device-id.0380-56c0.present", "true"}}));
}

TEST(Labels, ArchitectureFamiliesFollowGfd) {
  const std::pair<discover::ComputeCapability, const char*> cases[] = {
      {{3, 7}, "kepler"},       {{6, 0}, "pascal"}, {{7, 0}, "volta"},      {{7, 2}, "volta"},
      {{7, 5}, "turing"},       {{8, 0}, "ampere"}, {{8, 6}, "ampere"},     {{8, 7}, "ampere"},
      {{8, 9}, "ada-lovelace"}, {{9, 0}, "hopper"}, {{10, 0}, "blackwell"}, {{12, 0}, "blackwell"}};
  for (const auto& [cc, family] : cases) {
    EXPECT_EQ(architecture_family(cc), std::optional<std::string_view>(family))
        << cc.major << "." << cc.minor;
  }
  EXPECT_EQ(architecture_family({4, 0}), std::nullopt);
  EXPECT_EQ(architecture_family({11, 0}), std::nullopt);
}

TEST(Labels, SanitiseDropsOddCharactersAndJoinsWords) {
  EXPECT_EQ(sanitise("NVIDIA A100-SXM4-40GB"), "NVIDIA-A100-SXM4-40GB");
  EXPECT_EQ(sanitise("  NVIDIA  H100 80GB HBM3 "), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(sanitise("Quadro RTX 8000 (rev. a1)/x"), "Quadro-RTX-8000-rev.-a1x");
  EXPECT_EQ(sanitise("$$$"), "");
}

TEST(Labels, InvalidKeysAndValuesAreDroppedWithAWarning) {
  Labels labels{{"nvidia.com/gpu.product", "-starts-with-dash"},
                {"nvidia.com/gpu.machine", std::string(64, 'a')},
                {"Bad_Prefix.com/x", "1"},
                {"nvidia.com/gpu.count", "2"},
                {"nvidia.com/gpu.sharing-strategy", ""}};
  std::vector<std::string> warnings;
  drop_invalid(labels, warnings);
  EXPECT_EQ(labels, (Labels{{"nvidia.com/gpu.count", "2"}, {"nvidia.com/gpu.sharing-strategy", ""}}));
  EXPECT_EQ(warnings.size(), 3u);
  EXPECT_EQ(warnings.front(), "label \"Bad_Prefix.com/x\" left out: not a valid label name");
}

TEST(Labels, FormatsAreSortedLinesAndAJsonObject) {
  const Labels labels{{"nvidia.com/gpu.count", "2"}, {"nvidia.com/gpu.a", "x y"}};
  EXPECT_EQ(format_nfd(labels), "nvidia.com/gpu.a=x y\nnvidia.com/gpu.count=2\n");
  EXPECT_EQ(format_json(labels),
            "{\n  \"nvidia.com/gpu.a\": \"x y\",\n  \"nvidia.com/gpu.count\": \"2\"\n}\n");
  EXPECT_EQ(format_nfd({}), "");
  EXPECT_EQ(format_json({}), "{}\n");
}

}  // namespace
}  // namespace gpuctk::labels
