// AMD and Intel discovery: the KFD properties parser, and whole fixture hosts (an 8-GPU MI300X node with a
// partitioned GPU, a Flex 170 node, a mixed NVIDIA + Intel host) with the ways a real host departs from
// them (another driver bound, a missing node, KFD naming an unknown device, a malformed properties file).
#include "discover/drm_gpus.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fixtures/builder/hosts.hpp"
#include "support/fixture_host.hpp"
#include "util/file.hpp"

namespace gpuctk::discover {
namespace {

namespace fs = std::filesystem;

const std::vector<DrmVendor> k_both{DrmVendor::amd, DrmVendor::intel};

using test::materialise_or_die;

std::vector<std::string> paths_of(const DrmGpu& gpu) {
  std::vector<std::string> paths;
  for (const auto& node : gpu.nodes) {
    paths.push_back(node.path);
  }
  return paths;
}

TEST(KfdProperties, ReadsTheFieldsThatMatter) {
  const auto p = parse_kfd_properties(
      "cpu_cores_count 0\nsimd_count 152\nsimd_per_cu 4\nlocation_id 17920\ndomain 0\n"
      "drm_render_minor 130\n\nunique_id 6558016433397009142\nnum_xcc 1\n");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->simd_count, 152U);
  EXPECT_EQ(p->simd_per_cu, 4U);
  EXPECT_EQ(p->drm_render_minor, 130U);
  EXPECT_EQ(p->location_id, 17920U);
  EXPECT_EQ(p->domain, 0U);
  EXPECT_EQ(p->unique_id, 6558016433397009142ULL);
  EXPECT_EQ(kfd_bus_id(*p), "0000:46:00.0");  // 17920 = 0x4600: bus 0x46, device 0, function 0
}

TEST(KfdProperties, BusIdHasDeviceAndDomainAndFunctionZero) {
  KfdProperties p;
  p.domain = 0x10000;                          // Intel VMD domains are wider than four digits
  p.location_id = (0xe5 << 8) | (3 << 3) | 0;  // e5:03.0
  EXPECT_EQ(kfd_bus_id(p), "10000:e5:03.0");
  // The partitions of a CPX-mode MI300X carry their index in the function bits (real topology: 1280,
  // 1281, ...): all of them belong to PCI device 05:00.0.
  for (uint32_t partition = 0; partition < 8; ++partition) {
    p.domain = 0;
    p.location_id = 0x500 | partition;
    EXPECT_EQ(kfd_bus_id(p), "0000:05:00.0") << partition;
  }
}

TEST(KfdProperties, MissingFieldsAreZero) {
  const auto p = parse_kfd_properties("cpu_cores_count 96\n");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->drm_render_minor, 0U);
  EXPECT_EQ(p->unique_id, 0U);
  EXPECT_EQ(p->simd_count, 0U);
  EXPECT_EQ(p->simd_per_cu, 0U);
}

TEST(KfdMemBank, ReadsTheSizeAndRejectsMalformedLines) {
  const auto bank =
      parse_kfd_mem_bank("heap_type 1\nsize_in_bytes 206158430208\nflags 0\nwidth 8192\nmem_clk_max 1300\n");
  ASSERT_TRUE(bank) << bank.error().message;
  EXPECT_EQ(bank->size_in_bytes, 206158430208ULL);
  EXPECT_EQ(parse_kfd_mem_bank("heap_type 1\n")->size_in_bytes, 0U);
  EXPECT_EQ(parse_kfd_mem_bank("heap_type 1\nsize_in_bytes 192G\n").error().message,
            "line 2: expected \"<name> <decimal value>\", got \"size_in_bytes 192G\"");
}

TEST(KfdProperties, RejectsMalformedLines) {
  EXPECT_EQ(parse_kfd_properties("simd_count 4\ndrm_render_minor\n").error().message,
            "line 2: expected \"<name> <decimal value>\", got \"drm_render_minor\"");
  EXPECT_EQ(parse_kfd_properties("unique_id -1\n").error().message,
            "line 1: expected \"<name> <decimal value>\", got \"unique_id -1\"");
  EXPECT_EQ(parse_kfd_properties("drm_render_minor 4294967296\n").error().message,
            "line 1: drm_render_minor 4294967296 is out of range");
  EXPECT_EQ(parse_kfd_properties("cpu_cores_count 0\nsimd_count 4294967296\n").error().message,
            "line 2: simd_count 4294967296 is out of range");
}

TEST(AmdUuid, IsUpperCaseHexWithPrefixAndNoPadding) {
  EXPECT_EQ(amd_uuid(0x5b03e7c28d914af6ULL), "0x5B03E7C28D914AF6");
  EXPECT_EQ(amd_uuid(0x1aULL), "0x1A");
  EXPECT_EQ(amd_uuid(0), "");
}

TEST(DrmGpus, Mi300xNodeHasEightGpusAndEightPartitionsOfGpu2) {
  auto f = materialise_or_die("mi300x-amd");
  if (!f.host.nodes_are_real) {
    GTEST_SKIP() << "needs root to mknod char devices";
  }
  const auto inv = discover_drm_gpus(f.host.dev_root, k_both);
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->warnings, std::vector<std::string>{});
  ASSERT_EQ(inv->gpus.size(), 15U);  // 7 whole GPUs + 8 partitions
  // By bus id, partitions by render minor.
  const DrmGpu& first = inv->gpus[0];
  EXPECT_EQ(first.vendor, DrmVendor::amd);
  EXPECT_EQ(first.bus_id, "0000:05:00.0");
  EXPECT_EQ(first.driver, "amdgpu");
  EXPECT_EQ(first.device_id, 0x74a1);
  EXPECT_EQ(first.uuid, "0x2C9E4B6D10F58A31");
  EXPECT_EQ(first.kfd_gpu_id, 20413U);
  EXPECT_EQ(first.partitions, 1U);
  EXPECT_EQ(first.product_name, "AMD Instinct MI300X OAM");
  EXPECT_EQ(first.vram_bytes, 206158430208ULL);  // 192 GiB
  EXPECT_EQ(first.simd_count, 1216U);
  EXPECT_EQ(first.cu_count, 304U);
  EXPECT_EQ(paths_of(first), (std::vector<std::string>{"/dev/dri/card1", "/dev/dri/renderD128"}));
  EXPECT_EQ(first.by_path_links,
            (std::vector<Symlink>{{"../card1", "/dev/dri/by-path/pci-0000:05:00.0-card"},
                                  {"../renderD128", "/dev/dri/by-path/pci-0000:05:00.0-render"}}));
  for (uint32_t p = 0; p < 8; ++p) {
    const DrmGpu& part = inv->gpus[2 + p];
    SCOPED_TRACE(p);
    EXPECT_EQ(part.bus_id, "0000:46:00.0");
    EXPECT_EQ(part.uuid, "0x5B03E7C28D914AF6");  // every partition reports its GPU's unique_id
    EXPECT_EQ(part.partition, p);
    EXPECT_EQ(part.partitions, 8U);
    EXPECT_EQ(part.kfd_gpu_id, 31876U + p);
    // The PCI device's product name; the partition's own KFD node's share of memory and CUs.
    EXPECT_EQ(part.product_name, "AMD Instinct MI300X OAM");
    EXPECT_EQ(part.vram_bytes, 25769803776ULL);  // 24 GiB
    EXPECT_EQ(part.simd_count, 152U);
    EXPECT_EQ(part.cu_count, 38U);
  }
  // Partition 0 keeps the PCI device's nodes; partition 1 is the platform device amdgpu_xcp_0.
  EXPECT_EQ(paths_of(inv->gpus[2]), (std::vector<std::string>{"/dev/dri/card3", "/dev/dri/renderD130"}));
  EXPECT_EQ(paths_of(inv->gpus[3]), (std::vector<std::string>{"/dev/dri/card9", "/dev/dri/renderD136"}));
  EXPECT_EQ(inv->gpus[3].by_path_links,
            (std::vector<Symlink>{{"../card9", "/dev/dri/by-path/platform-amdgpu_xcp_0-card"},
                                  {"../renderD136", "/dev/dri/by-path/platform-amdgpu_xcp_0-render"}}));
  EXPECT_EQ(inv->gpus[14].bus_id, "0000:e5:00.0");
  ASSERT_TRUE(inv->kfd);
  EXPECT_EQ(inv->kfd->path, "/dev/kfd");
  EXPECT_EQ(inv->kfd->major, 235U);
  EXPECT_EQ(inv->kfd->gid, 105U);
  // Only the vendors asked for are looked at.
  const auto intel_only = discover_drm_gpus(f.host.dev_root, {DrmVendor::intel});
  ASSERT_TRUE(intel_only) << intel_only.error().message;
  EXPECT_TRUE(intel_only->gpus.empty());
  EXPECT_FALSE(intel_only->kfd);
}

TEST(DrmGpus, IntelHostsAndTheMixedHost) {
  auto flex = materialise_or_die("flex170-intel");
  auto mixed = materialise_or_die("mixed-nvidia-intel");
  if (!flex.host.nodes_are_real) {
    GTEST_SKIP() << "needs root to mknod char devices";
  }
  const auto a = discover_drm_gpus(flex.host.dev_root, k_both);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->gpus.size(), 2U);
  EXPECT_EQ(a->gpus[0].vendor, DrmVendor::intel);
  EXPECT_EQ(a->gpus[0].driver, "i915");
  EXPECT_EQ(a->gpus[0].uuid, "");
  EXPECT_EQ(paths_of(a->gpus[1]), (std::vector<std::string>{"/dev/dri/card2", "/dev/dri/renderD129"}));
  EXPECT_FALSE(a->kfd);  // no AMD GPU: /dev/kfd is not looked for, and its absence is no warning
  EXPECT_EQ(a->warnings, std::vector<std::string>{});

  // The NVIDIA GPU's DRM nodes are NVIDIA's: only the xe-driven Flex 140 is an Intel GPU.
  const auto b = discover_drm_gpus(mixed.host.dev_root, k_both);
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_EQ(b->gpus.size(), 1U);
  EXPECT_EQ(b->gpus[0].driver, "xe");
  EXPECT_EQ(b->gpus[0].bus_id, "0000:03:00.0");
  EXPECT_EQ(paths_of(b->gpus[0]), (std::vector<std::string>{"/dev/dri/card0", "/dev/dri/renderD128"}));
}

TEST(DrmGpus, OtherDriversAreNotGpusAndMissingPiecesAreWarnings) {
  auto f = materialise_or_die("mi300x-amd");
  if (!f.host.nodes_are_real) {
    GTEST_SKIP() << "needs root to mknod char devices";
  }
  const fs::path root = f.host.dev_root;
  // GPU 0 handed to a VM: bound to vfio-pci, not amdgpu. Its KFD node now names no amdgpu device.
  const fs::path gpu0 = root / "sys/devices/pci0000:05/0000:05:00.0";
  fs::remove(gpu0 / "driver");
  fs::create_directory_symlink("../../../bus/pci/drivers/vfio-pci", gpu0 / "driver");
  // GPU 1's render node and /dev/kfd are gone.
  fs::remove(root / "dev/dri/renderD129");
  fs::remove(root / "dev/kfd");
  const auto inv = discover_drm_gpus(f.host.dev_root, k_both);
  ASSERT_TRUE(inv) << inv.error().message;
  ASSERT_EQ(inv->gpus.size(), 14U);
  EXPECT_EQ(inv->gpus[0].bus_id, "0000:26:00.0");
  EXPECT_EQ(paths_of(inv->gpus[0]), std::vector<std::string>{"/dev/dri/card2"});
  EXPECT_FALSE(inv->kfd);
  const std::string r = f.host.dev_root;
  EXPECT_EQ(inv->warnings,
            (std::vector<std::string>{
                "KFD GPU 20413 names 0000:05:00.0, which has no amdgpu DRM device in " + r +
                    "/sys/class/drm; skipped",
                r + "/dev/dri/renderD129: listed in " + r +
                    "/sys/devices/pci0000:26/0000:26:00.0/drm but missing; not injected",
                r + "/dev/kfd: missing (amdgpu loaded without KFD?); AMD devices get no compute node"}));
}

TEST(DrmGpus, WithoutKfdTheGpuIsWholeAndTheUuidComesFromSysfs) {
  auto f = materialise_or_die("mi300x-amd");
  if (!f.host.nodes_are_real) {
    GTEST_SKIP() << "needs root to mknod char devices";
  }
  fs::remove(fs::path(f.host.dev_root) / "sys/class/kfd/kfd");
  const auto inv = discover_drm_gpus(f.host.dev_root, k_both);
  ASSERT_TRUE(inv) << inv.error().message;
  // Without KFD nothing says GPU 2 is partitioned: its PCI device's own nodes make one GPU.
  ASSERT_EQ(inv->gpus.size(), 8U);
  EXPECT_EQ(inv->gpus[2].uuid, "0x5B03E7C28D914AF6");  // amdgpu's unique_id attribute (hex)
  EXPECT_EQ(inv->gpus[2].kfd_gpu_id, 0U);
  // The product name is sysfs'; memory and CU counts are KFD's: unknown.
  EXPECT_EQ(inv->gpus[2].product_name, "AMD Instinct MI300X OAM");
  EXPECT_EQ(inv->gpus[2].vram_bytes, std::nullopt);
  EXPECT_EQ(inv->gpus[2].simd_count, std::nullopt);
  EXPECT_EQ(inv->gpus[2].cu_count, std::nullopt);
  EXPECT_EQ(paths_of(inv->gpus[2]), (std::vector<std::string>{"/dev/dri/card3", "/dev/dri/renderD130"}));
}

TEST(DrmGpus, MalformedKfdPropertiesNameTheFile) {
  auto f = materialise_or_die("mi300x-amd");
  const std::string path = f.host.dev_root + "/sys/devices/virtual/kfd/kfd/topology/nodes/3/properties";
  fs::remove(path);
  std::ofstream(path) << "drm_render_minor 130\nlocation_id sixty\n";
  const auto inv = discover_drm_gpus(f.host.dev_root, k_both);
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message,
            f.host.dev_root +
                "/sys/devices/virtual/kfd/kfd/topology/nodes/3/properties: line 2: expected "
                "\"<name> <decimal value>\", got \"location_id sixty\"");
}

// Writes `text` over a materialised (read-only) sysfs file.
void overwrite(const std::string& path, std::string_view text) {
  fs::remove(path);
  std::ofstream(path) << text;
}

TEST(DrmGpus, MissingEmptyOrZeroAmdFactsAreUnknown) {
  auto f = materialise_or_die("mi300x-amd");
  if (!f.host.nodes_are_real) {
    GTEST_SKIP() << "needs root to mknod char devices";
  }
  const std::string r = f.host.dev_root;
  const std::string nodes = r + "/sys/devices/virtual/kfd/kfd/topology/nodes";
  // GPU 0 (KFD node 1): no product_name, no memory banks. GPU 1 (node 2): an empty product_name and
  // memory bank, and no simd_per_cu. GPU 3 (node 11): 0 SIMDs and a memory bank without a size.
  fs::remove(r + "/sys/devices/pci0000:05/0000:05:00.0/product_name");
  fs::remove_all(nodes + "/1/mem_banks");
  overwrite(r + "/sys/devices/pci0000:26/0000:26:00.0/product_name", "\n");
  overwrite(nodes + "/2/mem_banks/0/properties", "");
  auto properties = read_file(nodes + "/2/properties").value();
  properties.erase(properties.find("simd_per_cu 4\n"), 14);
  overwrite(nodes + "/2/properties", properties);
  properties = read_file(nodes + "/11/properties").value();
  properties.replace(properties.find("simd_count 1216\n"), 16, "simd_count 0\n");
  overwrite(nodes + "/11/properties", properties);
  overwrite(nodes + "/11/mem_banks/0/properties", "heap_type 1\nwidth 8192\n");
  const auto inv = discover_drm_gpus(r, k_both);
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->warnings, std::vector<std::string>{});
  ASSERT_EQ(inv->gpus.size(), 15U);
  const DrmGpu& gpu0 = inv->gpus[0];
  EXPECT_EQ(gpu0.product_name, "");
  EXPECT_EQ(gpu0.vram_bytes, std::nullopt);
  EXPECT_EQ(gpu0.simd_count, 1216U);
  const DrmGpu& gpu1 = inv->gpus[1];
  EXPECT_EQ(gpu1.product_name, "");
  EXPECT_EQ(gpu1.vram_bytes, std::nullopt);
  EXPECT_EQ(gpu1.simd_count, 1216U);
  EXPECT_EQ(gpu1.cu_count, std::nullopt);
  const DrmGpu& gpu3 = inv->gpus[10];
  EXPECT_EQ(gpu3.bus_id, "0000:65:00.0");
  EXPECT_EQ(gpu3.vram_bytes, std::nullopt);
  EXPECT_EQ(gpu3.simd_count, std::nullopt);
  EXPECT_EQ(gpu3.cu_count, std::nullopt);
  EXPECT_EQ(gpu3.product_name, "AMD Instinct MI300X OAM");
}

TEST(DrmGpus, MalformedKfdMemoryBankNamesTheFile) {
  auto f = materialise_or_die("mi300x-amd");
  const std::string path =
      f.host.dev_root + "/sys/devices/virtual/kfd/kfd/topology/nodes/1/mem_banks/0/properties";
  overwrite(path, "heap_type 1\nsize_in_bytes -1\n");
  const auto inv = discover_drm_gpus(f.host.dev_root, k_both);
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message,
            path + ": line 2: expected \"<name> <decimal value>\", got \"size_in_bytes -1\"");
}

TEST(DrmGpus, AHostWithoutDrmHasNoGpus) {
  auto f = materialise_or_die("t4-debian");
  const auto inv = discover_drm_gpus(f.host.dev_root, k_both);
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_TRUE(inv->gpus.empty());
  EXPECT_EQ(inv->searched, f.host.dev_root + "/sys/class/drm");
}

}  // namespace
}  // namespace gpuctk::discover
