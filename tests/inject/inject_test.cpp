// Injection over fixture hosts: request -> config.json (golden), idempotence, untouched keys, the
// in-memory spec when none is installed or it is stale, and one clear error per bad request.
#include "inject/inject.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <tuple>

#include "cdi/codec.hpp"
#include "cdi/spec_builder.hpp"
#include "discover/discover.hpp"
#include "fixtures/builder/hosts.hpp"
#include "inject/inject_fixture.hpp"
#include "oci/bundle.hpp"
#include "support/golden_file.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::inject {
namespace {

using nlohmann::ordered_json;
using test::replace_all;

TEST_F(InjectTest, GoldenConfigForGpu0WithInstalledSpec) {
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0"});
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE(result->changed);
  EXPECT_EQ(result->devices, (std::vector<std::string>{"nvidia.com/gpu=0"}));
  EXPECT_EQ(result->spec_source, m_cfg.spec_dirs[0] + "/nvidia.yaml");
  const std::string text = replace_all(oci::dump_config(config), m_fixture->host.root, "@ROOT@");
  EXPECT_TRUE(test::matches_golden("t4-debian.config-gpu0.json", text));
}

TEST_F(InjectTest, SameRequestTwiceGivesTheSameConfigAsOnce) {
  install_spec();
  auto once = runc_config({"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=all"});
  ASSERT_TRUE(inject(once));
  // Keep the request in the config so the second pass injects again rather than seeing "void".
  auto twice = once;
  for (auto& e : twice["process"]["env"]) {
    if (e == "NVIDIA_VISIBLE_DEVICES=void") {
      e = "NVIDIA_VISIBLE_DEVICES=all";
    }
  }
  ASSERT_TRUE(inject(twice));
  EXPECT_EQ(oci::dump_config(twice), oci::dump_config(once));
}

TEST_F(InjectTest, KeysItDoesNotOwnAreKept) {
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0"});
  config["annotations"] = {{"io.kubernetes.pod.name", "p"}};
  config["x-vendor-extension"] = {{"big", 18446744073709551615ull}, {"neg", -3}, {"f", 1.5}};
  const auto before = config;
  ASSERT_TRUE(inject(config));
  EXPECT_EQ(config["annotations"], before["annotations"]);
  EXPECT_EQ(config["x-vendor-extension"], before["x-vendor-extension"]);
  EXPECT_EQ(config["process"]["args"], before["process"]["args"]);
  EXPECT_EQ(config["linux"]["namespaces"], before["linux"]["namespaces"]);
  EXPECT_EQ(config["root"], before["root"]);
}

TEST_F(InjectTest, NoRequestLeavesTheConfigUntouched) {
  install_spec();
  for (const auto& env :
       {std::vector<std::string>{}, {"NVIDIA_VISIBLE_DEVICES="}, {"NVIDIA_VISIBLE_DEVICES=void"}}) {
    auto config = runc_config(env);
    const auto before = config;
    auto result = inject(config);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_FALSE(result->changed);
    EXPECT_EQ(config, before);
  }
}

TEST_F(InjectTest, CapabilitiesFilterDriverFiles) {
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=utility"});
  ASSERT_TRUE(inject(config));
  EXPECT_TRUE(has_mount(config, "/usr/bin/nvidia-smi"));
  EXPECT_TRUE(has_mount(config, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.183.01"));
  EXPECT_FALSE(has_mount(config, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"));
  EXPECT_FALSE(has_mount(config, "/usr/lib/i386-linux-gnu/libnvidia-ml.so.535.183.01"));
  EXPECT_TRUE(has_mount(config, "/lib/firmware/nvidia/535.183.01/gsp_tu10x.bin"))
      << "firmware goes with every set";

  auto with32 = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=compute,compat32"});
  ASSERT_TRUE(inject(with32));
  EXPECT_TRUE(has_mount(with32, "/usr/lib/i386-linux-gnu/libcuda.so.535.183.01"));
  EXPECT_FALSE(has_mount(with32, "/usr/bin/nvidia-smi"));
}

// Every argument of the config's createContainer hooks (--link, --ld-cache-entry values) that mentions
// `name`.
std::vector<std::string> hook_args_naming(const ordered_json& config, std::string_view name) {
  std::vector<std::string> out;
  for (const auto& hook : config["hooks"]["createContainer"]) {
    for (const auto& arg : hook["args"]) {
      if (arg.get<std::string>().find(name) != std::string::npos) {
        out.push_back(arg);
      }
    }
  }
  return out;
}

TEST_F(InjectTest, ALinkWithDotDotIntoADroppedFileIsDroppedToo) {
  install_spec();
  const std::string gbm = "../libnvidia-allocator.so.1::/usr/lib/x86_64-linux-gnu/gbm/nvidia-drm_gbm.so";
  auto compute = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=compute"});
  ASSERT_TRUE(inject(compute));
  ASSERT_EQ(hook_args_naming(compute, "nvidia-drm_gbm.so"), std::vector<std::string>{gbm});
  auto utility = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=utility"});
  ASSERT_TRUE(inject(utility));
  EXPECT_FALSE(has_mount(utility, "/usr/lib/x86_64-linux-gnu/libnvidia-allocator.so.535.183.01"));
  EXPECT_EQ(hook_args_naming(utility, "nvidia-drm_gbm.so"), std::vector<std::string>{})
      << "the link would dangle in the container";
}

TEST_F(InjectTest, NoneInjectsTheDriverWithoutGpuNodes) {
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=none"});
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  const auto paths = device_paths(config);
  EXPECT_NE(std::ranges::find(paths, "/dev/nvidiactl"), paths.end());
  EXPECT_EQ(std::ranges::find(paths, "/dev/nvidia0"), paths.end());
  EXPECT_TRUE(has_mount(config, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"));
}

TEST_F(InjectTest, UnknownDeviceListsTheDevicesThatExist) {
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=99"});
  auto result = inject(config);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "unknown device \"nvidia.com/gpu=99\" (devices: 0, " +
                                        m_fixture->manifest.gpus[0].uuid + ", all)");
}

// A node with many devices (8 GPUs in MIG mode have over a hundred names) must not make the error a
// kilobyte long: the first names in sorted order, then how many more.
TEST_F(InjectTest, UnknownDeviceListsAtMostTenNames) {
  std::string spec = "cdiVersion: \"0.5.0\"\nkind: \"example.com/gpu\"\ndevices:\n";
  for (const std::string name :
       {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "all", "GPU-x"}) {
    spec += "  - name: \"" + name + "\"\n    containerEdits:\n      env: [\"A=" + name + "\"]\n";
  }
  ASSERT_TRUE(write_file_atomic(m_cfg.spec_dirs[0] + "/example.yaml", spec, 0644));
  auto config = runc_config({});
  config["annotations"] = {{"cdi.k8s.io/x", "example.com/gpu=99"}};
  auto result = inject(config);
  ASSERT_FALSE(result);
  EXPECT_EQ(
      result.error().message,
      "unknown device \"example.com/gpu=99\" (devices: 0, 1, 10, 11, 2, 3, 4, 5, 6, 7 and 4 more; gpuctk "
      "cdi list shows all)");
}

TEST_F(InjectTest, WithoutAnInstalledSpecTheSpecIsBuiltInMemory) {
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=" + m_fixture->manifest.gpus[0].uuid});
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->spec_source, "in-memory spec (driver 535.183.01)");
  const auto paths = device_paths(config);
  EXPECT_NE(std::ranges::find(paths, "/dev/nvidia0"), paths.end());
}

// A non-root process gets the groups of the GPU's 0660 card and render nodes (video 44, render 105) after
// its own, each once, from the installed spec and from the in-memory one alike, as the CDI library
// applies additionalGids; the config's no-additional-gids-for-device-nodes leaves them out of the
// in-memory spec (an installed spec is applied as written).
TEST_F(InjectTest, TheProcessGetsTheGroupsOfTheNodesItCouldNotOpenOtherwise) {
  const auto user_config = [] {
    auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0"});
    config["process"]["user"] = {{"uid", 1000}, {"gid", 1000}, {"additionalGids", {105, 7}}};
    return config;
  };
  const ordered_json expected = {{"uid", 1000}, {"gid", 1000}, {"additionalGids", {105, 7, 44}}};
  auto in_memory = user_config();
  auto result = inject(in_memory);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->spec_source, "in-memory spec (driver 535.183.01)");
  EXPECT_EQ(in_memory["process"]["user"], expected);

  m_cfg.no_additional_gids_for_device_nodes = true;
  auto off = user_config();
  ASSERT_TRUE(inject(off));
  EXPECT_EQ(off["process"]["user"], user_config()["process"]["user"]);

  install_spec();
  auto installed = user_config();
  ASSERT_TRUE(inject(installed));
  EXPECT_EQ(installed["process"]["user"], expected);
}

// The default spec leaves the 32-bit libraries out (cdi::BuildOptions::libraries32), the in-memory one
// keeps them for the capability filter: compat32 gets them with their links and linker cache entries, any
// other request none of them.
TEST_F(InjectTest, TheInMemorySpecHasThe32BitLibrariesForCompat32Only) {
  auto with32 = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=compute,compat32"});
  auto result = inject(with32);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->spec_source, "in-memory spec (driver 535.183.01)");
  EXPECT_TRUE(has_mount(with32, "/usr/lib/i386-linux-gnu/libcuda.so.535.183.01"));
  EXPECT_TRUE(has_mount(with32, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"));
  EXPECT_EQ(hook_args_naming(with32, "/usr/lib/i386-linux-gnu/libcuda.so.1"),
            (std::vector<std::string>{"libcuda.so.535.183.01::/usr/lib/i386-linux-gnu/libcuda.so.1",
                                      "0x3:0x0:libcuda.so.1:/usr/lib/i386-linux-gnu/libcuda.so.1"}));

  auto without = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=compute"});
  ASSERT_TRUE(inject(without));
  EXPECT_FALSE(has_mount(without, "/usr/lib/i386-linux-gnu/libcuda.so.535.183.01"));
  EXPECT_TRUE(has_mount(without, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"));
  EXPECT_EQ(hook_args_naming(without, "/usr/lib/i386-linux-gnu/libcuda.so.1"), std::vector<std::string>{});
}

TEST_F(InjectTest, StaleSpecIsReplacedByAnInMemoryOne) {
  install_spec("530.30.02");
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0"});
  const std::string log_path = m_fixture->temp.path() + "/hook.log";
  m_log = config::Log::open(log_path, config::LogLevel::info).value();
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->spec_source, "in-memory spec (driver 535.183.01)");
  const auto log = read_file(log_path).value();
  EXPECT_NE(
      log.find("warning: " + m_cfg.spec_dirs[0] +
               "/nvidia.yaml was generated for driver 530.30.02, running driver is 535.183.01; building the "
               "spec in memory"),
      std::string::npos)
      << log;
  EXPECT_TRUE(has_mount(config, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"));
}

// nvidia-ctk writes the flag with its value in one argument (--host-driver-version=V): the same spec.
TEST_F(InjectTest, StaleSpecNamingItsDriverAsNvidiaCtkDoesIsReplacedToo) {
  install_spec("530.30.02");
  const std::string path = m_cfg.spec_dirs[0] + "/nvidia.yaml";
  auto spec = cdi::parse_spec(read_file(path).value(), cdi::Format::yaml);
  ASSERT_TRUE(spec) << spec.error().message;
  size_t rewritten = 0;
  for (auto& hook : spec->container_edits.hooks) {
    auto& args = hook.args;
    if (const auto it = std::ranges::find(args, "--host-driver-version"); it != args.end()) {
      *it += "=" + *(it + 1);
      args.erase(it + 1);
      ++rewritten;
    }
  }
  ASSERT_EQ(rewritten, 1u);
  ASSERT_TRUE(write_file_atomic(path, cdi::write_spec(*spec, cdi::Format::yaml), 0644));
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0"});
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->spec_source, "in-memory spec (driver 535.183.01)");
}

TEST_F(InjectTest, EveryInjectedHookHasAnExplicitEnvironment) {
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=all"});
  ASSERT_TRUE(inject(config));
  size_t hooks = 0;
  for (const auto& [stage, list] : config["hooks"].items()) {
    for (const auto& hook : list) {
      ++hooks;
      ASSERT_TRUE(hook.contains("env")) << stage;
      EXPECT_FALSE(hook["env"].empty()) << stage;
    }
  }
  EXPECT_GT(hooks, 0u);
}

TEST_F(InjectTest, RequirementsAreCheckedAgainstTheHost) {
  install_spec();
  auto ok =
      runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_CUDA=cuda>=12.0 brand=tesla,driver>=535"});
  EXPECT_TRUE(inject(ok));
  auto refused = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_CUDA=cuda>=12.5"});
  auto result = inject(refused);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("NVIDIA_REQUIRE_CUDA"), std::string::npos) << result.error().message;
  EXPECT_NE(result.error().message.find("12.2"), std::string::npos) << result.error().message;
  // A brand constraint alone reads the GPUs' information files (the T4 is a Tesla).
  auto tesla = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_BRAND=brand=tesla"});
  EXPECT_TRUE(inject(tesla));
  auto geforce = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_BRAND=brand=geforce"});
  auto no_brand = inject(geforce);
  ASSERT_FALSE(no_brand);
  EXPECT_EQ(no_brand.error().message,
            "unsatisfied requirement NVIDIA_REQUIRE_BRAND=\"brand=geforce\": host GPU brand is tesla");
}

// arch compares the GPUs' compute capability, which only NVML knows (the T4's is 7.5).
TEST_F(InjectTest, ArchRequirementsAreCheckedAgainstNvml) {
  install_spec();
  auto turing = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_ARCH=arch>=7.5,arch<8.0"});
  auto ok = inject(turing);
  EXPECT_TRUE(ok) << ok.error().message;
  auto ampere = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_ARCH=arch>=8.0"});
  auto refused = inject(ampere);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "unsatisfied requirement NVIDIA_REQUIRE_ARCH=\"arch>=8.0\": host GPU architecture is 7.5");
}

TEST_F(InjectTest, MigDevicesByIndexAndUuidOnTheDgx) {
  materialise("dgx-a100");
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=4:0"});
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  const auto paths = device_paths(config);
  EXPECT_NE(std::ranges::find(paths, "/dev/nvidia4"), paths.end());
  EXPECT_EQ(
      std::ranges::count_if(paths, [](const std::string& p) { return p.starts_with("/dev/nvidia-caps/"); }),
      2);
}

// The device plugin's migStrategy "none" hands out a GPU in MIG mode whole, by UUID; asked for by index
// or UUID, through the installed spec or the one built in memory, it is its node and DRM nodes, without
// the capability nodes of its MIG devices.
TEST_F(InjectTest, MigEnabledGpuAskedForWholeByIndexOrUuidOnTheDgx) {
  materialise("dgx-a100");
  ASSERT_FALSE(m_fixture->manifest.gpus.at(4).mig_devices.empty());
  const std::string uuid = m_fixture->manifest.gpus.at(4).uuid;
  for (const bool installed : {true, false}) {
    if (installed) {
      install_spec();
    } else {
      std::filesystem::remove(m_cfg.spec_dirs[0] + "/nvidia.yaml");
    }
    for (const std::string& id : {std::string("4"), uuid}) {
      auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=" + id});
      auto result = inject(config);
      ASSERT_TRUE(result) << id << (installed ? " installed: " : " in memory: ") << result.error().message;
      const auto paths = device_paths(config);
      EXPECT_NE(std::ranges::find(paths, "/dev/nvidia4"), paths.end()) << id;
      EXPECT_NE(std::ranges::find(paths, "/dev/nvidiactl"), paths.end()) << id;
      EXPECT_TRUE(std::ranges::any_of(paths, [](const std::string& p) { return p.starts_with("/dev/dri/"); }))
          << id;
      for (const auto& p : paths) {
        EXPECT_FALSE(p.starts_with("/dev/nvidia-caps/")) << id << ": " << p;
        EXPECT_TRUE(p == "/dev/nvidia4" || !p.starts_with("/dev/nvidia") || p.starts_with("/dev/nvidia-") ||
                    p == "/dev/nvidiactl")
            << id << ": " << p;
      }
    }
  }
}

// The installed spec leaves dynamic majors out; the config gets the host node's numbers at injection,
// also after the node was made again with another major (a reboot, a driver reload).
TEST_F(InjectTest, DynamicMajorsComeFromTheHostNodeAtInjection) {
  install_spec();
  const std::string uvm = m_cfg.dev_root + "/dev/nvidia-uvm";
  ASSERT_EQ(::unlink(uvm.c_str()), 0);
  ASSERT_EQ(::mknod(uvm.c_str(), S_IFCHR | 0666, makedev(487, 0)), 0);
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0"});
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  bool seen = false;
  for (const auto& d : config["linux"]["devices"]) {
    if (d["path"] == "/dev/nvidia-uvm") {
      seen = true;
      EXPECT_EQ(d["major"], 487);
      EXPECT_EQ(d["minor"], 0);
    }
  }
  EXPECT_TRUE(seen);
  bool rule = false;
  for (const auto& r : config["linux"]["resources"]["devices"]) {
    rule = rule || (r.contains("major") && r["major"] == 487 && r["minor"] == 0 && r["allow"] == true);
  }
  EXPECT_TRUE(rule) << config["linux"]["resources"]["devices"].dump();
}

// ---- IMEX channels ---------------------------------------------------------------------------------

// The host's channel nodes, made in the fixture's dev root (the t4 has none): channel<N> has minor N.
void make_imex_channels(const std::string& dev_root, std::initializer_list<unsigned> channels) {
  const std::string dir = dev_root + "/dev/nvidia-caps-imex-channels";
  std::filesystem::create_directories(dir);
  for (const auto channel : channels) {
    const std::string path = dir + "/channel" + std::to_string(channel);
    ASSERT_EQ(::mknod(path.c_str(), S_IFCHR | 0666, makedev(234, channel)), 0) << path;
  }
}

// (path, major, minor) of each device in config.json, and whether the cgroup allows (major, minor).
std::vector<std::tuple<std::string, int, int>> imex_devices(const ordered_json& config) {
  std::vector<std::tuple<std::string, int, int>> out;
  for (const auto& d : config.at("linux").value("devices", ordered_json::array())) {
    if (d["path"].get<std::string>().starts_with("/dev/nvidia-caps-imex-channels/")) {
      out.emplace_back(d["path"], d["major"], d["minor"]);
    }
  }
  return out;
}

bool allowed(const ordered_json& config, int major, int minor) {
  return std::ranges::any_of(config["linux"]["resources"]["devices"], [&](const ordered_json& r) {
    return r.contains("major") && r["major"] == major && r["minor"] == minor && r["allow"] == true;
  });
}

TEST_F(InjectTest, ImexChannelsAreTheHostsNodes) {
  install_spec();
  make_imex_channels(m_cfg.dev_root, {0, 1, 3});
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_IMEX_CHANNELS=3,channel1"});
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  using Node = std::tuple<std::string, int, int>;
  EXPECT_EQ(imex_devices(config), (std::vector<Node>{{"/dev/nvidia-caps-imex-channels/channel3", 234, 3},
                                                     {"/dev/nvidia-caps-imex-channels/channel1", 234, 1}}));
  EXPECT_TRUE(allowed(config, 234, 3));
  EXPECT_TRUE(allowed(config, 234, 1));
  EXPECT_FALSE(allowed(config, 234, 0));
  // Without a GPU request, no channel.
  auto gpuless = runc_config({"NVIDIA_IMEX_CHANNELS=0"});
  ASSERT_TRUE(inject(gpuless));
  EXPECT_TRUE(imex_devices(gpuless).empty());
}

TEST_F(InjectTest, AnImexChannelTheHostLacksIsAnError) {
  install_spec();
  make_imex_channels(m_cfg.dev_root, {0});
  const std::string link = m_cfg.dev_root + "/dev/nvidia-caps-imex-channels/channel2";
  ASSERT_EQ(::symlink("/dev/null", link.c_str()), 0);
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_IMEX_CHANNELS=0,5"});
  auto result = inject(config);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message,
            "IMEX channel 5: " + m_cfg.dev_root + "/dev/nvidia-caps-imex-channels/channel5 does not exist");
  // A link where a channel should be is never followed.
  config = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_IMEX_CHANNELS=2"});
  result = inject(config);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "IMEX channel 2: " + link + ": not a device node");
}

TEST_F(InjectTest, ImexVolumeMountAllIsEveryChannelOfTheHost) {
  install_spec();
  m_cfg.request.accept_volume_mounts = true;
  const auto with_mount = [](std::string_view channel) {
    auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0"});
    config["mounts"].push_back(
        {{"destination", "/var/run/nvidia-container-devices/imex/" + std::string(channel)},
         {"type", "bind"},
         {"source", "/dev/null"},
         {"options", {"bind"}}});
    return config;
  };
  // No channel on the host: none injected, and the container still starts.
  auto none = with_mount("all");
  ASSERT_TRUE(inject(none));
  EXPECT_TRUE(imex_devices(none).empty());
  make_imex_channels(m_cfg.dev_root, {0, 4});
  auto config = with_mount("all");
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  using Node = std::tuple<std::string, int, int>;
  EXPECT_EQ(imex_devices(config), (std::vector<Node>{{"/dev/nvidia-caps-imex-channels/channel0", 234, 0},
                                                     {"/dev/nvidia-caps-imex-channels/channel4", 234, 4}}));
}

// ---- NVIDIA_GDS, NVIDIA_MOFED, NVIDIA_GDRCOPY, NVIDIA_NVSWITCH ---------------------------------------

// The t4 has none of the opt-in features' devices: they are made here. What the host has is injected,
// links and other files never; what it lacks is a warning, and the container starts.
TEST_F(InjectTest, GatedFeaturesGiveTheHostsNodesAndGdsItsFiles) {
  install_spec();
  const auto make = [&](const std::string& path, unsigned minor) {
    std::filesystem::create_directories(std::filesystem::path(m_cfg.dev_root + path).parent_path());
    ASSERT_EQ(::mknod((m_cfg.dev_root + path).c_str(), S_IFCHR | 0666, makedev(240, minor)), 0) << path;
  };
  make("/dev/nvidia-fs0", 0);
  make("/dev/nvidia-fs1", 1);
  make("/dev/infiniband/uverbs0", 2);
  make("/dev/infiniband/rdma_cm", 3);
  make("/dev/gdrdrv", 4);
  ASSERT_EQ(::symlink("/dev/null", (m_cfg.dev_root + "/dev/nvidia-fs9").c_str()), 0);
  ASSERT_EQ(::mkfifo((m_cfg.dev_root + "/dev/infiniband/uverbs1").c_str(), 0600), 0);
  ASSERT_TRUE(write_file_atomic(m_cfg.driver_root + "/etc/cufile.json", "{}", 0644));
  std::filesystem::create_directories(m_cfg.driver_root + "/run/udev/data");
  const std::string log_path = m_fixture->temp.path() + "/hook.log";
  m_log = config::Log::open(log_path, config::LogLevel::info).value();

  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_GDS=enabled", "NVIDIA_MOFED=enabled",
                             "NVIDIA_GDRCOPY=enabled", "NVIDIA_NVSWITCH=enabled"});
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  std::vector<std::string> gated;
  for (const auto& path : device_paths(config)) {
    if (path.starts_with("/dev/nvidia-fs") || path.starts_with("/dev/infiniband") || path == "/dev/gdrdrv" ||
        path.starts_with("/dev/nvidia-nvswitch")) {
      gated.push_back(path);
    }
  }
  EXPECT_EQ(gated, (std::vector<std::string>{"/dev/nvidia-fs0", "/dev/nvidia-fs1", "/dev/infiniband/rdma_cm",
                                             "/dev/infiniband/uverbs0", "/dev/gdrdrv"}));
  for (const auto& m : config["mounts"]) {
    if (m["destination"] == "/etc/cufile.json" || m["destination"] == "/run/udev") {
      EXPECT_EQ(m["source"], m_cfg.driver_root + m["destination"].get<std::string>());
      EXPECT_EQ(m["options"], ordered_json({"ro", "nosuid", "nodev", "rbind", "rprivate"}));
    }
  }
  EXPECT_TRUE(has_mount(config, "/etc/cufile.json"));
  EXPECT_TRUE(has_mount(config, "/run/udev"));
  const auto log = read_file(log_path).value();
  EXPECT_NE(log.find("warning: NVIDIA_NVSWITCH=enabled: no NVSwitch devices on this host "
                     "(/dev/nvidia-nvswitchctl, /dev/nvidia-nvswitch* under " +
                     m_cfg.dev_root + "); none injected"),
            std::string::npos)
      << log;

  // Without a GPU request, nothing.
  auto gpuless = runc_config({"NVIDIA_GDS=enabled"});
  ASSERT_TRUE(inject(gpuless));
  EXPECT_FALSE(has_mount(gpuless, "/etc/cufile.json"));
}

// GDS's files come with its nodes only, as in NVIDIA's v1.20: a host with cuFile's configuration and no
// /dev/nvidia-fs* gives neither (one warning), and the container starts.
TEST_F(InjectTest, GdsFilesWithoutNvidiaFsNodesAreNotMounted) {
  install_spec();
  ASSERT_TRUE(write_file_atomic(m_cfg.driver_root + "/etc/cufile.json", "{}", 0644));
  std::filesystem::create_directories(m_cfg.driver_root + "/run/udev/data");
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_GDS=enabled"});
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_FALSE(has_mount(config, "/etc/cufile.json"));
  EXPECT_FALSE(has_mount(config, "/run/udev"));
  EXPECT_TRUE(has_mount(config, "/usr/bin/nvidia-smi")) << "the GPU's own files still";
}

// ---- NVIDIA_DRIVER_CAPABILITIES and other vendors' devices -------------------------------------------

TEST_F(InjectTest, CapabilitiesFilterOnlyTheDefaultKindsDriverFiles) {
  install_spec();
  ASSERT_TRUE(write_file_atomic(m_cfg.spec_dirs[0] + "/vendor.yaml", R"(cdiVersion: "0.6.0"
kind: vendor.com/nic
containerEdits:
  mounts:
    - hostPath: /opt/vendor/etc/nic.conf
      containerPath: /etc/nic.conf
      options: [ro, bind]
devices:
  - name: eth0
    containerEdits:
      mounts:
        - hostPath: /opt/vendor/lib/libnic.so.1
          containerPath: /usr/lib/x86_64-linux-gnu/libnic.so.1
          options: [ro, nosuid, nodev, bind]
)",
                                0644));
  auto config = runc_config({"NVIDIA_DRIVER_CAPABILITIES=utility"});
  config["annotations"] = {{"cdi.k8s.io/devices", "nvidia.com/gpu=0,vendor.com/nic=eth0"}};
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->devices, (std::vector<std::string>{"nvidia.com/gpu=0", "vendor.com/nic=eth0"}));
  EXPECT_TRUE(has_mount(config, "/etc/nic.conf")) << "spec-wide edit of another spec";
  EXPECT_TRUE(has_mount(config, "/usr/lib/x86_64-linux-gnu/libnic.so.1")) << "device edit of another kind";
  EXPECT_TRUE(has_mount(config, "/usr/bin/nvidia-smi"));
  EXPECT_FALSE(has_mount(config, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01")) << "still filtered";
}

// A file of the default kind's spec that the driver tables do not know (a library of a newer driver, a
// hand edit) goes only with "all": no listed capability says the container needs it.
TEST_F(InjectTest, AFileNoCapabilityClaimsGoesOnlyWithAll) {
  discover::DiscoverOptions o{m_cfg.driver_root, m_cfg.dev_root, discover::Mode::proc, {}, {}};
  auto inv = discover::discover(o);
  ASSERT_TRUE(inv) << inv.error().message;
  auto spec = cdi::build_spec(*inv, cdi::BuildOptions{});
  ASSERT_TRUE(spec);
  const std::string unknown = "/usr/lib/x86_64-linux-gnu/libnvidia-future.so.535.183.01";
  ASSERT_TRUE(write_file_atomic(m_cfg.driver_root + unknown, "", 0644));
  spec->container_edits.mounts.push_back(
      {m_cfg.driver_root + unknown, unknown, {"ro", "nosuid", "nodev", "bind"}});
  ASSERT_TRUE(write_file_atomic(m_cfg.spec_dirs[0] + "/nvidia.yaml",
                                cdi::write_spec(*spec, cdi::Format::yaml), 0644));
  for (const std::string caps : {"utility", "compute,video,graphics,display,ngx", "all"}) {
    auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=" + caps});
    auto result = inject(config);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(has_mount(config, unknown), caps == "all") << caps;
    EXPECT_TRUE(has_mount(config, "/lib/firmware/nvidia/535.183.01/gsp_tu10x.bin")) << caps;
  }
}

// ---- the log -------------------------------------------------------------------------------------------

TEST_F(InjectTest, ANewlineInAnAnnotationKeyCannotForgeALogLine) {
  install_spec();
  const std::string log_path = m_fixture->temp.path() + "/hook.log";
  m_log = config::Log::open(log_path, config::LogLevel::info).value();
  auto config = runc_config({});
  config["annotations"] = {
      {"cdi.k8s.io/x\n2026-11-22T06:19:32Z gpuctk[1] error: forged\r\x1b[1A", "nvidia.com/gpu=0"}};
  ASSERT_TRUE(inject(config));
  const std::string log = read_file(log_path).value();
  const std::string prefix = " gpuctk[" + std::to_string(::getpid()) + "] ";
  size_t lines = 0;
  for (const auto line : split(log, '\n')) {
    if (line.empty()) {
      continue;
    }
    ++lines;
    EXPECT_EQ(line.substr(20, prefix.size()), prefix) << line;  // after "2026-11-22T06:19:32Z"
  }
  EXPECT_EQ(lines, 2u) << log;  // the request, and what was injected
  EXPECT_NE(
      log.find(
          R"(request from annotation cdi.k8s.io/x\n2026-11-22T06:19:32Z gpuctk[1] error: forged\r\x1b[1A: )"
          "nvidia.com/gpu=0\n"),
      std::string::npos)
      << log;
}

TEST_F(InjectTest, InjectDevicesAppliesQualifiedNames) {
  install_spec();
  auto config = runc_config({});
  auto result = inject_devices(config, {"nvidia.com/gpu=all"}, m_cfg, m_log);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE(has_mount(config, "/usr/lib/x86_64-linux-gnu/libnvidia-encode.so.535.183.01"))
      << "every capability";
  auto bad = inject_devices(config, {"nvidia.com/gpu"}, m_cfg, m_log);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "invalid device name \"nvidia.com/gpu\": missing \"=\" (want vendor/class=name)");
}

}  // namespace
}  // namespace gpuctk::inject
