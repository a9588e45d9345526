// Discovery over materialised fixture hosts: both GPU paths (NVML through the mock, /proc), MIG devices,
// device nodes, driver files, and the errors a broken host must give.
#include "discover/discover.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <system_error>

#include "cdi/spec_builder.hpp"
#include "discover/device_nodes.hpp"
#include "discover/driver_files.hpp"
#include "discover/host_fs.hpp"
#include "discover/nvml.hpp"
#include "fixtures/builder/hosts.hpp"
#include "support/fixture_host.hpp"

namespace gpuctk::discover {

// gtest prints a FileNeed in failures as this, not as bytes.
void PrintTo(const FileNeed& need, std::ostream* os) {
  static constexpr const char* k_kinds[] = {"always", "capability", "unknown"};
  *os << "{" << k_kinds[static_cast<int>(need.kind)] << ", " << capability_name(need.capability)
      << (need.is_32bit ? ", 32-bit}" : "}");
}

namespace {

using test::materialise_or_die;

using test::discover_options;

#define SKIP_WITHOUT_REAL_NODES(f)                                                     \
  if (!(f).host.nodes_are_real) {                                                      \
    GTEST_SKIP() << "device nodes need root to mknod; this fixture has regular files"; \
  }

// `check` on every fixture host, materialised, under its name; stops at the first fatal failure or skip.
void for_each_fixture_host(const std::function<void(const fixture::Fixture&)>& check) {
  const auto names = fixture::list_hosts();
  ASSERT_TRUE(names) << names.error().message;
  for (const auto& name : *names) {
    SCOPED_TRACE(name);
    const auto f = materialise_or_die(name);
    check(f);
    if (::testing::Test::HasFatalFailure() || ::testing::Test::IsSkipped()) {
      return;
    }
  }
}

// `check` on every fixture host and what proc-mode discovery found there; skips without real device nodes.
void for_each_discovered_host(const std::function<void(const fixture::Fixture&, const Inventory&)>& check) {
  for_each_fixture_host([&](const fixture::Fixture& f) {
    SKIP_WITHOUT_REAL_NODES(f);
    const auto inv = discover(discover_options(f, Mode::proc));
    ASSERT_TRUE(inv) << inv.error().message;
    check(f, *inv);
  });
}

const DriverFile* find_file(const Inventory& inv, std::string_view container_path) {
  const auto it = std::ranges::find(inv.files, container_path, &DriverFile::container_path);
  return it == inv.files.end() ? nullptr : &*it;
}

TEST(Discover, T4InNvmlModeReadsTheManifestThroughTheMockNvml) {
  auto f = materialise_or_die("t4-debian");
  SKIP_WITHOUT_REAL_NODES(f);
  ASSERT_TRUE(f.host.nvml_is_mock);
  auto inv = discover(discover_options(f, Mode::nvml));
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->gpu_source, GpuSource::nvml);
  EXPECT_EQ(inv->driver_version, "535.183.01");
  EXPECT_EQ(inv->cuda_version, "12.2");
  EXPECT_EQ(inv->kernel_module, KernelModule::proprietary);
  ASSERT_EQ(inv->gpus.size(), 1u);
  const auto& gpu = inv->gpus[0];
  EXPECT_EQ(gpu.uuid, f.manifest.gpus[0].uuid);
  EXPECT_EQ(gpu.bus_id, "0000:00:1e.0");
  EXPECT_EQ(gpu.brand, "Tesla");  // the manifest's brand and arch, as go-nvlib names them
  EXPECT_EQ(gpu.architecture, "Turing");
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
  // Every directory that holds a mounted library, vdpau/ included, is an update-ldcache folder.
  EXPECT_EQ(inv->library_dirs,
            (std::vector<std::string>{"/usr/lib/i386-linux-gnu", "/usr/lib/i386-linux-gnu/vdpau",
                                      "/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu/vdpau"}));
  EXPECT_NE(std::ranges::find(inv->library_links,
                              Symlink{"libcuda.so.535.183.01", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"}),
            inv->library_links.end());
  // The GBM backend link one directory down, as nvidia-ctk makes it.
  EXPECT_NE(std::ranges::find(inv->library_links, Symlink{"../libnvidia-allocator.so.1",
                                                          "/usr/lib/x86_64-linux-gnu/gbm/nvidia-drm_gbm.so"}),
            inv->library_links.end());
  EXPECT_NE(
      std::ranges::find(inv->library_links, Symlink{"libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so"}),
      inv->library_links.end());
  // Sorted by container path, no duplicates.
  EXPECT_TRUE(std::ranges::is_sorted(inv->files, {}, &DriverFile::container_path));
  // The host cache's entries for what is mounted, with its flags (libc6 + x86-64, libc6 alone for the
  // 32-bit library) and the container path of the SONAME link or development link the spec makes.
  for (const auto& want :
       {LibraryCacheEntry{"libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0x303, 0},
        LibraryCacheEntry{"libcuda.so.1", "/usr/lib/i386-linux-gnu/libcuda.so.1", 0x3, 0},
        LibraryCacheEntry{"libcuda.so", "/usr/lib/x86_64-linux-gnu/libcuda.so", 0x303, 0}}) {
    EXPECT_NE(std::ranges::find(inv->library_cache_entries, want), inv->library_cache_entries.end())
        << want.soname << " " << want.path;
  }
  EXPECT_TRUE(std::ranges::is_sorted(inv->library_cache_entries));
}

TEST(Discover, NvmlAndProcAgreeOnFullGpus) {
  auto f = materialise_or_die("dgx-a100");
  SKIP_WITHOUT_REAL_NODES(f);
  auto nvml = discover(discover_options(f, Mode::nvml));
  ASSERT_TRUE(nvml) << nvml.error().message;
  auto proc = discover(discover_options(f, Mode::proc));
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
    EXPECT_EQ(a.brand, "Tesla");
    EXPECT_EQ(a.architecture, "Ampere");
    EXPECT_EQ(b.brand, std::nullopt) << "proc mode has no NVML";
    EXPECT_EQ(b.architecture, std::nullopt);
  }
  EXPECT_EQ(nvml->files, proc->files);
  EXPECT_EQ(nvml->control_nodes, proc->control_nodes);
}

TEST(Discover, MigDevicesCarryTheirCapabilityNodesFromMigMinors) {
  auto f = materialise_or_die("dgx-a100");
  SKIP_WITHOUT_REAL_NODES(f);
  auto inv = discover(discover_options(f, Mode::nvml));
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
  auto inv = discover(discover_options(f, Mode::nvml));
  ASSERT_TRUE(inv) << inv.error().message;
  const auto& victim = inv->gpus[4].mig_devices.front();
  ASSERT_EQ(::unlink(victim.ci_access.host_path.c_str()), 0);
  auto broken = discover(discover_options(f, Mode::nvml));
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().message, "MIG device 4:" + std::to_string(victim.index) + " (" + victim.uuid +
                                        "): gpu4/gi" + std::to_string(victim.gi) + "/ci" +
                                        std::to_string(victim.ci) + "/access: capability node " +
                                        victim.ci_access.host_path + " missing");
}

TEST(Discover, DriverContainerKeepsTheDriverRootOnHostPathsOnly) {
  auto f = materialise_or_die("driver-container");
  SKIP_WITHOUT_REAL_NODES(f);
  ASSERT_NE(f.host.driver_root, f.host.dev_root);
  auto inv = discover(discover_options(f, Mode::automatic));
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
  // Nothing of NVML exists there, so the message does not claim it was tried.
  EXPECT_EQ(inv.error().message, "no NVIDIA driver version: tried " + empty +
                                     "/proc/driver/nvidia/version and libcuda.so.<version> or "
                                     "libnvidia-ml.so.<version> in the standard library directories of " +
                                     empty + " (none exists)");
}

// gpuctk-exporter opens NVML again after a driver reload: the library is found as discover() finds it.
TEST(Discover, FindsTheNvmlLibraryAsDiscoveryDoes) {
  auto f = materialise_or_die("t4-debian");
  ASSERT_TRUE(f.host.nvml_is_mock);
  auto library = find_nvml_library(f.host.driver_root);
  ASSERT_TRUE(library) << library.error().message;
  EXPECT_TRUE(library->starts_with(f.host.driver_root + "/")) << *library;
  auto nvml = Nvml::open(*library);  // the mock, which serves the fixture's GPU
  ASSERT_TRUE(nvml) << nvml.error().message;
  EXPECT_EQ(nvml->report().value().gpus.at(0).uuid, f.manifest.gpus[0].uuid);
}

TEST(Discover, NoNvmlLibrarySaysWhereItWasSought) {
  fixture::Fixture f = materialise_or_die("t4-debian");
  const std::string empty = f.temp.path() + "/empty";
  std::filesystem::create_directories(empty);
  auto library = find_nvml_library(empty);
  ASSERT_FALSE(library);
  EXPECT_EQ(library.error().message, "libnvidia-ml.so.1: not found under " + empty +
                                         " (ld.so.cache and standard library directories)");
}

// A mistyped root says so, instead of listing what was searched below it.
TEST(Discover, ARootThatDoesNotExistSaysSo) {
  fixture::Fixture f = materialise_or_die("t4-debian");
  DiscoverOptions options;
  options.driver_root = f.temp.path() + "/nonexistent";
  options.dev_root = f.host.dev_root;
  auto inv = discover(options);
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message, "driver root " + f.temp.path() + "/nonexistent does not exist");
  options.driver_root = f.host.driver_root;
  options.dev_root = f.host.driver_root + "/etc/ld.so.cache";
  inv = discover(options);
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message, "dev root " + options.dev_root + " is not a directory");
}

// The GPU Operator's driver container shows its root at /run/nvidia/driver: discovery at / finds the
// kernel module's version but no library, and says where the driver is.
TEST(Discover, ADriverContainerRootBelowTheDriverRootIsNamed) {
  auto f = materialise_or_die("driver-container");
  SKIP_WITHOUT_REAL_NODES(f);
  ASSERT_EQ(f.host.driver_root, f.host.root + "/run/nvidia/driver");
  DiscoverOptions options;
  options.driver_root = f.host.root;
  options.dev_root = f.host.dev_root;
  options.mode = Mode::proc;
  auto inv = discover(options);
  ASSERT_FALSE(inv);
  const std::string hint =
      "; " + f.host.driver_root + " is a driver container's root: use --driver-root " + f.host.driver_root;
  EXPECT_TRUE(inv.error().message.starts_with("no driver libraries (*.so.570.133.20) under " + f.host.root))
      << inv.error().message;
  EXPECT_TRUE(inv.error().message.ends_with(hint)) << inv.error().message;
  // An empty /run/nvidia/driver (the operator's mount point before its driver runs) is no hint.
  const std::string bare = f.temp.path() + "/bare";
  std::filesystem::create_directories(bare + "/run/nvidia/driver");
  options.driver_root = bare;
  options.dev_root = bare;
  inv = discover(options);
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message.find("driver container"), std::string::npos) << inv.error().message;
}

// --- The driver version without NVML and /proc: the library search --------------------------------

namespace fs = std::filesystem;

// A proc-mode host whose /proc/driver/nvidia/version is gone: the version must come from the libraries.
fixture::Fixture without_proc_version(std::string_view host) {
  auto f = materialise_or_die(host);
  fs::remove(f.host.dev_path("/proc/driver/nvidia/version"));
  return f;
}

std::vector<std::string> link_pairs(const Inventory& inv) {
  std::vector<std::string> out;
  for (const auto& l : inv.library_links) {
    out.push_back(l.target + "::" + l.link);
  }
  return out;
}

bool has(const std::vector<std::string>& v, std::string_view s) {
  return std::ranges::find(v, s) != v.end();
}

TEST(DiscoverDriverVersion, WithoutLdCacheTheDirectorySearchFindsLibcuda) {
  for (const std::string host : {"t4-debian", "h100-rhel"}) {  // Debian multiarch, /usr/lib64
    auto f = without_proc_version(host);
    SKIP_WITHOUT_REAL_NODES(f);
    ASSERT_FALSE(f.host.ld_cache.empty());
    fs::remove(f.host.ld_cache);
    auto inv = discover(discover_options(f, Mode::proc));
    ASSERT_TRUE(inv) << host << ": " << inv.error().message;
    EXPECT_EQ(inv->driver_version, f.manifest.driver.version) << host;
    EXPECT_EQ(inv->kernel_module, KernelModule::unknown) << host;
    EXPECT_NE(
        find_file(*inv,
                  fs::path(f.host.cuda_library).parent_path().string().substr(f.host.driver_root.size()) +
                      "/libcuda.so." + f.manifest.driver.version),
        nullptr)
        << host;
  }
}

TEST(DiscoverDriverVersion, RegularFileLibcudaSo1IsLookedBesideAndGetsItsLink) {
  auto f = without_proc_version("t4-debian");
  SKIP_WITHOUT_REAL_NODES(f);
  const fs::path dir = fs::path(f.host.cuda_library).parent_path();
  const std::string version = f.manifest.driver.version;
  fs::remove(dir / "libcuda.so.1");
  fs::copy_file(dir / ("libcuda.so." + version), dir / "libcuda.so.1");  // a copy, as some installers do
  auto inv = discover(discover_options(f, Mode::proc));
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->driver_version, version);
  const std::string cdir = dir.string().substr(f.host.driver_root.size());
  const auto pairs = link_pairs(*inv);
  EXPECT_TRUE(has(pairs, "libcuda.so." + version + "::" + cdir + "/libcuda.so.1"))
      << testing::PrintToString(pairs);
  EXPECT_TRUE(has(pairs, "libcuda.so.1::" + cdir + "/libcuda.so"));
  EXPECT_EQ(find_file(*inv, cdir + "/libcuda.so.1"), nullptr);  // the copy is not a driver file
}

TEST(DiscoverDriverVersion, MissingLibcudaLinksAreCreatedForTheContainer) {
  auto f = materialise_or_die("t4-debian");
  SKIP_WITHOUT_REAL_NODES(f);
  const fs::path dir = fs::path(f.host.cuda_library).parent_path();
  const std::string version = f.manifest.driver.version;
  const std::string cdir = dir.string().substr(f.host.driver_root.size());
  auto before = discover(discover_options(f, Mode::proc));
  ASSERT_TRUE(before) << before.error().message;
  fs::remove(dir / "libcuda.so.1");
  fs::remove(dir / "libcuda.so");
  auto inv = discover(discover_options(f, Mode::proc));
  ASSERT_TRUE(inv) << inv.error().message;
  const auto pairs = link_pairs(*inv);
  EXPECT_TRUE(has(pairs, "libcuda.so." + version + "::" + cdir + "/libcuda.so.1"))
      << testing::PrintToString(pairs);
  EXPECT_TRUE(has(pairs, "libcuda.so.1::" + cdir + "/libcuda.so"));
  // The same links as when the host had them, and each link name once.
  EXPECT_EQ(pairs, link_pairs(*before));
}

// The GBM backend link comes with libnvidia-allocator.so.<version>, as nvidia-ctk makes it, whether or not
// the host has one (Debian's packages keep theirs beside the library, not in gbm/), and once.
TEST(DiscoverDriverVersion, GbmLinkComesWithTheAllocatorWhateverTheHostHas) {
  auto f = materialise_or_die("t4-debian");
  SKIP_WITHOUT_REAL_NODES(f);
  const fs::path dir = fs::path(f.host.cuda_library).parent_path();
  const std::string cdir = dir.string().substr(f.host.driver_root.size());
  const std::string gbm = "../libnvidia-allocator.so.1::" + cdir + "/gbm/nvidia-drm_gbm.so";
  auto before = discover(discover_options(f, Mode::proc));
  ASSERT_TRUE(before) << before.error().message;
  ASSERT_TRUE(has(link_pairs(*before), gbm)) << testing::PrintToString(link_pairs(*before));
  fs::remove_all(dir / "gbm");
  auto inv = discover(discover_options(f, Mode::proc));
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(link_pairs(*inv), link_pairs(*before));
  // No allocator, no link.
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with("libnvidia-allocator.so")) {
      fs::remove(entry.path());
    }
  }
  auto without = discover(discover_options(f, Mode::proc));
  ASSERT_TRUE(without) << without.error().message;
  EXPECT_FALSE(has(link_pairs(*without), gbm));
}

// libnvidia-nvvm70.so.4 (NVVM 7.0, which older CUDA toolkits load) carries its own version, not the
// driver's: it is a driver library of compute all the same, as NVIDIA's v1.20 mounts it. The spec's
// NVIDIA_CTK_LIBCUDA_DIR is the directory of the driver's libraries (not its vdpau/).
TEST(DiscoverDriverVersion, LegacyNvvmIsMountedAndTheLibcudaDirIsKnown) {
  auto f = materialise_or_die("t4-debian");
  SKIP_WITHOUT_REAL_NODES(f);
  const fs::path dir = fs::path(f.host.cuda_library).parent_path();
  const std::string cdir = dir.string().substr(f.host.driver_root.size());
  std::ofstream(dir / "libnvidia-nvvm70.so.4") << "nvvm70";
  auto inv = discover(discover_options(f, Mode::proc));
  ASSERT_TRUE(inv) << inv.error().message;
  const auto* nvvm = find_file(*inv, cdir + "/libnvidia-nvvm70.so.4");
  ASSERT_NE(nvvm, nullptr);
  EXPECT_EQ(nvvm->kind, FileKind::library);
  EXPECT_EQ(nvvm->capability, std::optional<Capability>(Capability::compute));
  EXPECT_EQ(inv->driver_library_dirs, (std::vector<std::string>{cdir}));
  EXPECT_TRUE(std::ranges::any_of(inv->library_dirs, [](const std::string& d) {
    return d.ends_with("/vdpau");
  })) << "vdpau/ is an update-ldcache folder, not a libcuda directory";
}

// The RPM packages' Vulkan ICD is named for their architecture: discovery mounts the one of the driver's
// architecture (aarch64 on Arm, as NVIDIA's v1.20 looks for it there) and never another's.
TEST(DiscoverDriverFiles, TheVulkanIcdNamedForTheDriversArchitectureOnly) {
  auto f = materialise_or_die("t4-debian");
  SKIP_WITHOUT_REAL_NODES(f);
  const fs::path icds = fs::path(f.host.driver_root) / "usr/share/vulkan/icd.d";
  std::ofstream(icds / "nvidia_icd.x86_64.json") << "{}";
  std::ofstream(icds / "nvidia_icd.aarch64.json") << "{}";
  DriverFilesInput input;
  input.driver_root = f.host.driver_root;
  input.driver_version = f.manifest.driver.version;
  const auto mounted = [&](ldcache::Arch arch) {
    input.arch = arch;
    std::vector<std::string> warnings;
    auto found = discover_driver_files(input, warnings);
    EXPECT_TRUE(found) << found.error().message;
    std::vector<std::string> out;
    for (const auto& file : found ? found->files : std::vector<DriverFile>{}) {
      if (file.container_path.starts_with("/etc/vulkan/icd.d/")) {
        out.push_back(file.container_path);
      }
    }
    return out;
  };
  EXPECT_EQ(mounted(ldcache::Arch::aarch64),
            (std::vector<std::string>{"/etc/vulkan/icd.d/nvidia_icd.aarch64.json",
                                      "/etc/vulkan/icd.d/nvidia_icd.json"}));
  EXPECT_EQ(mounted(ldcache::Arch::x86_64),
            (std::vector<std::string>{"/etc/vulkan/icd.d/nvidia_icd.json",
                                      "/etc/vulkan/icd.d/nvidia_icd.x86_64.json"}));
  EXPECT_EQ(file_need("/etc/vulkan/icd.d/nvidia_icd.aarch64.json"),
            (FileNeed{FileNeed::Kind::capability, Capability::graphics, false}));
}

TEST(DiscoverDriverVersion, LibnvidiaMlWhenThereIsNoLibcuda) {
  auto f = without_proc_version("t4-debian");
  SKIP_WITHOUT_REAL_NODES(f);
  for (const auto& dir : f.host.library_dirs) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().filename().string().starts_with("libcuda.so")) {
        fs::remove(entry.path());
      }
    }
  }
  auto inv = discover(discover_options(f, Mode::proc));
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->driver_version, f.manifest.driver.version);
}

TEST(DiscoverDriverVersion, TwoVersionsOfLibcudaInOneDirectoryAreAnErrorNamingBoth) {
  auto f = without_proc_version("t4-debian");
  SKIP_WITHOUT_REAL_NODES(f);
  fs::remove(f.host.ld_cache);
  const fs::path dir = fs::path(f.host.cuda_library).parent_path();
  fs::copy_file(dir / ("libcuda.so." + f.manifest.driver.version), dir / "libcuda.so.470.256.02");
  auto inv = discover(discover_options(f, Mode::proc));
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message, dir.string() +
                                     ": libraries of several driver versions (libcuda.so.470.256.02, "
                                     "libcuda.so." +
                                     f.manifest.driver.version + "); cannot tell which is the driver's");
}

TEST(DiscoverDriverVersion, TheErrorSaysNvmlOnlyWhenNvmlWasTried) {
  auto f = without_proc_version("t4-debian");
  SKIP_WITHOUT_REAL_NODES(f);
  // NVML is there but cannot initialise, and no library carries a version in its name.
  std::ofstream(f.host.nvml_config, std::ios::app) << "fail\tinit=NVML_ERROR_DRIVER_NOT_LOADED\n";
  const fs::path nvml = f.host.nvml_library;
  const fs::path dir = nvml.parent_path();
  fs::rename(nvml, dir / "libnvidia-ml.so.mock");
  fs::remove(dir / "libnvidia-ml.so.1");
  fs::create_symlink("libnvidia-ml.so.mock", dir / "libnvidia-ml.so.1");
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with("libcuda.so")) {
      fs::remove(entry.path());
    }
  }
  const std::string proc = f.host.dev_path("/proc/driver/nvidia/version");
  auto automatic = discover(discover_options(f, Mode::automatic));
  ASSERT_FALSE(automatic);
  EXPECT_TRUE(automatic.error().message.starts_with("no NVIDIA driver version: tried NVML, " + proc +
                                                    ", the ld.so.cache and libcuda.so.<version> or "
                                                    "libnvidia-ml.so.<version> in "))
      << automatic.error().message;
  EXPECT_NE(automatic.error().message.find(dir.string()), std::string::npos) << automatic.error().message;
  auto proc_mode = discover(discover_options(f, Mode::proc));
  ASSERT_FALSE(proc_mode);
  EXPECT_TRUE(proc_mode.error().message.starts_with("no NVIDIA driver version: tried " + proc + ", the"))
      << proc_mode.error().message;
}

TEST(Discover, NoGpusNamesWhereTheyWereLookedFor) {
  auto f = materialise_or_die("t4-debian");
  SKIP_WITHOUT_REAL_NODES(f);
  fs::remove_all(f.host.dev_path("/proc/driver/nvidia/gpus"));
  auto inv = discover(discover_options(f, Mode::proc));
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_TRUE(inv->gpus.empty());
  EXPECT_EQ(inv->gpus_from, f.host.dev_path("/proc/driver/nvidia/gpus"));
  cdi::BuildOptions build;
  build.hook_path = "/usr/bin/gpuctk";
  auto spec = cdi::build_spec(*inv, build);
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().message,
            "no devices to generate: no GPUs in " + f.host.dev_path("/proc/driver/nvidia/gpus"));
  auto nvml = discover(discover_options(f, Mode::nvml));
  ASSERT_TRUE(nvml) << nvml.error().message;
  EXPECT_EQ(nvml->gpus_from, "NVML (" + f.host.nvml_library + ")");
}

TEST(Discover, NvmlThatCannotInitialiseFallsBackToProcInAutoModeOnlyWithOneWarning) {
  auto f = materialise_or_die("t4-debian");
  ASSERT_FALSE(f.host.nvml_config.empty());
  std::ofstream(f.host.nvml_config, std::ios::app) << "fail\tinit=NVML_ERROR_DRIVER_NOT_LOADED\n";
  auto strict = discover(discover_options(f, Mode::nvml));
  ASSERT_FALSE(strict);
  EXPECT_EQ(strict.error().message, "nvml: nvmlInit_v2: Driver Not Loaded");
  SKIP_WITHOUT_REAL_NODES(f);
  auto inv = discover(discover_options(f, Mode::automatic));
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->gpu_source, GpuSource::proc);
  EXPECT_EQ(std::count(inv->warnings.begin(), inv->warnings.end(),
                       "nvml: nvmlInit_v2: Driver Not Loaded; GPUs from /proc/driver/nvidia instead"),
            1);
  EXPECT_EQ(inv->warnings.size(), 1u) << testing::PrintToString(inv->warnings);
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
  auto inv = discover(discover_options(f, Mode::nvml));
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message, "libnvidia-ml.so.1: not found under " + f.host.driver_root +
                                     " (ld.so.cache and standard library directories)");
}

// Management mode takes the GPU nodes from /dev, caps and IMEX channels; NVSwitch nodes stay out
// (README, "Management specs").
TEST(Discover, ManagementModeAddsGpuCapsAndImexNodesButNotNvswitch) {
  auto f = materialise_or_die("dgx-a100");
  SKIP_WITHOUT_REAL_NODES(f);
  ASSERT_TRUE(fs::exists(f.host.dev_path("/dev/nvidia-nvswitchctl")));
  auto inv = discover(discover_options(f, Mode::management));
  ASSERT_TRUE(inv) << inv.error().message;
  std::vector<std::string> paths;
  for (const auto& n : inv->management_nodes) {
    paths.push_back(n.path);
  }
  EXPECT_TRUE(std::ranges::is_sorted(paths));
  EXPECT_TRUE(has(paths, "/dev/nvidia-caps/nvidia-cap1"));
  EXPECT_TRUE(has(paths, "/dev/nvidia-caps-imex-channels/channel0"));
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(has(paths, "/dev/nvidia" + std::to_string(i))) << i;
  }
  for (const auto& p : paths) {
    EXPECT_FALSE(p.starts_with("/dev/nvidia-nvswitch")) << p;
    EXPECT_NE(p, "/dev/nvidiactl");  // a control node, in the common edits
  }
}

// Without /proc/driver/nvidia/gpus (a GPU the driver did not bring up, a driver container's /proc) the
// management spec still has every GPU node of /dev.
TEST(Discover, ManagementModeWithoutProcGpusStillHasEveryGpuNode) {
  auto f = materialise_or_die("dgx-a100");
  SKIP_WITHOUT_REAL_NODES(f);
  fs::remove_all(f.host.dev_path("/proc/driver/nvidia/gpus"));
  auto inv = discover(discover_options(f, Mode::management));
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_TRUE(inv->gpus.empty());
  cdi::BuildOptions build;
  build.hook_path = "/usr/bin/gpuctk";
  build.management = true;
  auto spec = cdi::build_spec(*inv, build);
  ASSERT_TRUE(spec) << spec.error().message;
  ASSERT_EQ(spec->devices.size(), 1u);
  std::vector<std::string> paths;
  for (const auto& n : spec->devices[0].container_edits.device_nodes) {
    paths.push_back(n.path);
  }
  for (const auto& n : spec->container_edits.device_nodes) {
    paths.push_back(n.path);
  }
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(has(paths, "/dev/nvidia" + std::to_string(i))) << i << testing::PrintToString(paths);
  }
}

TEST(DeviceNodes, GpuNodeNames) {
  EXPECT_TRUE(is_gpu_node_name("nvidia0"));
  EXPECT_TRUE(is_gpu_node_name("nvidia17"));
  EXPECT_FALSE(is_gpu_node_name("nvidia"));
  EXPECT_FALSE(is_gpu_node_name("nvidiactl"));
  EXPECT_FALSE(is_gpu_node_name("nvidia-uvm"));
  EXPECT_FALSE(is_gpu_node_name("nvidia0a"));
  EXPECT_FALSE(is_gpu_node_name("nvidia-nvswitch0"));
}

TEST(Discover, H100OpenModuleRhelLayoutWithGspFirmware) {
  auto f = materialise_or_die("h100-rhel");
  SKIP_WITHOUT_REAL_NODES(f);
  auto inv = discover(discover_options(f, Mode::proc));
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->kernel_module, KernelModule::open);
  EXPECT_EQ(inv->driver_version, "580.95.05");
  EXPECT_NE(find_file(*inv, "/usr/lib64/libcuda.so.580.95.05"), nullptr);
  const auto* fw = find_file(*inv, "/lib/firmware/nvidia/580.95.05/gsp_ga10x.bin");
  ASSERT_NE(fw, nullptr);
  EXPECT_EQ(fw->kind, FileKind::firmware);
}

// ---------------------------------------------------------------------------------------------------
// Confinement to the driver root: every discovered file is resolved inside it (issue 9 item 3).

namespace fs = std::filesystem;

// Driver files of a materialised host, found without /dev (so without root): the 64-bit libraries of
// these hosts are in built-in directories, the cache is not needed.
DriverFiles driver_files_of(const fixture::Fixture& f, std::vector<std::string>& warnings) {
  DriverFilesInput input;
  input.driver_root = f.host.driver_root;
  input.driver_version = f.manifest.driver.version;
  auto files = discover_driver_files(input, warnings);
  if (!files) {
    ADD_FAILURE() << files.error().message;
    return {};
  }
  return std::move(*files);
}

const DriverFile* find_in(const std::vector<DriverFile>& files, std::string_view container_path) {
  const auto it = std::ranges::find(files, container_path, &DriverFile::container_path);
  return it == files.end() ? nullptr : &*it;
}

// Every host path is inside the driver root and has no link in it below the root: what the runtime
// bind-mounts is exactly the file discovery examined.
void expect_confined(const std::vector<DriverFile>& files, const std::string& driver_root) {
  const std::string root = fs::canonical(driver_root).string();
  for (const auto& file : files) {
    ASSERT_TRUE(file.host_path.starts_with(driver_root + "/")) << file.host_path;
    std::error_code error;
    const auto real = fs::canonical(file.host_path, error);
    if (error) {
      ADD_FAILURE() << file.container_path << " is mounted from " << file.host_path << ": "
                    << error.message();
      continue;
    }
    EXPECT_EQ(real.string(), root + file.host_path.substr(driver_root.size()))
        << file.container_path << " is mounted from " << file.host_path << ", which leads elsewhere";
  }
}

void bind_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof addr.sun_path) << path;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  EXPECT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  ::close(fd);
}

void replace_with_link(const std::string& path, const std::string& target) {
  fs::remove_all(path);
  fs::create_symlink(target, path);
}

bool contains(const std::vector<std::string>& lines, const std::string& line) {
  return std::ranges::find(lines, line) != lines.end();
}
#define EXPECT_CONTAINS(lines, line) \
  EXPECT_TRUE(contains(lines, line)) << "missing: " << (line) << "\nin: " << ::testing::PrintToString(lines)

TEST(DriverRoot, HostileLinksInADriverContainerNeverMountAHostFile) {
  auto f = materialise_or_die("driver-container");
  const std::string droot = f.host.driver_root;  // <root>/run/nvidia/driver
  const std::string root = f.host.root;
  const std::string version = f.manifest.driver.version;
  ASSERT_NE(droot, root);
  // Files of "the host", outside the driver root.
  std::ofstream(root + "/secret") << "host secret\n";
  fs::create_directories(root + "/hostlibs");
  std::ofstream(root + "/hostlibs/libvdpau_nvidia.so." + version) << "host library\n";
  fs::create_directories(root + "/hostfw");
  std::ofstream(root + "/hostfw/gsp_ga10x.bin") << "host firmware\n";
  fs::create_directories(root + "/hostrun");
  bind_socket(root + "/hostrun/socket");

  // An absolute link out of the root (a config file, the vdpau/ directory, the firmware directory, an
  // IPC socket's directory): inside the driver root it names something that is not there.
  replace_with_link(droot + "/usr/share/vulkan/icd.d/nvidia_icd.json", root + "/secret");
  replace_with_link(droot + "/usr/lib/x86_64-linux-gnu/vdpau", root + "/hostlibs");
  replace_with_link(droot + "/usr/lib/firmware/nvidia/" + version, root + "/hostfw");
  replace_with_link(droot + "/run/nvidia-persistenced", root + "/hostrun");
  // A relative link that climbs out: 4 levels up is the driver root, 3 more are <root>.
  replace_with_link(droot + "/usr/share/glvnd/egl_vendor.d/10_nvidia.json", "../../../../../../../secret");
  // A loop.
  replace_with_link(droot + "/usr/share/vulkan/implicit_layer.d/nvidia_layers.json", "nvidia_layers.json");
  // An absolute link inside the root is followed there, and the resolved file is what gets mounted.
  fs::create_directories(droot + "/usr/sbin");
  fs::rename(droot + "/usr/bin/nvidia-smi", droot + "/usr/sbin/nvidia-smi.real");
  fs::create_symlink("/usr/sbin/nvidia-smi.real", droot + "/usr/bin/nvidia-smi");

  std::vector<std::string> warnings;
  const auto found = driver_files_of(f, warnings);
  ASSERT_FALSE(found.files.empty());
  expect_confined(found.files, droot);

  EXPECT_EQ(find_in(found.files, "/etc/vulkan/icd.d/nvidia_icd.json"), nullptr);
  EXPECT_EQ(find_in(found.files, "/usr/share/glvnd/egl_vendor.d/10_nvidia.json"), nullptr);
  EXPECT_EQ(find_in(found.files, "/etc/vulkan/implicit_layer.d/nvidia_layers.json"), nullptr);
  EXPECT_EQ(find_in(found.files, "/usr/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so." + version), nullptr);
  EXPECT_EQ(find_in(found.files, "/lib/firmware/nvidia/" + version + "/gsp_ga10x.bin"), nullptr);
  EXPECT_EQ(find_in(found.files, "/run/nvidia-persistenced/socket"), nullptr);
  const auto* smi = find_in(found.files, "/usr/bin/nvidia-smi");
  ASSERT_NE(smi, nullptr);
  EXPECT_EQ(smi->host_path, droot + "/usr/sbin/nvidia-smi.real");
  // Everything else is still there.
  EXPECT_NE(find_in(found.files, "/usr/lib/x86_64-linux-gnu/libcuda.so." + version), nullptr);
  EXPECT_NE(find_in(found.files, "/etc/OpenCL/vendors/nvidia.icd"), nullptr);

  // Each refusal names the path and where it points, once.
  EXPECT_CONTAINS(warnings, (droot + "/usr/share/vulkan/icd.d/nvidia_icd.json -> " + root +
                             "/secret: no such file inside " + droot + "; skipped"));
  EXPECT_CONTAINS(warnings, (droot +
                             "/usr/share/glvnd/egl_vendor.d/10_nvidia.json -> "
                             "../../../../../../../secret: leads out of " +
                             droot + "; skipped"));
  EXPECT_CONTAINS(warnings, (droot +
                             "/usr/share/vulkan/implicit_layer.d/nvidia_layers.json: more than 40 "
                             "symbolic links (last " +
                             droot +
                             "/usr/share/vulkan/implicit_layer.d/nvidia_layers.json -> nvidia_layers.json); "
                             "skipped"));
  EXPECT_CONTAINS(warnings, (droot + "/usr/lib/x86_64-linux-gnu/vdpau -> " + root +
                             "/hostlibs: no such file inside " + droot + "; skipped"));
  EXPECT_CONTAINS(warnings,
                  (droot + "/lib/firmware/nvidia/" + version + ": " + droot + "/usr/lib/firmware/nvidia/" +
                   version + " -> " + root + "/hostfw: no such file inside " + droot + "; skipped"));
  EXPECT_CONTAINS(warnings, (droot + "/run/nvidia-persistenced -> " + root +
                             "/hostrun: no such file inside " + droot + "; skipped"));
  EXPECT_EQ(warnings.size(), 6u) << ::testing::PrintToString(warnings);
}

TEST(DriverRoot, NvmlIsLoadedFromInsideTheDriverRoot) {
  auto f = materialise_or_die("driver-container");
  SKIP_WITHOUT_REAL_NODES(f);
  const std::string droot = f.host.driver_root;
  const std::string lib_dir = "/usr/lib/x86_64-linux-gnu";
  // The SONAME link of NVML made absolute, as a driver image may ship it: inside the root it names the
  // image's library; followed by the host's kernel (dlopen) it would name the host's (here: nothing).
  replace_with_link(droot + lib_dir + "/libnvidia-ml.so.1",
                    lib_dir + "/libnvidia-ml.so." + f.manifest.driver.version);
  auto inv = discover(discover_options(f, Mode::nvml));
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->gpu_source, GpuSource::nvml);
  EXPECT_EQ(inv->gpus.size(), 2u);
}

TEST(DriverRoot, TheLinkerCacheIsReadFromInsideTheDriverRoot) {
  auto f = materialise_or_die("driver-container");
  SKIP_WITHOUT_REAL_NODES(f);
  const std::string droot = f.host.driver_root;
  // An absolute link out of the root, to a file of the host that is not a cache.
  std::ofstream(f.host.root + "/not-a-cache") << "not a cache at all";
  replace_with_link(droot + "/etc/ld.so.cache", f.host.root + "/not-a-cache");
  auto inv = discover(discover_options(f, Mode::proc));
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->warnings, std::vector<std::string>{droot + "/etc/ld.so.cache -> " + f.host.root +
                                                    "/not-a-cache: no such file inside " + droot +
                                                    "; searching the standard library directories only"});
  EXPECT_NE(find_file(*inv, "/usr/lib/x86_64-linux-gnu/libcuda.so." + f.manifest.driver.version), nullptr);
}

TEST(DriverRoot, UnchangedFixtureHostsAreConfinedAndWarnNothing) {
  for_each_fixture_host([](const fixture::Fixture& f) {
    std::vector<std::string> warnings;
    const auto found = driver_files_of(f, warnings);
    expect_confined(found.files, f.host.driver_root);
    EXPECT_EQ(warnings, std::vector<std::string>{});
  });
}

// ---------------------------------------------------------------------------------------------------
// IPC files are mounted into every GPU container: only the daemon's own (issue 9 item 3).

class IpcTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    m_fixture.emplace(materialise_or_die("a10-debian-packaged"));
    m_root = m_fixture->host.driver_root;
  }
  DriverFiles found() { return driver_files_of(*m_fixture, m_warnings); }
  const std::string& root() const { return m_root; }
  const std::vector<std::string>& warnings() const { return m_warnings; }

 private:
  std::optional<fixture::Fixture> m_fixture;
  std::string m_root;
  std::vector<std::string> m_warnings;
};

TEST_F(IpcTrust, TheDaemonsOwnSocketsAndMpsDirectoryAreMounted) {
  const auto files = found();
  const auto* mps = find_in(files.files, "/tmp/nvidia-mps");
  ASSERT_NE(mps, nullptr);
  EXPECT_EQ(mps->kind, FileKind::ipc);
  EXPECT_EQ(mps->host_path, root() + "/tmp/nvidia-mps");
  EXPECT_NE(find_in(files.files, "/run/nvidia-persistenced/socket"), nullptr);
  EXPECT_NE(find_in(files.files, "/run/nvidia-fabricmanager/socket"), nullptr);
  EXPECT_EQ(warnings(), std::vector<std::string>{});
}

TEST_F(IpcTrust, AWorldWritableMpsDirectoryIsNotMounted) {
  fs::permissions(root() + "/tmp/nvidia-mps", fs::perms::all);
  const auto files = found();
  EXPECT_EQ(find_in(files.files, "/tmp/nvidia-mps"), nullptr);
  EXPECT_EQ(warnings(), std::vector<std::string>{root() + "/tmp/nvidia-mps: writable by group or others "
                                                          "(mode 777); not mounted"});
}

TEST_F(IpcTrust, AnMpsDirectoryThatIsALinkIsNotMounted) {
  fs::create_directories(root() + "/opt/mps");
  replace_with_link(root() + "/tmp/nvidia-mps", "/opt/mps");
  const auto files = found();
  EXPECT_EQ(find_in(files.files, "/tmp/nvidia-mps"), nullptr);
  EXPECT_EQ(warnings(),
            std::vector<std::string>{root() + "/tmp/nvidia-mps: a symbolic link to /opt/mps, not the "
                                              "daemon's own directory; not mounted"});
}

TEST_F(IpcTrust, IpcFilesOfAnotherUserAreNotMounted) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "chown to another user needs root";
  }
  ASSERT_EQ(::lchown((root() + "/tmp/nvidia-mps").c_str(), 4242, 4242), 0);
  ASSERT_EQ(::lchown((root() + "/run/nvidia-persistenced/socket").c_str(), 4242, 4242), 0);
  const auto files = found();
  EXPECT_EQ(find_in(files.files, "/tmp/nvidia-mps"), nullptr);
  EXPECT_EQ(find_in(files.files, "/run/nvidia-persistenced/socket"), nullptr);
  EXPECT_NE(find_in(files.files, "/run/nvidia-fabricmanager/socket"), nullptr);
  EXPECT_EQ(warnings(), (std::vector<std::string>{
                            root() + "/run/nvidia-persistenced/socket: owned by uid 4242, neither root nor "
                                     "a service user in its own directory; not mounted",
                            root() + "/tmp/nvidia-mps: owned by uid 4242, not root; not mounted"}));
}

TEST_F(IpcTrust, ASocketOfTheDaemonsServiceUserInItsOwnRuntimeDirectoryIsMounted) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "chown to another user needs root";
  }
  // nvidia-persistenced --user nvidia-persistenced: root makes /run/nvidia-persistenced, hands it to the
  // user, and the daemon makes its socket as that user.
  ASSERT_EQ(::lchown((root() + "/run/nvidia-persistenced").c_str(), 4242, 4242), 0);
  ASSERT_EQ(::lchown((root() + "/run/nvidia-persistenced/socket").c_str(), 4242, 4242), 0);
  EXPECT_NE(find_in(found().files, "/run/nvidia-persistenced/socket"), nullptr);
  EXPECT_EQ(warnings(), std::vector<std::string>{});
  // Not when anyone could have made that directory.
  fs::permissions(root() + "/run", fs::perms::all | fs::perms::sticky_bit);
  EXPECT_EQ(find_in(found().files, "/run/nvidia-persistenced/socket"), nullptr);
  EXPECT_EQ(warnings(),
            std::vector<std::string>{root() + "/run/nvidia-persistenced/socket: owned by uid 4242, "
                                              "neither root nor a service user in its own directory; "
                                              "not mounted"});
}

// ---------------------------------------------------------------------------------------------------
// One classification (issue 10 item 2): what discovery records for a file is what the hook's
// capability filter says for the container path the spec mounts it at, on every fixture host.

TEST(Classification, DiscoveryAndTheHookFilterAgreeOnEveryFileOfEveryFixtureHost) {
  for_each_discovered_host([](const fixture::Fixture& /*f*/, const Inventory& inv) {
    ASSERT_FALSE(inv.files.empty());
    for (const auto& file : inv.files) {
      const FileNeed hook_side = file_need(file.container_path);
      EXPECT_EQ(recorded_need(file), hook_side) << file.container_path;
      EXPECT_NE(hook_side.kind, FileNeed::Kind::unknown) << file.container_path << ": not in the tables";
      EXPECT_EQ(hook_side.kind == FileNeed::Kind::always, file.kind == FileKind::firmware)
          << file.container_path;
      if (file.kind == FileKind::library || file.kind == FileKind::library32) {
        EXPECT_EQ(hook_side.is_32bit, file.kind == FileKind::library32) << file.container_path;
      }
    }
    // The same through a generated spec: the filter sees mounts, one per discovered file.
    cdi::BuildOptions build;
    build.hook_path = "/usr/bin/gpuctk";
    build.libraries32 = true;  // every file, as in the hooks' in-memory spec
    auto spec = cdi::build_spec(inv, build);
    ASSERT_TRUE(spec) << spec.error().message;
    ASSERT_EQ(spec->container_edits.mounts.size(), inv.files.size());
    for (const auto& mount : spec->container_edits.mounts) {
      const auto* file = find_file(inv, mount.container_path);
      ASSERT_NE(file, nullptr) << mount.container_path;
      EXPECT_EQ(file_need(mount.container_path), recorded_need(*file)) << mount.container_path;
    }
    for (const auto& note : inv.notes) {
      EXPECT_EQ(note.find("-bit library in a directory"), std::string::npos) << note;
    }
  });
}

TEST(Classification, TheCasesTheyUsedToDisagreeOn) {
  auto f = materialise_or_die("a10-debian-packaged");
  SKIP_WITHOUT_REAL_NODES(f);
  auto inv = discover(discover_options(f, Mode::proc));
  ASSERT_TRUE(inv) << inv.error().message;
  // Firmware from the custom firmware_class.path (it wins over /lib/firmware, as in the kernel).
  const auto* fw = find_file(*inv, "/opt/nvidia-firmware/nvidia/535.216.01/gsp_ga10x.bin");
  ASSERT_NE(fw, nullptr);
  EXPECT_EQ(fw->kind, FileKind::firmware);
  EXPECT_EQ(file_need(fw->container_path).kind, FileNeed::Kind::always);
  EXPECT_EQ(find_file(*inv, "/lib/firmware/nvidia/535.216.01/gsp_ga10x.bin"), nullptr);
  // A 32-bit library only the ld.so.cache knows about.
  const auto* cuda32 = find_file(*inv, "/usr/lib/i386-linux-gnu/nvidia/current/libcuda.so.535.216.01");
  ASSERT_NE(cuda32, nullptr);
  EXPECT_EQ(cuda32->kind, FileKind::library32);
  EXPECT_EQ(file_need(cuda32->container_path),
            (FileNeed{FileNeed::Kind::capability, Capability::compute, true}));
  EXPECT_TRUE(
      file_need("/usr/lib/i386-linux-gnu/nvidia/current/vdpau/libvdpau_nvidia.so.535.216.01").is_32bit);
  EXPECT_FALSE(file_need("/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.535.216.01").is_32bit);
  // IPC files, under /run and /var/run alike.
  EXPECT_EQ(file_need("/tmp/nvidia-mps"), (FileNeed{FileNeed::Kind::capability, Capability::compute, false}));
  EXPECT_EQ(file_need("/var/run/nvidia-persistenced/socket"),
            (FileNeed{FileNeed::Kind::capability, Capability::utility, false}));
  EXPECT_EQ(file_need("/var/tmp/nvidia-mps").kind, FileNeed::Kind::unknown);
}

// ---------------------------------------------------------------------------------------------------
// Warnings are for what a user can act on (issue 10 item 5).

TEST(Warnings, FixtureHostsWarnNothingAndOptionalComponentsAreNotes) {
  for_each_discovered_host([](const fixture::Fixture& f, const Inventory& inv) {
    EXPECT_EQ(inv.warnings, std::vector<std::string>{});
    const bool has_imex = std::ranges::any_of(
        inv.files, [](const DriverFile& file) { return file.container_path.ends_with("/nvidia-imex"); });
    if (!has_imex) {
      EXPECT_CONTAINS(inv.notes, ("binary nvidia-imex: not found under " + f.host.driver_root));
    }
  });
}

}  // namespace
}  // namespace gpuctk::discover
