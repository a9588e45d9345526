// The createContainer hooks of nvidia-ctk v1.20.0's own specs for the dgx-a100 and t4-debian fixture hosts
// (tests/data/nvidia-v1.20-specs, README there), each run as a runtime runs it: the built gpuctk through a
// link named nvidia-cdi-hook, with exactly the spec's arguments and environment (@HOST_ROOT@: where the
// fixture host is materialised) and the OCI state on stdin, on a container root that holds what the
// spec mounts (the driver's files copied to their container paths) and a stand-in for /proc's params
// file. What each hook did is checked: every link, the linker cache, the params file, no compat drop-in.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "cdi/codec.hpp"
#include "cli/fixture_host_test.hpp"
#include "cli/run_gpuctk.hpp"
#include "fixtures/builder/ld_cache_reader.hpp"
#include "rootfs/rootfs_test_support.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk {
namespace {

namespace fs = std::filesystem;

class NvidiaCdiHookSpecTest : public test::CliFixtureHostTest,
                              public testing::WithParamInterface<std::string> {
 protected:
  NvidiaCdiHookSpecTest() : CliFixtureHostTest(GetParam()) {}

  // NVIDIA's spec for this host, its @HOST_ROOT@ the materialised root.
  cdi::Spec spec() const {
    const std::string file =
        std::string(GPUCTK_SOURCE_DIR) + "/tests/data/nvidia-v1.20-specs/" + m_host + ".default.yaml";
    std::string text = read_file(file).value_or("");
    const std::string marker = "@HOST_ROOT@";
    for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at)) {
      text.replace(at, marker.size(), m_fixture->host.root);
    }
    auto parsed = cdi::parse_spec(text, cdi::Format::yaml);
    EXPECT_TRUE(parsed) << file << ": " << (parsed ? "" : parsed.error().message);
    return parsed.value_or(cdi::Spec{});
  }

  // A bundle whose root has the spec's mounted files (regular files only: what the hooks read) and the
  // params file procfs would show.
  std::string bundle(const cdi::Spec& spec) const {
    const std::string bundle = m_scratch + "/bundle";
    const std::string root = bundle + "/rootfs";
    test::make_host_dirs(root + "/etc");
    test::write_host_file(bundle + "/config.json", R"({"ociVersion":"1.0.2","root":{"path":"rootfs"}})");
    std::vector<cdi::Mount> mounts = spec.container_edits.mounts;
    for (const auto& device : spec.devices) {
      mounts.insert(mounts.end(), device.container_edits.mounts.begin(), device.container_edits.mounts.end());
    }
    for (const auto& mount : mounts) {
      if (fs::is_regular_file(mount.host_path)) {
        fs::create_directories(fs::path(root + mount.container_path).parent_path());
        fs::copy_file(mount.host_path, root + mount.container_path, fs::copy_options::overwrite_existing);
      }
    }
    const std::string params = m_fixture->host.dev_root + "/proc/driver/nvidia/params";
    test::make_host_dirs(root + "/proc/driver/nvidia");
    test::write_host_file(root + "/proc/driver/nvidia/params", read_file(params).value_or(""));
    return bundle;
  }
};

TEST_P(NvidiaCdiHookSpecTest, EveryHookLineDoesWhatItSays) {
  const cdi::Spec nvidia = spec();
  std::vector<cdi::Hook> hooks = nvidia.container_edits.hooks;
  for (const auto& device : nvidia.devices) {
    hooks.insert(hooks.end(), device.container_edits.hooks.begin(), device.container_edits.hooks.end());
  }
  ASSERT_GE(hooks.size(), 6U);
  const std::string dir = bundle(nvidia);
  const std::string root = dir + "/rootfs";
  const std::string link = test::link_gpuctk_as(m_scratch, "nvidia-cdi-hook");
  const std::string config = m_scratch + "/gpuctk.yaml";
  test::write_host_file(
      config, "log-file: " + m_scratch + "/gpuctk.log\ndev-root: " + m_fixture->host.dev_root + "\n");
  const std::string state =
      R"({"ociVersion":"1.0.2","id":"x","status":"creating","pid":1,"bundle":")" + dir + R"("})";
  const std::string host_params =
      read_file(m_fixture->host.dev_root + "/proc/driver/nvidia/params").value_or("");
  ASSERT_NE(host_params.find("ModifyDeviceFiles: 1\n"), std::string::npos) << host_params;

  // The GPUs a runtime gave the container (minors 0 and 2), and what update-application-profile must
  // leave out: the control node, a regular file named like a GPU's node.
  test::make_host_dirs(root + "/dev");
  for (const auto& [name, minor] : {std::pair{"nvidia0", 0U}, {"nvidia2", 2U}, {"nvidiactl", 255U}}) {
    ASSERT_EQ(::mknod((root + "/dev/" + name).c_str(), S_IFCHR | 0666, ::makedev(195, minor)), 0) << name;
  }
  test::write_host_file(root + "/dev/nvidia7", "");

  // In a mount namespace of its own: disable-device-node-modification mounts over the root's params.
  const std::string report = test::in_private_mount_ns([&]() -> std::string {
    std::string out;
    std::set<std::string> ran;
    for (const auto& hook : hooks) {
      if (hook.path != "/usr/bin/nvidia-cdi-hook" || hook.args.empty() || hook.args[0] != "nvidia-cdi-hook" ||
          hook.hook_name != "createContainer") {
        out += "not an nvidia-cdi-hook createContainer hook: " + hook.path + "\n";
        continue;
      }
      std::vector<std::string> env = hook.env;
      env.insert(env.end(), {"GPUCTK_CONFIG=" + config, "PATH=/usr/sbin:/usr/bin:/sbin:/bin"});
      const std::vector<std::string> args(hook.args.begin() + 1, hook.args.end());
      const auto r = test::run_program(link, args, state, env, m_scratch);
      if (r.exit_code != 0 || !r.err.empty()) {
        out += join(args, " ") + ": exit " + std::to_string(r.exit_code) + ": " + r.err;
      }
      ran.insert(args[0]);
      // What it did.
      for (size_t i = 1; args[0] == "create-symlinks" && i + 1 < args.size(); i += 2) {
        const size_t colons = args[i + 1].find("::");
        const std::string target = args[i + 1].substr(0, colons);
        const std::string path = args[i + 1].substr(colons + 2);
        if (test::host_readlink(root + path) != target) {
          out += "no link " + path + " -> " + target + "\n";
        }
      }
    }
    const std::string params = read_file(root + "/proc/driver/nvidia/params").value_or("");
    if (params.find("ModifyDeviceFiles: 0\n") == std::string::npos) {
      out += "params not hidden: " + params;
    }
    out += "ran: " + join(ran, " ") + "\n";
    return out;
  });
  EXPECT_EQ(
      report,
      "ran: create-symlinks disable-device-node-modification enable-cuda-compat update-application-profile "
      "update-ldcache\n");
  // update-application-profile: GPUs 0 and 2 visible to EGL/Vulkan, as NVIDIA's hook writes it.
  EXPECT_EQ(read_file(root + "/etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf").value_or(""),
            R"({"profiles":[{"name":"_container_","settings":["EGLVisibleDGPUDevices",0x5]}],)"
            R"("rules":[{"pattern":[],"profile":"_container_"}]})");

  // update-ldcache: the container's linker cache lists the driver's libraries at their container paths.
  const auto cache = fixture::parse_ld_cache(read_file(root + "/etc/ld.so.cache").value_or(""));
  ASSERT_TRUE(cache) << cache.error().message;
  std::set<std::string> listed;
  for (const auto& entry : *cache) {
    listed.insert(entry.soname + " " + entry.path);
  }
  for (const std::string lib : {"libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-ptxjitcompiler.so.1"}) {
    EXPECT_TRUE(listed.contains(lib + " /usr/lib/x86_64-linux-gnu/" + lib))
        << lib << " in " << join(listed, ", ");
  }
  // enable-cuda-compat: the image has no compat libraries, so no drop-in.
  EXPECT_FALSE(fs::exists(root + "/etc/ld.so.conf.d/00-gpuctk-compat.conf"));
}

// "dgx-a100" -> "dgx_a100": a test name.
std::string host_test_name(const testing::TestParamInfo<std::string>& host) {
  std::string name = host.param;
  std::ranges::replace(name, '-', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Hosts, NvidiaCdiHookSpecTest, testing::Values("dgx-a100", "t4-debian"),
                         host_test_name);

}  // namespace
}  // namespace gpuctk
