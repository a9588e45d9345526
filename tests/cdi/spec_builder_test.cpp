// The spec builder: golden specs for every fixture host and mode (byte for byte), and the rules of
// naming, selection, hooks and post-processing on small hand-made inventories.
#include "cdi/spec_builder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "cdi/codec.hpp"
#include "cdi/hook_args.hpp"
#include "cdi/validate.hpp"
#include "cdi/version.hpp"
#include "discover/discover.hpp"
#include "fixtures/builder/hosts.hpp"
#include "steps/root_edits.hpp"
#include "support/fixture_host.hpp"
#include "support/golden_file.hpp"
#include "util/file.hpp"

namespace gpuctk::cdi {
namespace {

constexpr const char* k_hook = "/usr/local/bin/gpuctk";

using test::replace_all;

struct GoldenCase {
  const char* host;
  discover::Mode mode;
  const char* mode_name;  // with ".no-additional-gids" for --feature-flag no-additional-gids-for-device-nodes
  AdditionalGids gids = AdditionalGids::for_device_nodes;
};

class GoldenSpec : public ::testing::TestWithParam<GoldenCase> {};

// Generates the spec of a fixture host and compares it with tests/golden/<host>.<mode>.yaml, the fixture
// root replaced by @ROOT@. GPUCTK_UPDATE_GOLDEN=1 rewrites the golden file instead (read its diff!).
TEST_P(GoldenSpec, MatchesGoldenFileByteForByte) {
  const auto& param = GetParam();
  const auto f = test::host_with_real_nodes(param.host, "golden specs carry real majors and minors");
  if (!f) {
    return;
  }
  auto inventory = discover::discover(test::discover_options(*f, param.mode));
  ASSERT_TRUE(inventory) << inventory.error().message;
  BuildOptions build;
  build.hook_path = k_hook;
  build.management = param.mode == discover::Mode::management;
  build.additional_gids = param.gids;
  auto spec = build_spec(*inventory, build);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_TRUE(validate(*spec).empty());
  const std::string text = replace_all(write_spec(*spec, Format::yaml), f->host.root, "@ROOT@");

  EXPECT_TRUE(test::matches_golden(std::string(param.host) + "." + param.mode_name + ".yaml", text));
  // The same inventory always gives the same bytes.
  EXPECT_EQ(write_spec(*build_spec(*inventory, build), Format::yaml), write_spec(*spec, Format::yaml));
}

INSTANTIATE_TEST_SUITE_P(Hosts, GoldenSpec,
                         ::testing::Values(GoldenCase{"t4-debian", discover::Mode::nvml, "nvml"},
                                           GoldenCase{"t4-debian", discover::Mode::proc, "proc"},
                                           GoldenCase{"dgx-a100", discover::Mode::nvml, "nvml"},
                                           GoldenCase{"dgx-a100", discover::Mode::proc, "proc"},
                                           GoldenCase{"dgx-a100", discover::Mode::management, "management"},
                                           GoldenCase{"h100-rhel", discover::Mode::nvml, "nvml"},
                                           GoldenCase{"h100-rhel", discover::Mode::proc, "proc"},
                                           GoldenCase{"driver-container", discover::Mode::nvml, "nvml"},
                                           GoldenCase{"a10-debian-packaged", discover::Mode::proc, "proc"},
                                           GoldenCase{"rtx-pro-6000-mig", discover::Mode::nvml, "nvml"},
                                           GoldenCase{"t4-debian", discover::Mode::proc,
                                                      "proc.no-additional-gids", AdditionalGids::none},
                                           GoldenCase{"dgx-a100", discover::Mode::proc,
                                                      "proc.no-additional-gids", AdditionalGids::none}),
                         [](const auto& test_info) {
                           std::string name =
                               std::string(test_info.param.host) + "_" + test_info.param.mode_name;
                           std::ranges::replace(name, '-', '_');
                           std::ranges::replace(name, '.', '_');
                           return name;
                         });

// Every golden spec passes our own validation. Its cdiVersion is 0.7.0 where a device adds the groups of
// its nodes (additionalGids), and otherwise 0.5.0, what podman 4.3.1 (CDI 0.5.x) reads: the specs of
// --feature-flag no-additional-gids-for-device-nodes and the management spec (its nodes are 0666, or of
// group root).
TEST(GoldenSpecFiles, AreValidAndNeed070OnlyForAdditionalGids) {
  const std::string dir = std::string(GPUCTK_SOURCE_DIR) + "/tests/golden";
  size_t checked = 0;
  for (const char* name :
       {"t4-debian.nvml", "t4-debian.proc", "dgx-a100.nvml", "dgx-a100.proc", "dgx-a100.management",
        "h100-rhel.nvml", "h100-rhel.proc", "driver-container.nvml", "a10-debian-packaged.proc",
        "rtx-pro-6000-mig.nvml", "t4-debian.proc.no-additional-gids", "dgx-a100.proc.no-additional-gids"}) {
    const std::string path = dir + "/" + name + ".yaml";
    auto text = read_file(path);
    ASSERT_TRUE(text) << text.error().message;
    auto spec = parse_spec(*text, Format::yaml);
    ASSERT_TRUE(spec) << path << ": " << spec.error().message;
    for (const auto& problem : validate(*spec)) {
      ADD_FAILURE() << path << ": " << problem.where << ": " << problem.what;
    }
    const bool gids =
        std::ranges::any_of(spec->devices,
                            [](const Device& d) { return !d.container_edits.additional_gids.empty(); }) ||
        !spec->container_edits.additional_gids.empty();
    const std::string_view n(name);
    EXPECT_EQ(gids, !n.ends_with(".no-additional-gids") && n != "dgx-a100.management") << path;
    EXPECT_EQ(spec->cdi_version, gids ? "0.7.0" : "0.5.0") << path;
    // Every gpuctk hook line parses back (cdi/hook_args.hpp), and every create-symlinks hook is one the hook
    // accepts: no link is given two targets, no link path has "." or "..", every value is TARGET::LINK.
    std::vector<const Hook*> hooks;
    for (const auto& h : spec->container_edits.hooks) {
      hooks.push_back(&h);
    }
    for (const auto& d : spec->devices) {
      for (const auto& h : d.container_edits.hooks) {
        hooks.push_back(&h);
      }
    }
    for (const Hook* h : hooks) {
      ASSERT_GE(h->args.size(), 3u) << path;
      if (h->args[2] == "container-start") {
        auto line = ContainerStartArgs::parse(h->args);
        EXPECT_TRUE(line) << path << ": " << (line ? "" : line.error().message);
      }
      if (h->args[2] == "create-symlinks") {
        auto line = CreateSymlinksArgs::parse(h->args);
        ASSERT_TRUE(line) << path << ": " << line.error().message;
        std::vector<std::string> values;
        for (const auto& link : line->links) {
          values.push_back(link_arg(link));
        }
        auto links = steps::parse_links(values);
        EXPECT_TRUE(links) << path << ": " << (links ? "" : links.error().message);
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 12u);
}

// --- Rules, on a hand-made inventory -------------------------------------------------------------

discover::DeviceNode node(std::string path, uint32_t major, uint32_t minor) {
  return {path, path, 'c', major, minor, 0666, 0};
}

discover::Inventory two_gpus_one_mig() {
  discover::Inventory inv;
  inv.driver_version = "550.54.15";
  discover::Gpu gpu0;
  gpu0.index = 0;
  gpu0.minor = 0;
  gpu0.uuid = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
  gpu0.node = node("/dev/nvidia0", 195, 0);
  discover::Gpu gpu1;
  gpu1.index = 1;
  gpu1.minor = 1;
  gpu1.uuid = "GPU-bbbbbbbb-0000-0000-0000-000000000000";
  gpu1.node = node("/dev/nvidia1", 195, 1);
  gpu1.mig_enabled = true;
  discover::MigDevice mig;
  mig.index = 0;
  mig.gi = 1;
  mig.uuid = "MIG-cccccccc-0000-0000-0000-000000000000";
  mig.gi_access = node("/dev/nvidia-caps/nvidia-cap147", 508, 147);
  mig.ci_access = node("/dev/nvidia-caps/nvidia-cap148", 508, 148);
  gpu1.mig_devices.push_back(mig);
  inv.gpus = {gpu0, gpu1};
  inv.control_nodes = {node("/dev/nvidiactl", 195, 255)};
  inv.files = {{discover::FileKind::library, "/usr/lib/libcuda.so.550.54.15", "/usr/lib/libcuda.so.550.54.15",
                discover::Capability::compute},
               {discover::FileKind::ipc, "/run/nvidia-persistenced/socket", "/run/nvidia-persistenced/socket",
                discover::Capability::utility}};
  inv.library_dirs = {"/usr/lib"};
  inv.driver_library_dirs = {"/usr/lib"};
  inv.library_links = {{"libcuda.so.550.54.15", "/usr/lib/libcuda.so.1"}};
  return inv;
}

BuildOptions options() {
  BuildOptions o;
  o.hook_path = k_hook;
  return o;
}

std::vector<std::string> names(const Spec& spec) {
  std::vector<std::string> out;
  for (const auto& d : spec.devices) {
    out.push_back(d.name);
  }
  return out;
}

TEST(SpecBuilder, DefaultNamesAreIndexAndUuidPlusAllAndMigParentIsAWholeGpuToo) {
  auto spec = build_spec(two_gpus_one_mig(), options());
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(names(*spec),
            (std::vector<std::string>{"0", "1", "1:0", "GPU-aaaaaaaa-0000-0000-0000-000000000000",
                                      "GPU-bbbbbbbb-0000-0000-0000-000000000000",
                                      "MIG-cccccccc-0000-0000-0000-000000000000", "all"}));
  EXPECT_EQ(spec->kind, "nvidia.com/gpu");
  EXPECT_EQ(spec->cdi_version, "0.5.0");  // digit-first names
}

TEST(SpecBuilder, TypeIndexStrategyAndNoAllDevice) {
  auto o = options();
  o.name_strategies = {NameStrategy::type_index};
  o.all_device = false;
  auto spec = build_spec(two_gpus_one_mig(), o);
  ASSERT_TRUE(spec);
  EXPECT_EQ(names(*spec), (std::vector<std::string>{"gpu0", "gpu1", "mig1:0"}));
  EXPECT_EQ(spec->cdi_version, "0.3.0");
}

// The device plugin's migStrategy "none" hands out a GPU in MIG mode whole, by UUID: asked for by index
// or UUID it is its node (and DRM nodes), without the capability nodes of the MIG devices under it.
TEST(SpecBuilder, MigEnabledGpuAskedForByIndexOrUuidIsItsWholeGpuDevice) {
  for (const std::string id : {"1", "GPU-bbbbbbbb-0000-0000-0000-000000000000"}) {
    auto o = options();
    o.device_ids = {id};
    auto spec = build_spec(two_gpus_one_mig(), o);
    ASSERT_TRUE(spec) << id << ": " << spec.error().message;
    EXPECT_EQ(names(*spec),
              (std::vector<std::string>{"1", "GPU-bbbbbbbb-0000-0000-0000-000000000000", "all"}))
        << id;
    for (const auto& device : spec->devices) {
      std::vector<std::string> paths;
      for (const auto& n : device.container_edits.device_nodes) {
        paths.push_back(n.path);
      }
      for (const auto& n : spec->container_edits.device_nodes) {
        paths.push_back(n.path);
      }
      std::ranges::sort(paths);
      EXPECT_EQ(paths, (std::vector<std::string>{"/dev/nvidia1", "/dev/nvidiactl"}))
          << id << " " << device.name;
    }
  }
}

TEST(SpecBuilder, MigDeviceHasParentAndBothCapabilityNodes) {
  auto spec = build_spec(two_gpus_one_mig(), options());
  ASSERT_TRUE(spec);
  const auto& mig = *std::ranges::find(spec->devices, "1:0", &Device::name);
  std::vector<std::string> paths;
  for (const auto& n : mig.container_edits.device_nodes) {
    paths.push_back(n.path);
  }
  EXPECT_EQ(paths, (std::vector<std::string>{"/dev/nvidia-caps/nvidia-cap147",
                                             "/dev/nvidia-caps/nvidia-cap148", "/dev/nvidia1"}));
}

// A graphics-capable MIG device (a "+gfx" profile) gets its GPU's DRM nodes and by-path links, as its GPU
// does (NVIDIA's nvidia-ctk 1.20); a plain MIG device of the same GPU gets neither.
TEST(SpecBuilder, GraphicsMigDeviceHasItsGpusDrmNodesAndLinksAPlainOneNeither) {
  auto inv = two_gpus_one_mig();
  auto& gpu1 = inv.gpus[1];
  gpu1.drm_nodes = {node("/dev/dri/card2", 226, 2), node("/dev/dri/renderD129", 226, 129)};
  gpu1.by_path_links = {{"../card2", "/dev/dri/by-path/pci-0000:0f:00.0-card"},
                        {"../renderD129", "/dev/dri/by-path/pci-0000:0f:00.0-render"}};
  discover::MigDevice gfx = gpu1.mig_devices[0];
  gfx.index = 1;
  gfx.gi = 2;
  gfx.uuid = "MIG-dddddddd-0000-0000-0000-000000000000";
  gfx.profile = "1g.24gb+gfx";
  gfx.graphics = true;
  gfx.gi_access = node("/dev/nvidia-caps/nvidia-cap156", 508, 156);
  gfx.ci_access = node("/dev/nvidia-caps/nvidia-cap157", 508, 157);
  gpu1.mig_devices.push_back(gfx);
  auto spec = build_spec(inv, options());
  ASSERT_TRUE(spec) << spec.error().message;
  const auto paths = [&](std::string_view name) {
    const auto& device = *std::ranges::find(spec->devices, name, &Device::name);
    std::vector<std::string> out;
    for (const auto& n : device.container_edits.device_nodes) {
      out.push_back(n.path);
    }
    return out;
  };
  const auto hooks = [&](std::string_view name) {
    return std::ranges::find(spec->devices, name, &Device::name)->container_edits.hooks;
  };
  EXPECT_EQ(paths("1:1"), (std::vector<std::string>{"/dev/dri/card2", "/dev/dri/renderD129",
                                                    "/dev/nvidia-caps/nvidia-cap156",
                                                    "/dev/nvidia-caps/nvidia-cap157", "/dev/nvidia1"}));
  ASSERT_EQ(hooks("1:1").size(), 1u);
  EXPECT_EQ(hooks("1:1")[0].args,
            (std::vector<std::string>{"gpuctk", "hook", "create-symlinks", "--link",
                                      "../card2::/dev/dri/by-path/pci-0000:0f:00.0-card", "--link",
                                      "../renderD129::/dev/dri/by-path/pci-0000:0f:00.0-render"}));
  EXPECT_EQ(hooks("1:1"), hooks("1"));  // the GPU's own
  EXPECT_EQ(paths("1:0"), (std::vector<std::string>{"/dev/nvidia-caps/nvidia-cap147",
                                                    "/dev/nvidia-caps/nvidia-cap148", "/dev/nvidia1"}));
  EXPECT_TRUE(hooks("1:0").empty());
}

TEST(SpecBuilder, AllDeviceIsTheUnionWithoutDuplicates) {
  auto spec = build_spec(two_gpus_one_mig(), options());
  ASSERT_TRUE(spec);
  const auto& all = *std::ranges::find(spec->devices, "all", &Device::name);
  // nvidia0, nvidia1 (once, though GPU 1 and its MIG device both have it), cap147, cap148
  EXPECT_EQ(all.container_edits.device_nodes.size(), 4u);
}

TEST(SpecBuilder, CommonEditsCarryControlNodesMountsHooksAndEnv) {
  auto spec = build_spec(two_gpus_one_mig(), options());
  ASSERT_TRUE(spec);
  const auto& e = spec->container_edits;
  // Where the driver's libraries are, as NVIDIA's v1.20 writes it.
  EXPECT_EQ(e.env,
            (std::vector<std::string>{"NVIDIA_CTK_LIBCUDA_DIR=/usr/lib", "NVIDIA_VISIBLE_DEVICES=void"}));
  ASSERT_EQ(e.device_nodes.size(), 1u);
  EXPECT_EQ(e.device_nodes[0].path, "/dev/nvidiactl");
  ASSERT_EQ(e.mounts.size(), 2u);
  // A daemon's socket is not read-only (a nested runtime binds it again), as NVIDIA's v1.20 and
  // libnvidia-container mount it.
  EXPECT_EQ(e.mounts[0].options,
            (std::vector<std::string>{"nosuid", "nodev", "rbind", "rprivate", "noexec"}));
  EXPECT_EQ(e.mounts[0].container_path, "/run/nvidia-persistenced/socket");
  EXPECT_EQ(e.mounts[1].options, (std::vector<std::string>{"ro", "nosuid", "nodev", "rbind", "rprivate"}));
  // One hook process for the spec-wide steps (issue 24 cut 1), each step's options in the steps' order.
  ASSERT_EQ(e.hooks.size(), 1u);
  EXPECT_EQ(e.hooks[0].args,
            (std::vector<std::string>{"gpuctk", "hook", "container-start", "--link",
                                      "libcuda.so.550.54.15::/usr/lib/libcuda.so.1", "--host-driver-version",
                                      "550.54.15", "--folder", "/usr/lib",
                                      "--disable-device-node-modification", "--update-application-profile"}));
  for (const auto& h : e.hooks) {
    EXPECT_EQ(h.hook_name, "createContainer");
    EXPECT_EQ(h.path, k_hook);
    EXPECT_FALSE(h.env.empty()) << "a hook must never inherit the container's environment";
  }
}

// The 32-bit driver libraries (compat32, not in the default capabilities) are left out of a spec unless
// asked for, as NVIDIA's spec leaves them out (issue 24 cut 3): their mounts, the links into them (through a
// chain of links too) and in their folder, and that folder's update-ldcache --folder. A 64-bit library's
// folder and links stay.
TEST(SpecBuilder, ThirtyTwoBitLibrariesOnlyWhenAskedFor) {
  auto inv = two_gpus_one_mig();
  inv.files.push_back({discover::FileKind::library32, "/usr/lib/i386-linux-gnu/libcuda.so.550.54.15",
                       "/usr/lib/i386-linux-gnu/libcuda.so.550.54.15", discover::Capability::compute});
  inv.library_dirs = {"/usr/lib", "/usr/lib/i386-linux-gnu"};
  inv.library_links = {{"libcuda.so.550.54.15", "/usr/lib/libcuda.so.1"},
                       {"libcuda.so.1", "/usr/lib/libcuda.so"},
                       {"libcuda.so.550.54.15", "/usr/lib/i386-linux-gnu/libcuda.so.1"},
                       {"i386-linux-gnu/libcuda.so.1", "/usr/lib/libcuda32.so"},
                       {"libcuda.so.1", "/usr/lib/i386-linux-gnu/libcuda.so"}};
  const auto mounts = [](const Spec& spec) {
    std::vector<std::string> out;
    for (const auto& m : spec.container_edits.mounts) {
      out.push_back(m.container_path);
    }
    return out;
  };
  auto spec = build_spec(inv, options());
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(mounts(*spec),
            (std::vector<std::string>{"/run/nvidia-persistenced/socket", "/usr/lib/libcuda.so.550.54.15"}));
  ASSERT_EQ(spec->container_edits.hooks.size(), 1u);
  EXPECT_EQ(
      spec->container_edits.hooks[0].args,
      (std::vector<std::string>{
          "gpuctk", "hook", "container-start", "--link", "libcuda.so.1::/usr/lib/libcuda.so", "--link",
          "libcuda.so.550.54.15::/usr/lib/libcuda.so.1", "--host-driver-version", "550.54.15", "--folder",
          "/usr/lib", "--disable-device-node-modification", "--update-application-profile"}));

  auto o = options();
  o.libraries32 = true;
  spec = build_spec(inv, o);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(mounts(*spec), (std::vector<std::string>{"/run/nvidia-persistenced/socket",
                                                     "/usr/lib/i386-linux-gnu/libcuda.so.550.54.15",
                                                     "/usr/lib/libcuda.so.550.54.15"}));
  ASSERT_EQ(spec->container_edits.hooks.size(), 1u);
  EXPECT_EQ(spec->container_edits.hooks[0].args,
            (std::vector<std::string>{"gpuctk",
                                      "hook",
                                      "container-start",
                                      "--link",
                                      "i386-linux-gnu/libcuda.so.1::/usr/lib/libcuda32.so",
                                      "--link",
                                      "libcuda.so.1::/usr/lib/i386-linux-gnu/libcuda.so",
                                      "--link",
                                      "libcuda.so.1::/usr/lib/libcuda.so",
                                      "--link",
                                      "libcuda.so.550.54.15::/usr/lib/i386-linux-gnu/libcuda.so.1",
                                      "--link",
                                      "libcuda.so.550.54.15::/usr/lib/libcuda.so.1",
                                      "--host-driver-version",
                                      "550.54.15",
                                      "--folder",
                                      "/usr/lib",
                                      "--folder",
                                      "/usr/lib/i386-linux-gnu",
                                      "--disable-device-node-modification",
                                      "--update-application-profile"}));
}

// Every IPC file gets NVIDIA's v1.20 options (no ro: a nested runtime binds a socket again), never
// executable, setuid or device-bearing; --feature-flag disable-ipc-discoverer leaves them all out.
TEST(SpecBuilder, IpcFilesHaveNvidiasOptionsOrAreLeftOut) {
  auto inv = two_gpus_one_mig();
  inv.files.push_back({discover::FileKind::ipc, "/run/nvidia-fabricmanager/socket",
                       "/run/nvidia-fabricmanager/socket", discover::Capability::utility});
  inv.files.push_back(
      {discover::FileKind::ipc, "/tmp/nvidia-mps", "/tmp/nvidia-mps", discover::Capability::compute});
  auto spec = build_spec(inv, options());
  ASSERT_TRUE(spec);
  std::map<std::string, std::vector<std::string>> options_of;
  for (const auto& m : spec->container_edits.mounts) {
    options_of[m.container_path] = m.options;
  }
  EXPECT_EQ(options_of["/run/nvidia-persistenced/socket"], k_ipc_mount_options);
  EXPECT_EQ(options_of["/run/nvidia-fabricmanager/socket"], k_ipc_mount_options);
  EXPECT_EQ(options_of["/tmp/nvidia-mps"], k_ipc_mount_options);
  EXPECT_EQ(k_ipc_mount_options,
            (std::vector<std::string>{"nosuid", "nodev", "rbind", "rprivate", "noexec"}));

  auto o = options();
  o.ipc_files = IpcFiles::leave_out;
  spec = build_spec(inv, o);
  ASSERT_TRUE(spec);
  std::vector<std::string> mounted;
  for (const auto& m : spec->container_edits.mounts) {
    mounted.push_back(m.container_path);
  }
  EXPECT_EQ(mounted, (std::vector<std::string>{"/usr/lib/libcuda.so.550.54.15"}));
}

TEST(SpecBuilder, DisableHookByNameAndAll) {
  auto o = options();
  o.disabled_hooks = {"update-ldcache", "enable-cuda-compat"};
  auto spec = build_spec(two_gpus_one_mig(), o);
  ASSERT_TRUE(spec);
  ASSERT_EQ(spec->container_edits.hooks.size(), 1u);
  EXPECT_EQ(spec->container_edits.hooks[0].args,
            (std::vector<std::string>{"gpuctk", "hook", "container-start", "--link",
                                      "libcuda.so.550.54.15::/usr/lib/libcuda.so.1",
                                      "--disable-device-node-modification", "--update-application-profile"}));
  // NVIDIA's v1.20 name of the application profile's hook leaves out that step alone.
  o.disabled_hooks = {"update-application-profile"};
  spec = build_spec(two_gpus_one_mig(), o);
  ASSERT_TRUE(spec);
  ASSERT_EQ(spec->container_edits.hooks.size(), 1u);
  EXPECT_EQ(spec->container_edits.hooks[0].args.back(), "--disable-device-node-modification");
  o.disabled_hooks = {"create-symlinks", "enable-cuda-compat", "update-ldcache",
                      "disable-device-node-modification", "update-application-profile"};
  spec = build_spec(two_gpus_one_mig(), o);
  ASSERT_TRUE(spec);
  EXPECT_TRUE(spec->container_edits.hooks.empty()) << "every step disabled: no container-start hook";
  o.disabled_hooks = {"all"};
  spec = build_spec(two_gpus_one_mig(), o);
  ASSERT_TRUE(spec);
  EXPECT_TRUE(spec->container_edits.hooks.empty());
  EXPECT_TRUE(check_hook_name("all"));
  EXPECT_TRUE(check_hook_name("chmod"));
  EXPECT_TRUE(check_hook_name("update-application-profile"));
  ASSERT_FALSE(check_hook_name("container-start"));
  EXPECT_EQ(check_hook_name("container-start").error().message,
            "unknown hook \"container-start\" (want create-symlinks, enable-cuda-compat, update-ldcache, "
            "disable-device-node-modification, update-application-profile, chmod or all)");
}

// --enable-hook as NVIDIA's v1.20 reads it: chmod, off by default, gives each GPU with DRM nodes (and the
// "all" device) mode 755 on /dev/dri; a hook enabled wins over --disable-hook, "all" included; enabling
// "all" is refused.
TEST(SpecBuilder, EnableHookTurnsOnChmodAndWinsOverDisableHook) {
  auto inv = two_gpus_one_mig();
  inv.gpus[0].drm_nodes = {node("/dev/dri/card1", 226, 1), node("/dev/dri/renderD128", 226, 128)};
  const auto chmod_hooks = [](const Device& d) {
    std::vector<std::vector<std::string>> out;
    for (const auto& h : d.container_edits.hooks) {
      if (h.args[2] == "chmod") {
        out.push_back(h.args);
      }
    }
    return out;
  };
  auto spec = build_spec(inv, options());
  ASSERT_TRUE(spec);
  for (const auto& d : spec->devices) {
    EXPECT_TRUE(chmod_hooks(d).empty()) << d.name << ": chmod is off by default";
  }
  auto o = options();
  o.enabled_hooks = {"chmod"};
  spec = build_spec(inv, o);
  ASSERT_TRUE(spec) << spec.error().message;
  const std::vector<std::string> chmod{"gpuctk", "hook", "chmod", "--mode", "755", "--path", "/dev/dri"};
  for (const auto& d : spec->devices) {
    const bool has_dri = d.name == "0" || d.name == "all" || d.name == inv.gpus[0].uuid;
    EXPECT_EQ(chmod_hooks(d), has_dri ? std::vector<std::vector<std::string>>{chmod}
                                      : std::vector<std::vector<std::string>>{})
        << d.name;
  }
  o.disabled_hooks = {"all"};
  o.enabled_hooks = {"update-ldcache"};
  spec = build_spec(inv, o);
  ASSERT_TRUE(spec);
  ASSERT_EQ(spec->container_edits.hooks.size(), 1u);
  EXPECT_EQ(spec->container_edits.hooks[0].args,
            (std::vector<std::string>{"gpuctk", "hook", "container-start", "--folder", "/usr/lib"}));
  EXPECT_TRUE(check_enable_hook_name("chmod"));
  ASSERT_FALSE(check_enable_hook_name("all"));
  EXPECT_EQ(
      check_enable_hook_name("all").error().message,
      "--enable-hook all: enabling all hooks is not supported (name each: create-symlinks, "
      "enable-cuda-compat, update-ldcache, disable-device-node-modification, update-application-profile, "
      "chmod)");
  EXPECT_FALSE(check_enable_hook_name("ldcache"));
}

// --device-ids none as NVIDIA's v1.20 writes it: the one device "none" with NVCT_EMPTY_DEVICE= and the
// common edits, no GPU and no "all"; with another id it is an error.
TEST(SpecBuilder, DeviceIdNoneIsTheEmptyDeviceAlone) {
  auto o = options();
  o.device_ids = {"none"};
  auto spec = build_spec(two_gpus_one_mig(), o);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(names(*spec), (std::vector<std::string>{"none"}));
  const auto& none = spec->devices[0].container_edits;
  EXPECT_EQ(none.env, (std::vector<std::string>{"NVCT_EMPTY_DEVICE="}));
  EXPECT_TRUE(none.device_nodes.empty());
  EXPECT_TRUE(none.hooks.empty());
  EXPECT_EQ(spec->container_edits.device_nodes.size(), 1u) << "nvidiactl";
  EXPECT_EQ(spec->container_edits.mounts.size(), 2u);
  EXPECT_TRUE(validate(*spec).empty());
  o.device_ids = {"0", "none"};
  spec = build_spec(two_gpus_one_mig(), o);
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().message, "device id \"none\" (no GPU device) cannot be combined with other ids");
}

TEST(SpecBuilder, DeviceIdsRestrictGenerationAndUnknownIdsAreErrors) {
  auto o = options();
  o.device_ids = {"MIG-cccccccc-0000-0000-0000-000000000000"};
  auto spec = build_spec(two_gpus_one_mig(), o);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(names(*spec),
            (std::vector<std::string>{"1:0", "MIG-cccccccc-0000-0000-0000-000000000000", "all"}));
  o.device_ids = {"0", "7"};
  spec = build_spec(two_gpus_one_mig(), o);
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().message, "unknown device id \"7\" (devices: 0, 1, 1:0, their UUIDs, or all)");
}

TEST(SpecBuilder, ManagementModeIsOneAllDeviceWithoutNodeModificationHook) {
  auto inv = two_gpus_one_mig();
  inv.management_nodes = {node("/dev/nvidia-caps/nvidia-cap1", 508, 1),
                          node("/dev/nvidia-nvswitchctl", 509, 255)};
  auto o = options();
  o.management = true;
  auto spec = build_spec(inv, o);
  ASSERT_TRUE(spec);
  EXPECT_EQ(names(*spec), (std::vector<std::string>{"all"}));
  EXPECT_EQ(spec->devices[0].container_edits.device_nodes.size(), 4u);
  ASSERT_EQ(spec->container_edits.hooks.size(), 1u);
  EXPECT_EQ(spec->container_edits.hooks[0].args[2], "container-start");
  EXPECT_EQ(std::ranges::find(spec->container_edits.hooks[0].args, "--disable-device-node-modification"),
            spec->container_edits.hooks[0].args.end());
  EXPECT_EQ(std::ranges::find(spec->container_edits.hooks[0].args, "--update-application-profile"),
            spec->container_edits.hooks[0].args.end())
      << "a management container sees every GPU, as NVIDIA's management spec has no profile";
}

TEST(SpecBuilder, ManagementModeWithoutAnyNodeIsAnErrorNamingTheDirectory) {
  auto inv = two_gpus_one_mig();
  inv.gpus.clear();
  inv.dev_dir = "/host/dev";
  auto o = options();
  o.management = true;
  auto spec = build_spec(inv, o);
  ASSERT_FALSE(spec);
  EXPECT_EQ(
      spec.error().message,
      "no devices to generate: no NVIDIA device nodes (nvidia<N>, nvidia-caps, IMEX channels) in /host/dev");
}

// Majors that the kernel hands out when a module loads are left out (the consumer takes them from the
// host node); the NVIDIA and DRM majors are fixed and written.
TEST(SpecBuilder, DynamicMajorsAreLeftOutFixedOnesWritten) {
  EXPECT_TRUE(is_fixed_major(195));
  EXPECT_TRUE(is_fixed_major(226));
  EXPECT_FALSE(is_fixed_major(508));
  EXPECT_FALSE(is_fixed_major(0));
  const auto uvm = spec_device_node({"/dev/nvidia-uvm", "/host/dev/nvidia-uvm", 'c', 508, 0, 0666, 0});
  EXPECT_EQ(uvm.type, "c");
  EXPECT_FALSE(uvm.major);
  EXPECT_FALSE(uvm.minor);
  EXPECT_EQ(uvm.file_mode, 0666u);
  EXPECT_EQ(uvm.host_path, "/host/dev/nvidia-uvm");
  const auto card = spec_device_node({"/dev/dri/card1", "/dev/dri/card1", 'c', 226, 1, 0660, 44});
  EXPECT_EQ(card.major, 226);
  EXPECT_EQ(card.minor, 1);
  EXPECT_EQ(card.gid, 44u);
  EXPECT_TRUE(card.host_path.empty());
  auto spec = build_spec(two_gpus_one_mig(), options());
  ASSERT_TRUE(spec);
  const auto& mig = *std::ranges::find(spec->devices, "1:0", &Device::name);
  for (const auto& n : mig.container_edits.device_nodes) {
    EXPECT_EQ(n.major.has_value(), n.path == "/dev/nvidia1") << n.path;
  }
}

TEST(SpecBuilder, SeparateDevRootWritesHostPathOtherwiseNot) {
  auto inv = two_gpus_one_mig();
  auto spec = build_spec(inv, options());
  ASSERT_TRUE(spec);
  EXPECT_TRUE(spec->container_edits.device_nodes[0].host_path.empty());
  inv.control_nodes[0].host_path = "/host/dev/nvidiactl";
  spec = build_spec(inv, options());
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->container_edits.device_nodes[0].host_path, "/host/dev/nvidiactl");
}

TEST(SpecBuilder, HostWithoutGpusIsAnError) {
  auto inv = two_gpus_one_mig();
  inv.gpus.clear();
  inv.gpus_from = "/host/proc/driver/nvidia/gpus";
  auto spec = build_spec(inv, options());
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().message, "no devices to generate: no GPUs in /host/proc/driver/nvidia/gpus");
}

// NVIDIA's rule (v1.20.0): a node's gid when it is not 0, the node has a fileMode that is not 0, and
// others may not both read and write it; sorted, each once.
TEST(SpecBuilderAdditionalGids, TheGroupOfEachNodeOthersMayNotBothReadAndWrite) {
  const auto with = [](uint32_t mode, std::optional<uint32_t> gid) {
    DeviceNode n;
    n.path = "/dev/x";
    n.file_mode = mode;
    n.gid = gid;
    return n;
  };
  EXPECT_EQ(device_node_gids({with(0660, 105)}), std::vector<uint32_t>{105});
  EXPECT_EQ(device_node_gids({with(0664, 7)}), std::vector<uint32_t>{7}) << "world readable only";
  EXPECT_EQ(device_node_gids({with(0662, 7)}), std::vector<uint32_t>{7}) << "world writable only";
  EXPECT_EQ(device_node_gids({with(0444, 7)}), std::vector<uint32_t>{7});
  EXPECT_TRUE(device_node_gids({with(0666, 44)}).empty()) << "anyone may open it";
  EXPECT_TRUE(device_node_gids({with(0606, 44)}).empty());
  EXPECT_TRUE(device_node_gids({with(0660, 0)}).empty()) << "group root";
  EXPECT_TRUE(device_node_gids({with(0660, std::nullopt)}).empty()) << "no gid";
  EXPECT_TRUE(device_node_gids({with(0, 44)}).empty()) << "fileMode 0: NVIDIA writes none";
  DeviceNode no_mode = with(0660, 44);
  no_mode.file_mode.reset();
  EXPECT_TRUE(device_node_gids({no_mode}).empty()) << "no fileMode";
  EXPECT_EQ(device_node_gids({with(0660, 109), with(0660, 44), with(0600, 109), with(0666, 5)}),
            (std::vector<uint32_t>{44, 109}));
}

discover::Inventory two_gpus_with_drm_nodes() {
  auto inv = two_gpus_one_mig();
  inv.gpus[0].drm_nodes = {{"/dev/dri/card1", "/dev/dri/card1", 'c', 226, 1, 0660, 44},
                           {"/dev/dri/renderD128", "/dev/dri/renderD128", 'c', 226, 128, 0660, 105}};
  inv.gpus[1].drm_nodes = {{"/dev/dri/card2", "/dev/dri/card2", 'c', 226, 2, 0660, 44},
                           {"/dev/dri/renderD129", "/dev/dri/renderD129", 'c', 226, 129, 0666, 105}};
  return inv;
}

// Where NVIDIA's v1.20.0 puts them for the same nodes (its specs of the fixture hosts t4-debian and
// dgx-a100): in the edits of each device that has such a node, "all" included; none on a MIG device (its
// capability nodes are 0444 of group root) and none in the common edits (the control nodes are 0666).
// cdiVersion 0.7.0, the version that has additionalGids.
TEST(SpecBuilderAdditionalGids, EachDeviceGetsTheGroupsOfItsOwnNodes) {
  auto spec = build_spec(two_gpus_with_drm_nodes(), options());
  ASSERT_TRUE(spec) << spec.error().message;
  std::map<std::string, std::vector<uint32_t>> gids;
  for (const auto& d : spec->devices) {
    gids[d.name] = d.container_edits.additional_gids;
  }
  const std::vector<uint32_t> gpu0{44, 105};
  const std::vector<uint32_t> gpu1{44};  // renderD129 is 0666 here
  EXPECT_EQ(gids,
            (std::map<std::string, std::vector<uint32_t>>{{"0", gpu0},
                                                          {"1", gpu1},
                                                          {"1:0", {}},
                                                          {"GPU-aaaaaaaa-0000-0000-0000-000000000000", gpu0},
                                                          {"GPU-bbbbbbbb-0000-0000-0000-000000000000", gpu1},
                                                          {"MIG-cccccccc-0000-0000-0000-000000000000", {}},
                                                          {"all", gpu0}}));
  EXPECT_TRUE(spec->container_edits.additional_gids.empty());
  EXPECT_EQ(spec->cdi_version, "0.7.0");
  EXPECT_EQ(minimum_version(*spec).trigger, "devices[0].containerEdits.additionalGids");
  const std::string yaml = write_spec(*spec, Format::yaml);
  EXPECT_NE(yaml.find("      additionalGids:\n        - 44\n        - 105\n"), std::string::npos) << yaml;
  auto back = parse_spec(yaml, Format::yaml);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, *spec);
}

// --feature-flag no-additional-gids-for-device-nodes: none anywhere, and cdiVersion stays at what the rest
// needs (0.3.0 here; 0.5.0 with a separate dev root), which podman 4.3.1 reads.
TEST(SpecBuilderAdditionalGids, NoneWhenTurnedOff) {
  auto build = options();
  build.additional_gids = AdditionalGids::none;
  auto spec = build_spec(two_gpus_with_drm_nodes(), build);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_TRUE(spec->container_edits.additional_gids.empty());
  for (const auto& d : spec->devices) {
    EXPECT_TRUE(d.container_edits.additional_gids.empty()) << d.name;
  }
  EXPECT_EQ(spec->cdi_version, minimum_version(*spec).version.str());
  EXPECT_EQ(write_spec(*spec, Format::yaml).find("additionalGids"), std::string::npos);
  auto without = two_gpus_with_drm_nodes();
  for (auto& gpu : without.gpus) {
    gpu.drm_nodes.clear();
  }
  auto plain = build_spec(without, options());
  ASSERT_TRUE(plain);
  EXPECT_EQ(spec->cdi_version, plain->cdi_version);
}

// The groups follow their nodes: a node in the common edits gives its group there, and a device whose
// edits lost every such node keeps none.
TEST(SpecBuilderAdditionalGids, CommonEditsTakeTheGroupsOfTheirOwnNodes) {
  Spec spec;
  spec.kind = "nvidia.com/gpu";
  spec.container_edits.device_nodes = {{.path = "/dev/dri/renderD128", .file_mode = 0660, .gid = 105}};
  spec.devices = {{"0", {}, {}}};
  spec.devices[0].container_edits.device_nodes = {{.path = "/dev/nvidia0", .file_mode = 0666}};
  spec.devices[0].container_edits.additional_gids = {44};
  set_device_node_gids(spec, AdditionalGids::for_device_nodes);
  EXPECT_EQ(spec.container_edits.additional_gids, std::vector<uint32_t>{105});
  EXPECT_TRUE(spec.devices[0].container_edits.additional_gids.empty());
  set_device_node_gids(spec, AdditionalGids::none);
  EXPECT_TRUE(spec.container_edits.additional_gids.empty());
}

TEST(SpecBuilder, NameStrategyParsing) {
  EXPECT_EQ(parse_name_strategy("type-index").value(), NameStrategy::type_index);
  ASSERT_FALSE(parse_name_strategy("serial"));
  EXPECT_EQ(parse_name_strategy("serial").error().message,
            "unknown device name strategy \"serial\" (want index, uuid or type-index)");
}

}  // namespace
}  // namespace gpuctk::cdi
