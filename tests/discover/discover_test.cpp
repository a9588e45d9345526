// Discovery over materialised fixture hosts: both GPU paths (NVML through the mock, /proc), MIG devices,
// device nodes, driver files, and the errors a broken host must give.
#include "discover/discover.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

#include "fixtures/builder/hosts.hpp"

namespace gpuctk::discover {
namespace {

fixture::Fixture materialise_or_die(std::string_view name) {
  auto fixture = fixture::materialise_temp(name);
  if (!fixture) {
    ADD_FAILURE() << fixture.error().message;
    std::abort();
  }
  return std::move(*fixture);
}

DiscoverOptions options_for(const fixture::Fixture& f, Mode mode) {
  DiscoverOptions options;
  options.driver_root = f.host.driver_root;
  options.dev_root = f.host.dev_root;
  options.mode = mode;
  return options;
}

#define SKIP_WITHOUT_REAL_NODES(f)                                                      \
  if (!(f).host.nodes_are_real) {                                                      \
    GTEST_SKIP() << "device nodes need root to mknod; this fixture has regular files"; \
  }

const DriverFile* find_file(const Inventory& inv, std::string_view container_path) {
  const auto it = std::ranges::find(inv.files, container_path, &DriverFile::container_path);
  return it == inv.files.end() ? nullptr : &*it;
}

TEST(Discover, T4InNvmlModeReadsTheManifestThroughTheMockNvml) {
  auto f = materialise_or_die("t4-debian");
  SKIP_WITHOUT_REAL_NODES(f);
  ASSERT_TRUE(f.host.nvml_is_mock);
  auto inv = discover(options_for(f, Mode::nvml));
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->gpu_source, GpuSource::nvml);
  EXPECT_EQ(inv->driver_version, "535.183.01");
  EXPECT_EQ(inv->cuda_version, "12.2");
  EXPECT_EQ(inv->kernel_module, KernelModule::proprietary);
  ASSERT_EQ(inv->gpus.size(), 1u);
  const auto& gpu = inv->gpus[0];
  EXPECT_EQ(gpu.uuid, f.manifest.gpus[0].uuid);
  EXPECT_EQ(gpu.bus_id, "0000:00:1e.0");
  EXPECT_EQ(gpu.node.path, "/dev/nvidia0");
  EXPECT_EQ(gpu.node.host_path, f.host.dev_root + "/dev/nvidia0");
  EXPECT_EQ(gpu.node.major, 195u);
  EXPECT_EQ(gpu.node.minor, 0u);
  ASSERT_EQ(gpu.drm_nodes.size(), 2u);
  EXPECT_EQ(gpu.drm_nodes[0].path, "/dev/dri/card1");
  EXPECT_EQ(gpu.drm_nodes[1].path, "/dev/dri/renderD128");
  ASSERT_EQ(gpu.by_path_links.size(), 2u);
  EXPECT_EQ(gpu.by_path_links[0], (Symlink{"../card1", "/dev/dri/by-path/pci-0000:00:1e.0-card"}));

  std::vector<std::string> control;
  for (const auto& n : inv->control_nodes) {
    control.push_back(n.path);
  }
  EXPECT_EQ(control, (std::vector<std::string>{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                               "/dev/nvidia-modeset"}));

  const auto* cuda = find_file(*inv, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01");
  ASSERT_NE(cuda, nullptr);
  EXPECT_EQ(cuda->kind, FileKind::library);
  EXPECT_EQ(cuda->capability, Capability::compute);
  const auto* cuda32 = find_file(*inv, "/usr/lib/i386-linux-gnu/libcuda.so.535.183.01");
  ASSERT_NE(cuda32, nullptr);
  EXPECT_EQ(cuda32->kind, FileKind::library32);
  const auto* vdpau = find_file(*inv, "/usr/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.535.183.01");
  ASSERT_NE(vdpau, nullptr);
  EXPECT_EQ(vdpau->capability, Capability::video);
  const auto* smi = find_file(*inv, "/usr/bin/nvidia-smi");
  ASSERT_NE(smi, nullptr);
  EXPECT_EQ(smi->capability, Capability::utility);
  const auto* icd = find_file(*inv, "/etc/vulkan/icd.d/nvidia_icd.json");
  ASSERT_NE(icd, nullptr) << "the Vulkan ICD goes to its canonical container path";
  EXPECT_EQ(icd->host_path, f.host.driver_root + "/usr/share/vulkan/icd.d/nvidia_icd.json");
  EXPECT_EQ(inv->library_dirs,
            (std::vector<std::string>{"/usr/lib/i386-linux-gnu", "/usr/lib/x86_64-linux-gnu"}));
  EXPECT_NE(std::ranges::find(inv->library_links,
                              Symlink{"libcuda.so.535.183.01", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"}),
            inv->library_links.end());
  EXPECT_NE(std::ranges::find(inv->library_links, Symlink{"libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so"}),
            inv->library_links.end());
  // Sorted by container path, no duplicates.
  EXPECT_TRUE(std::ranges::is_sorted(inv->files, {}, &DriverFile::container_path));
}

TEST(Discover, NvmlAndProcAgreeOnFullGpus) {
  auto f = materialise_or_die("dgx-a100");
  SKIP_WITHOUT_REAL_NODES(f);
  auto nvml = discover(options_for(f, Mode::nvml));
  ASSERT_TRUE(nvml) << nvml.error().message;
  auto proc = discover(options_for(f, Mode::proc));
  ASSERT_TRUE(proc) << proc.error().message;
  EXPECT_EQ(proc->gpu_source, GpuSource::proc);
  EXPECT_EQ(proc->driver_version, nvml->driver_version);
  ASSERT_EQ(proc->gpus.size(), 8u);
  ASSERT_EQ(nvml->gpus.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    const auto& a = nvml->gpus[i];
    const auto& b = proc->gpus[i];
    EXPECT_EQ(a.index, b.index);
    EXPECT_EQ(a.minor, b.minor);
    EXPECT_EQ(a.uuid, b.uuid);
    EXPECT_EQ(a.bus_id, b.bus_id);
    EXPECT_EQ(a.node, b.node);
    EXPECT_EQ(a.drm_nodes, b.drm_nodes);
    EXPECT_EQ(a.mig_enabled, b.mig_enabled) << "GPU " << i;
    EXPECT_EQ(a.mig_enabled, i >= 4);
  }
  EXPECT_EQ(nvml->files, proc->files);
  EXPECT_EQ(nvml->control_nodes, proc->control_nodes);
}

TEST(Discover, MigDevicesCarryTheirCapabilityNodesFromMigMinors) {
  auto f = materialise_or_die("dgx-a100");
  SKIP_WITHOUT_REAL_NODES(f);
  auto inv = discover(options_for(f, Mode::nvml));
  ASSERT_TRUE(inv) << inv.error().message;
  size_t migs = 0;
  for (const auto& gpu : inv->gpus) {
    migs += gpu.mig_devices.size();
    for (const auto& mig : gpu.mig_devices) {
      // gpu<M>/gi<G>/access is numbered 3 + M*135 + G*9 and its ci<C> follows it (mig-minors layout).
      const uint32_t gi_minor = 3 + gpu.minor * 135 + mig.gi * 9;
      EXPECT_EQ(mig.gi_access.path, "/dev/nvidia-caps/nvidia-cap" + std::to_string(gi_minor));
      EXPECT_EQ(mig.ci_access.path, "/dev/nvidia-caps/nvidia-cap" + std::to_string(gi_minor + 1 + mig.ci));
      EXPECT_TRUE(mig.uuid.starts_with("MIG-")) << mig.uuid;
      EXPECT_FALSE(mig.profile.empty());
    }
  }
  size_t expected = 0;
  for (const auto& gpu : f.manifest.gpus) {
    expected += gpu.mig_devices.size();
  }
  EXPECT_EQ(migs, expected);
  EXPECT_GT(migs, 0u);
}

TEST(Discover, MissingMigCapabilityNodeIsAnErrorNotAPartialDevice) {
  auto f = materialise_or_die("dgx-a100");
  SKIP_WITHOUT_REAL_NODES(f);
  auto inv = discover(options_for(f, Mode::nvml));
  ASSERT_TRUE(inv) << inv.error().message;
  const auto& victim = inv->gpus[4].mig_devices.front();
  ASSERT_EQ(::unlink(victim.ci_access.host_path.c_str()), 0);
  auto broken = discover(options_for(f, Mode::nvml));
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().message,
            "MIG device 4:" + std::to_string(victim.index) + " (" + victim.uuid + "): gpu4/gi" +
                std::to_string(victim.gi) + "/ci" + std::to_string(victim.ci) + "/access: capability node " +
                victim.ci_access.host_path + " missing");
}

TEST(Discover, DriverContainerKeepsTheDriverRootOnHostPathsOnly) {
  auto f = materialise_or_die("driver-container");
  SKIP_WITHOUT_REAL_NODES(f);
  ASSERT_NE(f.host.driver_root, f.host.dev_root);
  auto inv = discover(options_for(f, Mode::automatic));
  ASSERT_TRUE(inv) << inv.error().message;
  ASSERT_FALSE(inv->files.empty());
  for (const auto& file : inv->files) {
    EXPECT_TRUE(file.host_path.starts_with(f.host.driver_root + "/")) << file.host_path;
    EXPECT_FALSE(file.container_path.starts_with(f.host.root)) << file.container_path;
  }
  EXPECT_EQ(inv->gpus.at(0).node.host_path, f.host.dev_root + "/dev/nvidia0");
}

TEST(Discover, EmptyRootHasNoDriver) {
  fixture::Fixture f = materialise_or_die("t4-debian");
  const std::string empty = f.temp.path() + "/empty";
  std::filesystem::create_directories(empty);
  DiscoverOptions options;
  options.driver_root = empty;
  options.dev_root = empty;
  options.mode = Mode::automatic;
  auto inv = discover(options);
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message, "no NVIDIA driver version: tried NVML, " + empty + "/proc/driver/nvidia/version and " +
                                     "libcuda.so.<version> in " + empty + "/etc/ld.so.cache");
}

TEST(Discover, FailingNvmlIsAnErrorInAutoModeNotASilentFallback) {
  auto f = materialise_or_die("t4-debian");
  ASSERT_FALSE(f.host.nvml_config.empty());
  std::ofstream(f.host.nvml_config, std::ios::app) << "fail\tinit=NVML_ERROR_DRIVER_NOT_LOADED\n";
  auto inv = discover(options_for(f, Mode::automatic));
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message, "nvml: nvmlInit_v2: Driver Not Loaded");
  // proc mode never loads NVML, so the same host still works there.
  if (f.host.nodes_are_real) {
    EXPECT_TRUE(discover(options_for(f, Mode::proc)));
  }
}

TEST(Discover, NvmlModeWithoutTheLibraryNamesWhatWasSearched) {
  auto f = materialise_or_die("t4-debian");
  for (const auto& dir : f.host.library_dirs) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().filename().string().starts_with("libnvidia-ml.so")) {
        std::filesystem::remove(entry.path());
      }
    }
  }
  auto inv = discover(options_for(f, Mode::nvml));
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message, "libnvidia-ml.so.1: not found under " + f.host.driver_root +
                                     " (ld.so.cache and standard library directories)");
}

TEST(Discover, ManagementModeAddsCapsImexAndNvswitchNodes) {
  auto f = materialise_or_die("dgx-a100");
  SKIP_WITHOUT_REAL_NODES(f);
  auto inv = discover(options_for(f, Mode::management));
  ASSERT_TRUE(inv) << inv.error().message;
  std::vector<std::string> paths;
  for (const auto& n : inv->management_nodes) {
    paths.push_back(n.path);
  }
  EXPECT_TRUE(std::ranges::is_sorted(paths));
  EXPECT_NE(std::ranges::find(paths, "/dev/nvidia-caps/nvidia-cap1"), paths.end());
  EXPECT_NE(std::ranges::find(paths, "/dev/nvidia-caps-imex-channels/channel0"), paths.end());
  EXPECT_NE(std::ranges::find(paths, "/dev/nvidia-nvswitchctl"), paths.end());
  EXPECT_NE(std::ranges::find(paths, "/dev/nvidia-nvswitch0"), paths.end());
}

TEST(Discover, H100OpenModuleRhelLayoutWithGspFirmware) {
  auto f = materialise_or_die("h100-rhel");
  SKIP_WITHOUT_REAL_NODES(f);
  auto inv = discover(options_for(f, Mode::proc));
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->kernel_module, KernelModule::open);
  EXPECT_EQ(inv->driver_version, "580.95.05");
  EXPECT_NE(find_file(*inv, "/usr/lib64/libcuda.so.580.95.05"), nullptr);
  const auto* fw = find_file(*inv, "/lib/firmware/nvidia/580.95.05/gsp_ga10x.bin");
  ASSERT_NE(fw, nullptr);
  EXPECT_EQ(fw->kind, FileKind::firmware);
}

}  // namespace
}  // namespace gpuctk::discover
