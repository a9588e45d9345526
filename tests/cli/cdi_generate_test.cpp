// gpuctk cdi generate and gpuctk info as a user runs them: output files, formats, and one clear error
// line with no partial file for every failure.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/fixture_host_test.hpp"
#include "cli/run_gpuctk.hpp"
#include "fixtures/builder/hosts.hpp"
#include "support/fixture_host.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk {
namespace {

class CliCdiGenerateTest : public test::CliFixtureHostTest {
 protected:
  CliCdiGenerateTest() : CliFixtureHostTest("t4-debian") {}
  test::RunResult generate(std::vector<std::string> extra) {
    std::vector<std::string> args{"cdi",           "generate",
                                  "--driver-root", m_fixture->host.driver_root,
                                  "--dev-root",    m_fixture->host.dev_root};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_gpuctk(args, m_scratch);
  }
};

// GPU 4 of the DGX is in MIG mode. The device plugin's migStrategy "none" hands it out whole, by UUID:
// `cdi generate --device-ids`, the precreate hook and the shim (with /bin/true for runc) all give it,
// as its node without the capability nodes of its MIG devices; an unknown id lists only ids that resolve.
TEST(CliMigParent, GenerateHookAndShimGiveAMigModeGpuWhole) {
  const auto f = test::host_with_real_nodes("dgx-a100");
  if (!f) {
    return;
  }
  const std::string scratch = f->temp.path() + "/scratch";
  std::filesystem::create_directories(scratch + "/cdi");
  std::filesystem::create_directories(scratch + "/bundle/rootfs");
  const std::string uuid = f->manifest.gpus.at(4).uuid;
  ASSERT_FALSE(f->manifest.gpus.at(4).mig_devices.empty());
  const std::vector<std::string> roots{"--driver-root", f->host.driver_root, "--dev-root", f->host.dev_root};
  const auto generate = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"cdi", "generate", "--mode", "proc", "--format", "json"};
    args.insert(args.end(), roots.begin(), roots.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_gpuctk(args, scratch);
  };
  for (const std::string& id : {std::string("4"), uuid}) {
    const auto r = generate({"--device-ids", id});
    ASSERT_EQ(r.exit_code, 0) << id << ": " << r.err;
    const auto spec = nlohmann::json::parse(r.out);
    std::vector<std::string> names;
    for (const auto& d : spec["devices"]) {
      names.push_back(d["name"]);
    }
    EXPECT_EQ(names, (std::vector<std::string>{"4", uuid, "all"})) << id;
    EXPECT_EQ(r.out.find("nvidia-caps"), std::string::npos) << id;
    EXPECT_NE(r.out.find("\"/dev/nvidia4\""), std::string::npos) << id;
  }
  const auto unknown = generate({"--device-ids", "9"});
  EXPECT_EQ(unknown.exit_code, 1);
  std::string ids;  // every GPU (MIG mode or not) and MIG device of the manifest
  for (size_t i = 0; i < f->manifest.gpus.size(); ++i) {
    ids += (ids.empty() ? "" : ", ") + std::to_string(i);
    for (size_t m = 0; m < f->manifest.gpus[i].mig_devices.size(); ++m) {
      ids += ", " + std::to_string(i) + ":" + std::to_string(m);
    }
  }
  EXPECT_EQ(unknown.err,
            "gpuctk: error: unknown device id \"9\" (devices: " + ids + ", their UUIDs, or all)\n");

  // The installed spec, as the hook and the shim read it.
  ASSERT_EQ(generate({"--output", scratch + "/cdi/nvidia.yaml"}).exit_code, 0);
  const std::string config = scratch + "/gpuctk.yaml";
  ASSERT_TRUE(write_file_atomic(config,
                                "spec-dirs: [" + scratch + "/cdi]\ndriver-root: " + f->host.driver_root +
                                    "\ndev-root: " + f->host.dev_root + "\nruntimes: [/bin/true]\n",
                                0644));
  const auto write_bundle = [&] {
    const nlohmann::json c = {
        {"ociVersion", "1.0.2"},
        {"process", {{"args", {"/bin/true"}}, {"env", {"NVIDIA_VISIBLE_DEVICES=" + uuid}}}},
        {"root", {{"path", "rootfs"}}}};
    EXPECT_TRUE(write_file_atomic(scratch + "/bundle/config.json", c.dump(), 0644));
  };
  const auto devices = [](const nlohmann::json& c) {
    std::vector<std::string> paths;
    for (const auto& d : c["linux"]["devices"]) {
      paths.push_back(d["path"]);
    }
    return paths;
  };
  const auto expect_whole_gpu4 = [&](const std::vector<std::string>& paths, const char* who) {
    EXPECT_NE(std::ranges::find(paths, "/dev/nvidia4"), paths.end()) << who;
    EXPECT_NE(std::ranges::find(paths, "/dev/dri/card5"), paths.end()) << who;
    for (const auto& p : paths) {
      EXPECT_FALSE(p.starts_with("/dev/nvidia-caps")) << who << ": " << p;
    }
  };
  write_bundle();
  const auto hook = test::run_gpuctk({"hook", "precreate", "--config", config}, scratch,
                                     {.stdin_path = scratch + "/bundle/config.json"});
  ASSERT_EQ(hook.exit_code, 0) << hook.err;
  expect_whole_gpu4(devices(nlohmann::json::parse(hook.out)), "hook precreate");

  const std::string shim = scratch + "/gpuctk-runtime";
  ASSERT_EQ(::symlink(GPUCTK_BINARY, shim.c_str()), 0);
  const auto created = test::run_gpuctk({"create", "--bundle", scratch + "/bundle", "c1"}, scratch,
                                        {.program = shim, .env = {"GPUCTK_CONFIG=" + config}});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  expect_whole_gpu4(devices(nlohmann::json::parse(read_file(scratch + "/bundle/config.json").value())),
                    "shim");
}

// The RTX PRO 6000 host's MIG device 0:0 has the graphics-capable profile 1g.24gb+gfx: `cdi generate`
// gives it the GPU's card and render nodes and their by-path links, as nvidia-ctk 1.20 does; the plain
// 1g.24gb device 0:1 gets only its GPU's node and its capability nodes.
TEST(CliGraphicsMig, GfxMigDeviceGetsItsGpusDrmNodesAndLinksAPlainOneNeither) {
  const auto f = test::host_with_real_nodes("rtx-pro-6000-mig");
  if (!f) {
    return;
  }
  const std::string scratch = f->temp.path() + "/scratch";
  std::filesystem::create_directories(scratch);
  const auto r = test::run_gpuctk({"cdi", "generate", "--mode", "nvml", "--format", "json", "--driver-root",
                                   f->host.driver_root, "--dev-root", f->host.dev_root},
                                  scratch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto spec = nlohmann::json::parse(r.out);
  const auto device = [&](const std::string& name) {
    for (const auto& d : spec["devices"]) {
      if (d["name"] == name) {
        return d["containerEdits"];
      }
    }
    ADD_FAILURE() << "no device " << name;
    return nlohmann::json::object();
  };
  const auto paths = [](const nlohmann::json& edits) {
    std::vector<std::string> out;
    for (const auto& n : edits.value("deviceNodes", nlohmann::json::array())) {
      out.push_back(n["path"]);
    }
    return out;
  };
  const auto gfx = device("0:0");
  const auto plain = device("0:1");
  const auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::ranges::find(v, s) != v.end();
  };
  EXPECT_TRUE(has(paths(gfx), "/dev/dri/card1")) << gfx.dump();
  EXPECT_TRUE(has(paths(gfx), "/dev/dri/renderD128")) << gfx.dump();
  ASSERT_EQ(gfx.value("hooks", nlohmann::json::array()).size(), 1u) << gfx.dump();
  const std::vector<std::string> args = gfx["hooks"][0]["args"];
  EXPECT_TRUE(has(args, "create-symlinks"));
  EXPECT_TRUE(has(args, "../card1::/dev/dri/by-path/pci-0000:17:00.0-card")) << gfx.dump();
  EXPECT_TRUE(has(args, "../renderD128::/dev/dri/by-path/pci-0000:17:00.0-render")) << gfx.dump();
  EXPECT_FALSE(std::ranges::any_of(paths(plain), [](const std::string& p) {
    return p.starts_with("/dev/dri/");
  })) << plain.dump();
  EXPECT_FALSE(plain.contains("hooks")) << plain.dump();
}

TEST_F(CliCdiGenerateTest, WritesYamlToStdoutByDefault) {
  const auto r = generate({"--hook-path", "/usr/bin/gpuctk"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // 0.7.0: the T4's card and render nodes are 0660 (video 44, render 105), so its devices add both
  // groups, as NVIDIA's v1.20.0 spec of this host does.
  EXPECT_TRUE(r.out.starts_with("---\ncdiVersion: \"0.7.0\"\nkind: \"nvidia.com/gpu\"\n"))
      << r.out.substr(0, 80);
  EXPECT_NE(r.out.find("  - name: \"all\"\n"), std::string::npos);
  EXPECT_NE(r.out.find("      additionalGids:\n        - 44\n        - 105\n"), std::string::npos) << r.out;
}

// nvidia-ctk's --feature-flag no-additional-gids-for-device-nodes (or the config's key of that name, which
// the refresh service's command line needs) leaves them out: a spec podman 4.3.1 reads (0.5.0, the
// separate dev root's hostPath). Flags of v1.20 that gpuctk does not support are one usage error line.
TEST_F(CliCdiGenerateTest, FeatureFlagOrConfigKeyLeavesOutAdditionalGids) {
  const auto off =
      generate({"--hook-path", "/usr/bin/gpuctk", "--feature-flag", "no-additional-gids-for-device-nodes"});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_TRUE(off.out.starts_with("---\ncdiVersion: \"0.5.0\"\n")) << off.out.substr(0, 80);
  EXPECT_EQ(off.out.find("additionalGids"), std::string::npos);
  const auto plural = generate({"--hook-path", "/usr/bin/gpuctk", "--feature-flags",
                                "disable-nvsandboxutils,no-additional-gids-for-device-nodes"});
  ASSERT_EQ(plural.exit_code, 0) << plural.err;
  EXPECT_EQ(plural.out, off.out);

  const std::string config = m_scratch + "/gpuctk.yaml";
  ASSERT_TRUE(write_file_atomic(config, "no-additional-gids-for-device-nodes: true\n", 0644));
  const std::vector<std::string> args{"cdi",           "generate",
                                      "--driver-root", m_fixture->host.driver_root,
                                      "--dev-root",    m_fixture->host.dev_root,
                                      "--hook-path",   "/usr/bin/gpuctk"};
  const auto keyed = test::run_gpuctk(args, m_scratch, {.env = {"GPUCTK_CONFIG=" + config}});
  ASSERT_EQ(keyed.exit_code, 0) << keyed.err;
  EXPECT_EQ(keyed.out, off.out);
  const auto by_env = test::run_gpuctk(
      args, m_scratch, {.env = {"GPUCTK_CDI_GENERATE_FEATURE_FLAG=no-additional-gids-for-device-nodes"}});
  ASSERT_EQ(by_env.exit_code, 0) << by_env.err;
  EXPECT_EQ(by_env.out, off.out);

  const auto refused = generate({"--feature-flag", "enable-coherent-annotations"});
  EXPECT_EQ(test::usage_error(refused),
            "gpuctk: error: --feature-flag: feature flag \"enable-coherent-annotations\" is not supported by "
            "gpuctk: gpuctk writes no device annotations (see gpuctk cdi generate --help)\n");
  EXPECT_EQ(refused.out, "");
}

// --feature-flag disable-ipc-discoverer leaves out the persistenced socket this host has.
TEST_F(CliCdiGenerateTest, DisableIpcDiscovererLeavesOutTheSockets) {
  const auto plain = generate({"--hook-path", "/usr/bin/gpuctk"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("containerPath: \"/run/nvidia-persistenced/socket\""), std::string::npos);
  const auto without =
      generate({"--hook-path", "/usr/bin/gpuctk", "--feature-flag", "disable-ipc-discoverer"});
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_EQ(without.out.find("nvidia-persistenced/socket"), std::string::npos);
}

// --disable-hook and --enable-hook take comma lists and NVIDIA's v1.20 names; --enable-hook all is one
// usage error line.
TEST_F(CliCdiGenerateTest, HookListsAndEnableHook) {
  const auto comma = generate(
      {"--hook-path", "/usr/bin/gpuctk", "--disable-hook", "update-ldcache,update-application-profile"});
  ASSERT_EQ(comma.exit_code, 0) << comma.err;
  const auto repeated = generate({"--hook-path", "/usr/bin/gpuctk", "--disable-hook", "update-ldcache",
                                  "--disable-hooks", "update-application-profile"});
  ASSERT_EQ(repeated.exit_code, 0) << repeated.err;
  EXPECT_EQ(comma.out, repeated.out);
  EXPECT_EQ(comma.out.find("--folder"), std::string::npos);
  EXPECT_EQ(comma.out.find("--update-application-profile"), std::string::npos);
  EXPECT_NE(comma.out.find("--disable-device-node-modification"), std::string::npos);

  const auto chmod = generate({"--hook-path", "/usr/bin/gpuctk", "--enable-hook", "chmod"});
  ASSERT_EQ(chmod.exit_code, 0) << chmod.err;
  EXPECT_NE(chmod.out.find("            - \"chmod\"\n            - \"--mode\"\n            - \"755\"\n"
                           "            - \"--path\"\n            - \"/dev/dri\"\n"),
            std::string::npos)
      << chmod.out;
  const auto all = generate({"--enable-hook", "all"});
  EXPECT_EQ(
      test::usage_error(all),
      "gpuctk: error: --enable-hook: --enable-hook all: enabling all hooks is not supported (name each: "
      "create-symlinks, enable-cuda-compat, update-ldcache, disable-device-node-modification, "
      "update-application-profile, chmod) (see gpuctk cdi generate --help)\n");
  EXPECT_EQ(all.out, "");
}

// --device-id none: the driver's files and hooks with no GPU, as NVIDIA's v1.20 writes it.
TEST_F(CliCdiGenerateTest, DeviceIdNoneWritesTheEmptyDeviceOnly) {
  const auto r = generate({"--hook-path", "/usr/bin/gpuctk", "--device-id", "none", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto spec = nlohmann::json::parse(r.out);
  ASSERT_EQ(spec["devices"].size(), 1u) << r.out;
  EXPECT_EQ(spec["devices"][0]["name"], "none");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["env"], nlohmann::json::array({"NVCT_EMPTY_DEVICE="}));
  EXPECT_EQ(r.out.find("/dev/nvidia0"), std::string::npos);
  EXPECT_NE(r.out.find("libcuda.so.535.183.01"), std::string::npos);
}

// The 32-bit driver libraries only with --compat32 (issue 24 cut 3): NVIDIA's spec leaves them out too.
TEST_F(CliCdiGenerateTest, ThirtyTwoBitLibrariesOnlyWithCompat32) {
  const auto plain = generate({"--hook-path", "/usr/bin/gpuctk"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("i386"), std::string::npos) << "no mount, link or --folder of the i386 folder";
  EXPECT_NE(plain.out.find("containerPath: \"/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01\""),
            std::string::npos);

  const auto count = [](const std::string& text, std::string_view what) {
    size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
      ++n;
    }
    return n;
  };
  const auto with32 = generate({"--hook-path", "/usr/bin/gpuctk", "--compat32"});
  ASSERT_EQ(with32.exit_code, 0) << with32.err;
  EXPECT_EQ(count(with32.out, "containerPath: \"/usr/lib/i386-linux-gnu/"), 16u);
  EXPECT_EQ(count(with32.out, "::/usr/lib/i386-linux-gnu/"), 13u);
  EXPECT_NE(with32.out.find("        - \"--folder\"\n        - \"/usr/lib/i386-linux-gnu\"\n"),
            std::string::npos);
  EXPECT_NE(with32.out.find("        - \"--folder\"\n        - \"/usr/lib/i386-linux-gnu/vdpau\"\n"),
            std::string::npos);
}

TEST_F(CliCdiGenerateTest, OutputFileIsAtomicMode0644AndFormatFollowsTheExtension) {
  const std::string path = m_scratch + "/nvidia.json";
  const auto r = generate({"--output", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  const auto text = read_file(path).value();
  EXPECT_TRUE(text.starts_with("{\n  \"cdiVersion\": \"0.7.0\",\n")) << text.substr(0, 60);
  // The hooks run this very binary unless --hook-path says otherwise.
  EXPECT_NE(text.find("\"path\": \"" + std::filesystem::canonical(GPUCTK_BINARY).string() + "\""),
            std::string::npos);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(m_scratch), {}), 1) << "no temporary file left";
}

// A spec outlives the gpuctk that wrote it: when an installed gpuctk exists (the config's hook-path), the
// hooks run that one, not this build tree's, and a note says so.
TEST_F(CliCdiGenerateTest, TheHooksRunTheInstalledGpuctkWhenThereIsOne) {
  const std::string installed = m_fixture->temp.path() + "/usr/bin/gpuctk";
  std::filesystem::create_directories(m_fixture->temp.path() + "/usr/bin");
  ASSERT_EQ(::symlink(GPUCTK_BINARY, installed.c_str()), 0);
  const std::string config = m_fixture->temp.path() + "/gpuctk.yaml";
  ASSERT_TRUE(write_file_atomic(config, "hook-path: " + installed + "\n", 0644));
  const std::string path = m_scratch + "/nvidia.yaml";
  std::vector<std::string> args{"cdi",           "generate",
                                "--driver-root", m_fixture->host.driver_root,
                                "--dev-root",    m_fixture->host.dev_root,
                                "--output",      path};
  const auto r = test::run_gpuctk(args, m_scratch, {.env = {"GPUCTK_CONFIG=" + config}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string self = std::filesystem::canonical(GPUCTK_BINARY).string();
  const std::string note = "gpuctk: note: the spec's hooks run the installed gpuctk " + installed +
                           ", not this one (" + self + "); --hook-path names another\n";
  ASSERT_TRUE(r.err.starts_with(note)) << r.err;
  // Where the test puts it, the installed path is under a temporary directory: said too, nothing else.
  for (const auto line : split(std::string_view(r.err).substr(note.size()), '\n')) {
    EXPECT_TRUE(line.empty() || line.starts_with("gpuctk: warning: hook path " + installed + " ")) << line;
  }
  const auto text = read_file(path).value();
  EXPECT_NE(text.find("path: \"" + installed + "\""), std::string::npos) << text.substr(0, 400);
  EXPECT_EQ(text.find(self), std::string::npos);
}

TEST_F(CliCdiGenerateTest, UnknownDeviceIdIsOneErrorLineAndNoFile) {
  const std::string path = m_scratch + "/nvidia.yaml";
  const auto r = generate({"--device-ids", "0,GPU-nonexistent", "--output", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "gpuctk: error: unknown device id \"GPU-nonexistent\" (devices: 0, their UUIDs, or all)\n");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(CliCdiGenerateTest, UnwritableOutputNamesThePath) {
  const std::string path = m_scratch + "/no/such/dir/nvidia.yaml";
  const auto r = generate({"--output", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: write " + path + ": create temporary file in " + m_scratch +
                       "/no/such/dir: No such file or directory\n");
}

TEST_F(CliCdiGenerateTest, OutputExtensionRuntimesIgnoreIsRefused) {
  const auto r = generate({"--output", m_scratch + "/nvidia.yml"});
  EXPECT_EQ(test::usage_error(r),
            "gpuctk: error: --output " + m_scratch +
                "/nvidia.yml: unsupported file extension \".yml\" (CDI reads only .json and .yaml files) "
                "(see gpuctk cdi generate --help)\n");
  EXPECT_FALSE(std::filesystem::exists(m_scratch + "/nvidia.yml"));
  // With --format the extension is the user's business.
  EXPECT_EQ(generate({"--output", m_scratch + "/nvidia.yml", "--format", "yaml"}).exit_code, 0);
}

// --mode imex: the host's IMEX channels alone (cdi/imex_spec.hpp has the spec's shape), a kind of the
// user's, no driver discovery; --help names the mode.
TEST_F(CliCdiGenerateTest, ModeImexWritesTheChannelsSpec) {
  if (!m_fixture->host.nodes_are_real) {
    GTEST_SKIP() << "device nodes need root to mknod";
  }
  const std::string dir = m_fixture->host.dev_root + "/dev/nvidia-caps-imex-channels";
  EXPECT_EQ(generate({"--mode", "imex"}).err,
            "gpuctk: error: no devices to generate: no IMEX channels in " + dir + "\n");
  std::filesystem::create_directories(dir);
  for (const unsigned channel : {0U, 1U}) {
    const std::string path = dir + "/channel" + std::to_string(channel);
    ASSERT_EQ(::mknod(path.c_str(), S_IFCHR | 0666, makedev(234, channel)), 0) << path;
    ASSERT_EQ(::chmod(path.c_str(), 0666), 0) << path;  // whatever the umask
  }
  const auto r = generate({"--mode", "imex", "--class", "imex-channel", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto spec = nlohmann::json::parse(r.out);
  EXPECT_EQ(spec["kind"], "nvidia.com/imex-channel");
  std::vector<std::string> names;
  for (const auto& d : spec["devices"]) {
    names.push_back(d["name"]);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"0", "1", "all"}));
  EXPECT_EQ(spec["devices"][1]["containerEdits"]["deviceNodes"][0]["path"],
            "/dev/nvidia-caps-imex-channels/channel1");
  EXPECT_EQ(spec["devices"][1]["containerEdits"]["deviceNodes"][0]["hostPath"], dir + "/channel1");
  EXPECT_EQ(spec["containerEdits"], nlohmann::json::parse(R"({"env": ["NVIDIA_VISIBLE_DEVICES=void"]})"));
  const auto one = generate({"--mode", "imex", "--device-ids", "1", "--no-all-device", "--format", "json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(nlohmann::json::parse(one.out),
            nlohmann::json::parse(R"({"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
    "devices": [{"name": "1", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia-caps-imex-channels/channel1",
      "hostPath": ")" + dir + R"(/channel1", "type": "c", "fileMode": 438, "permissions": "rwm"}]}}],
    "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"]}})"));
  const auto missing = generate({"--mode", "imex", "--device-ids", "7"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "gpuctk: error: IMEX channel 7: " + dir + "/channel7 does not exist\n");
  const auto help = test::run_gpuctk({"cdi", "generate", "--help"}, m_scratch);
  EXPECT_NE(help.out.find("auto, nvml, proc, management, or imex"), std::string::npos) << help.out;
}

// --mode gds, mofed, gdrcopy, nvswitch: that feature's devices alone as the one device "all"
// (cdi/gated_spec.hpp has each spec's shape), no driver discovery; a host without them is one error line
// and no file; --device-ids and --no-all-device are refused; --help names the modes.
TEST_F(CliCdiGenerateTest, GatedModesWriteTheFeaturesSpec) {
  if (!m_fixture->host.nodes_are_real) {
    GTEST_SKIP() << "device nodes need root to mknod";
  }
  const std::string dev = m_fixture->host.dev_root;
  const std::string out = m_scratch + "/mofed.json";
  const auto missing = generate({"--mode", "mofed", "--output", out});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err,
            "gpuctk: error: no devices to generate: no MOFED devices on this host "
            "(/dev/infiniband/uverbs*, /dev/infiniband/rdma_cm under " +
                dev + ")\n");
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::create_directories(dev + "/dev/infiniband");
  for (const auto& [name, minor] : {std::pair{"uverbs0", 0U}, std::pair{"rdma_cm", 1U}}) {
    const std::string path = dev + "/dev/infiniband/" + name;
    ASSERT_EQ(::mknod(path.c_str(), S_IFCHR | 0666, makedev(231, minor)), 0) << path;
    ASSERT_EQ(::chmod(path.c_str(), 0666), 0) << path;  // whatever the umask
  }
  const auto r = generate({"--mode", "mofed", "--class", "mofed", "--output", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto node = [&](const std::string& name) {
    return R"({"path": "/dev/infiniband/)" + name + R"(", "hostPath": ")" + dev + "/dev/infiniband/" + name +
           R"(", "type": "c", "fileMode": 438, "permissions": "rwm"})";
  };
  EXPECT_EQ(nlohmann::json::parse(read_file(out).value()),
            nlohmann::json::parse(R"({"cdiVersion": "0.5.0", "kind": "nvidia.com/mofed",
    "devices": [{"name": "all", "containerEdits": {"deviceNodes": [)" +
                                  node("rdma_cm") + ", " + node("uverbs0") +
                                  R"(]}}], "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"]}})"));
  EXPECT_EQ(generate({"--mode", "mofed", "--device-ids", "all"}).exit_code, 0);
  EXPECT_EQ(generate({"--mode", "mofed", "--device-ids", "0"}).err,
            "gpuctk: error: --device-ids: not with --mode mofed (its spec's one device is \"all\", every "
            "node)\n");
  EXPECT_EQ(generate({"--mode", "mofed", "--no-all-device"}).err,
            "gpuctk: error: --no-all-device: not with --mode mofed (its spec's one device is \"all\")\n");
  EXPECT_EQ(generate({"--mode", "gdrcopy"}).err,
            "gpuctk: error: no devices to generate: no GDRCopy devices on this host (/dev/gdrdrv under " +
                dev + ")\n");
  const auto help = test::run_gpuctk({"cdi", "generate", "--help"}, m_scratch);
  EXPECT_NE(help.out.find("or gds, mofed, gdrcopy, nvswitch"), std::string::npos) << help.out;
}

// Bad values are usage errors (exit 2, one line, found before discovery); tests/cli/app_test.cpp has the
// table of every other kind of mistake.
TEST_F(CliCdiGenerateTest, BadValuesAreUsageErrors) {
  const auto usage = [](const std::string& what) {
    return "gpuctk: error: " + what + " (see gpuctk cdi generate --help)\n";
  };
  auto r = generate({"--mode", "magic"});
  EXPECT_EQ(test::usage_error(r),
            usage("--mode: unknown mode \"magic\" (want auto, nvml, proc, management, imex, gds, "
                  "mofed, gdrcopy or nvswitch)"));
  EXPECT_EQ(r.out, "");
  r = generate({"--hook-path", "gpuctk"});
  EXPECT_EQ(test::usage_error(r), usage("--hook-path: \"gpuctk\" is not an absolute path"));
  r = generate({"--format", "xml"});
  EXPECT_EQ(test::usage_error(r), usage("--format: unknown format \"xml\" (want yaml or json)"));
  r = generate({"--device-name-strategy", "index", "--device-name-strategy", "name"});
  EXPECT_EQ(
      test::usage_error(r),
      usage(
          "--device-name-strategy: unknown device name strategy \"name\" (want index, uuid or type-index)"));
  r = generate({"--disable-hook", "nope"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.err.starts_with("gpuctk: error: --disable-hook: ")) << r.err;
  r = generate({"--vendor", "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.err.starts_with("gpuctk: error: --vendor: ")) << r.err;
  EXPECT_TRUE(r.err.ends_with(" (see gpuctk cdi generate --help)\n")) << r.err;
  r = generate({"--class", "a/b"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.err.starts_with("gpuctk: error: --class: ")) << r.err;
}

TEST_F(CliCdiGenerateTest, NoDriverUnderTheRootIsOneLine) {
  const std::string empty = m_scratch + "/empty";
  std::filesystem::create_directories(empty);
  const auto r =
      test::run_gpuctk({"cdi", "generate", "--driver-root", empty, "--dev-root", empty}, m_scratch);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: no NVIDIA driver version: tried " + empty +
                       "/proc/driver/nvidia/version and libcuda.so.<version> or libnvidia-ml.so.<version> in "
                       "the standard library directories of " +
                       empty + " (none exists)\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(CliCdiGenerateTest, InfoPrintsTheInventory) {
  const auto r = test::run_gpuctk(
      {"info", "--driver-root", m_fixture->host.driver_root, "--dev-root", m_fixture->host.dev_root},
      m_scratch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Driver:      535.183.01 (proprietary kernel module)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CUDA:        12.2\n"), std::string::npos);
  EXPECT_NE(r.out.find("  GPU 0  Tesla T4  0000:00:1e.0  /dev/nvidia0  GPU-"), std::string::npos);
  const auto json = test::run_gpuctk({"info", "--json", "--driver-root", m_fixture->host.driver_root,
                                      "--dev-root", m_fixture->host.dev_root},
                                     m_scratch);
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_TRUE(json.out.starts_with("{\n  \"driverVersion\": \"535.183.01\",\n")) << json.out.substr(0, 60);
}

// Hosts whose libnvidia-ml.so.1 exists but cannot serve (fixtures/hosts/nvml-*): the default mode gives
// the spec of /proc discovery and one warning that says why; --mode nvml fails with that reason.
class CliNvmlCannotServeTest : public test::FixtureHostTest {
 protected:
  void SetUpHost() override {
    ASSERT_TRUE(m_fixture->host.nvml_is_mock);
    m_scratch = m_fixture->temp.path() + "/scratch";
    std::filesystem::create_directories(m_scratch);
  }
  test::RunResult run(const std::string& command, std::vector<std::string> extra) {
    std::vector<std::string> args{command, "--driver-root", m_fixture->host.driver_root, "--dev-root",
                                  m_fixture->host.dev_root};
    if (command == "generate") {
      args.insert(args.begin(), "cdi");
      args.insert(args.end(), {"--hook-path", "/usr/bin/gpuctk"});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = test::run_gpuctk(args, m_scratch);
    result.err = test::without_hook_path_warnings(result.err);  // /usr/bin/gpuctk is not on every host
    return result;
  }
  // The library discovery loads: the ld.so.cache entry of libnvidia-ml.so.1 (the versioned file).
  [[nodiscard]] std::string nvml_library() const { return m_fixture->host.nvml_library; }

  std::string m_scratch;
};

TEST_F(CliNvmlCannotServeTest, InitFailureFallsBackToProcWithOneWarning) {
  use_host("nvml-init-fails");
  if (IsSkipped() || HasFatalFailure()) {
    return;
  }
  const auto proc = run("generate", {"--mode", "proc"});
  ASSERT_EQ(proc.exit_code, 0) << proc.err;
  EXPECT_EQ(proc.err, "");
  const auto automatic = run("generate", {});
  EXPECT_EQ(automatic.exit_code, 0) << automatic.err;
  EXPECT_EQ(automatic.err,
            "gpuctk: warning: nvml: nvmlInit_v2: Driver Not Loaded; GPUs from /proc/driver/nvidia instead\n");
  EXPECT_EQ(automatic.out, proc.out);
  EXPECT_NE(automatic.out.find("  - name: \"0\"\n"), std::string::npos) << automatic.out;

  const auto nvml = run("generate", {"--mode", "nvml"});
  EXPECT_EQ(nvml.exit_code, 1);
  EXPECT_EQ(nvml.err, "gpuctk: error: nvml: nvmlInit_v2: Driver Not Loaded\n");
  EXPECT_EQ(nvml.out, "");
}

TEST_F(CliNvmlCannotServeTest, MissingRequiredEntryPointFallsBackToProcWithOneWarning) {
  use_host("nvml-missing-required");
  if (IsSkipped() || HasFatalFailure()) {
    return;
  }
  const std::string why =
      "nvml: " + nvml_library() + ": missing nvmlSystemGetDriverVersion (a required entry point)";
  const auto proc = run("generate", {"--mode", "proc"});
  ASSERT_EQ(proc.exit_code, 0) << proc.err;
  const auto automatic = run("generate", {});
  EXPECT_EQ(automatic.exit_code, 0) << automatic.err;
  EXPECT_EQ(automatic.err, "gpuctk: warning: " + why + "; GPUs from /proc/driver/nvidia instead\n");
  EXPECT_EQ(automatic.out, proc.out);

  const auto nvml = run("generate", {"--mode", "nvml"});
  EXPECT_EQ(nvml.exit_code, 1);
  EXPECT_EQ(nvml.err, "gpuctk: error: " + why + "\n");
  EXPECT_EQ(nvml.out, "");
  // info reports the same fallback among its warnings.
  const auto info = run("info", {});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("GPU source:  /proc/driver/nvidia\n"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("Warnings:    1\n  " + why), std::string::npos) << info.out;
}

// An older driver's library: no CUDA version, memory info or MIG attributes. NVML still names and places
// every device (MIG devices by UUID too) in both modes; the missing fields are unknown, one warning.
TEST_F(CliNvmlCannotServeTest, MissingOptionalEntryPointsLeaveThoseFieldsUnknown) {
  use_host("nvml-missing-optional");
  if (IsSkipped() || HasFatalFailure()) {
    return;
  }
  const std::string warning = "gpuctk: warning: nvml: " + nvml_library() +
                              " lacks nvmlSystemGetCudaDriverVersion, nvmlDeviceGetMemoryInfo, "
                              "nvmlDeviceGetAttributes_v2 (an older driver?); unknown: the CUDA version, GPU "
                              "memory, MIG profiles and MIG memory\n";
  const auto automatic = run("generate", {});
  EXPECT_EQ(automatic.exit_code, 0) << automatic.err;
  EXPECT_EQ(automatic.err, warning);
  const auto nvml = run("generate", {"--mode", "nvml"});
  EXPECT_EQ(nvml.exit_code, 0) << nvml.err;
  EXPECT_EQ(nvml.err, warning);
  EXPECT_EQ(nvml.out, automatic.out);
  for (const auto* name : {"\"0:0\"", "\"0:1\"", "\"1\"", "\"MIG-c5b0c3e5-75e8-5049-a1a0-1c52f1b739a2\"",
                           "\"GPU-473708f2-6eb9-5708-a0c1-d913c026ccc9\""}) {
    EXPECT_NE(nvml.out.find(std::string("  - name: ") + name + "\n"), std::string::npos) << name;
  }
  const auto info = run("info", {"--mode", "nvml"});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("CUDA:        unknown\n"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("GPU source:  NVML\n"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("    MIG 0:0  ?  gi 2 ci 0"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find(
                "  GPU 1  Tesla T4  0000:0f:00.0  /dev/nvidia1  GPU-473708f2-6eb9-5708-a0c1-d913c026ccc9\n"),
            std::string::npos)
      << info.out;  // no memory column
}

}  // namespace
}  // namespace gpuctk
