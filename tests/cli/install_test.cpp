// `gpuctk install` (its options in src/cli/install.cpp, its steps in src/install/node_install.cpp and
// src/install/install.cpp) through the real binary, on a fake node: a t4-debian fixture host is the host
// root, with containerd's default config.toml in /etc/containerd.
// What lands where (modes, link targets, node paths inside files), that a second run changes nothing,
// that --uninstall puts the node back byte for byte, and --watch with --uninstall-on-exit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "cli/run_gpuctk.hpp"
#include "fixtures/builder/hosts.hpp"
#include "install/fake_engine.hpp"
#include "support/fixture_host.hpp"
#include "util/file.hpp"

namespace gpuctk {
namespace {

namespace fs = std::filesystem;

const std::string k_containerd_toml = "/etc/containerd/config.toml";

class CliInstallTest : public test::FixtureHostTest {
 protected:
  CliInstallTest() : FixtureHostTest("t4-debian") {}
  void SetUpHost() override {
    m_root = m_fixture->host.root;
    ASSERT_EQ(m_fixture->host.driver_root, m_root);
    ASSERT_EQ(m_fixture->host.dev_root, m_root);
    m_scratch = m_fixture->temp.path() + "/scratch";
    fs::create_directories(m_scratch);
    m_original_toml =
        read_file(std::string(GPUCTK_SOURCE_DIR) + "/tests/data/engine/containerd-2-default.toml").value();
    fs::create_directories(m_root + "/etc/containerd");
    ASSERT_TRUE(write_file_atomic(m_root + k_containerd_toml, m_original_toml, 0644));
  }
  std::vector<std::string> install_args(std::vector<std::string> extra) const {
    std::vector<std::string> args{"install", "--host-root", m_root, "--runtime", "containerd"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  test::RunResult install(std::vector<std::string> extra = {}) {
    return test::run_gpuctk(install_args(std::move(extra)), m_scratch);
  }
  std::string at(const std::string& path) const { return m_root + path; }

  // Every file and link below the root, except the fixture's own, with inode and mtime.
  std::map<std::string, std::pair<ino_t, int64_t>> installed_state() const {
    std::map<std::string, std::pair<ino_t, int64_t>> state;
    for (const std::string dir : {"/usr/local/gpuctk", "/etc/gpuctk", "/etc/containerd", "/run/cdi"}) {
      if (!fs::exists(at(dir))) {
        continue;
      }
      for (const auto& entry : fs::recursive_directory_iterator(at(dir))) {
        struct stat st {};
        EXPECT_EQ(::lstat(entry.path().c_str(), &st), 0);
        state[entry.path().string()] = {st.st_ino, st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec};
      }
    }
    return state;
  }

  std::string m_root;
  std::string m_scratch;
  std::string m_original_toml;
};

TEST_F(CliInstallTest, InstallsBinaryLinksConfigRuntimeAndSpecWithNodePaths) {
  // Debian's /var/run -> /run is absolute: it must lead to the node's /run, not the pod's.
  fs::remove(at("/var/run"));
  fs::create_symlink("/run", at("/var/run"));
  const auto r = install();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "installed " + at("/usr/local/gpuctk/bin/gpuctk") + "\nlinked " +
                       at("/usr/local/gpuctk/bin/gpuctk-runtime") + "\nlinked " +
                       at("/usr/local/gpuctk/docker/nvidia-container-runtime-hook") + "\nwrote " +
                       at("/etc/gpuctk/config.yaml") + "\ncontainerd: " +
                       r.out.substr(r.out.find("containerd: ") + 12,
                                    r.out.find("\nspec: ") - r.out.find("containerd: ") - 12) +
                       "\nspec: wrote " + at("/run/cdi/nvidia.yaml") +
                       "\ncontainerd: config changed; not restarted (the node runs no systemd): restart "
                       "containerd for it to take effect\n");

  struct stat st {};
  ASSERT_EQ(::stat(at("/usr/local/gpuctk/bin/gpuctk").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(read_file(at("/usr/local/gpuctk/bin/gpuctk")).value(), read_file(GPUCTK_BINARY).value());
  EXPECT_EQ(fs::read_symlink(at("/usr/local/gpuctk/bin/gpuctk-runtime")), "gpuctk");
  EXPECT_EQ(fs::read_symlink(at("/usr/local/gpuctk/docker/nvidia-container-runtime-hook")), "../bin/gpuctk");
  // The link resolves to the binary below the root too (relative, so right on the node and in the pod).
  EXPECT_TRUE(fs::equivalent(at("/usr/local/gpuctk/docker/nvidia-container-runtime-hook"),
                             at("/usr/local/gpuctk/bin/gpuctk")));

  const auto config = read_file(at("/etc/gpuctk/config.yaml")).value();
  EXPECT_NE(config.find("\nhook-path: /usr/local/gpuctk/bin/gpuctk\ndriver-root: /\ndev-root: /\n"),
            std::string::npos)
      << config;
  ASSERT_EQ(::stat(at("/etc/gpuctk/config.yaml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);

  const auto toml = read_file(at(k_containerd_toml)).value();
  EXPECT_NE(toml.find("BinaryName = \"/usr/local/gpuctk/bin/gpuctk-runtime\""), std::string::npos) << toml;
  EXPECT_EQ(toml.find(m_root), std::string::npos) << "no pod path in the node's containerd config";

  const auto spec = read_file(at("/run/cdi/nvidia.yaml")).value();
  ASSERT_EQ(::stat(at("/run/cdi/nvidia.yaml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_NE(spec.find("path: \"/usr/local/gpuctk/bin/gpuctk\""), std::string::npos);
  EXPECT_EQ(spec.find(m_root), std::string::npos) << "the spec names the node's paths, not the pod's";
  EXPECT_NE(spec.find("hostPath: \"/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01\""), std::string::npos)
      << spec;
  // The same spec `gpuctk cdi generate` writes on the node itself (there: no separate dev root); 0.7.0
  // for the groups of the T4's 0660 card and render nodes (additionalGids).
  EXPECT_TRUE(spec.starts_with("---\ncdiVersion: \"0.7.0\"\nkind: \"nvidia.com/gpu\"\n"))
      << spec.substr(0, 80);
  EXPECT_EQ(spec.find("hostPath: \"/dev/"), std::string::npos) << "a node path equal to the container path";
}

// The spec install writes is also the one the hook and the shim inject from, where a compat32 request
// (NVIDIA_DRIVER_CAPABILITIES=all included) gets the 32-bit driver libraries: they are in it unless
// --no-compat32 (`cdi generate` leaves them out by default, as NVIDIA's spec; issue 24 cut 3).
TEST_F(CliInstallTest, TheSpecHasThe32BitLibrariesUnlessNoCompat32) {
  ASSERT_EQ(install().exit_code, 0);
  auto spec = read_file(at("/run/cdi/nvidia.yaml")).value();
  EXPECT_NE(spec.find("containerPath: \"/usr/lib/i386-linux-gnu/libcuda.so.535.183.01\""), std::string::npos);
  auto r = install({"--no-compat32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nspec: wrote " + at("/run/cdi/nvidia.yaml") + "\n"), std::string::npos) << r.out;
  spec = read_file(at("/run/cdi/nvidia.yaml")).value();
  EXPECT_EQ(spec.find("i386"), std::string::npos);
  r = install({"--compat32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  spec = read_file(at("/run/cdi/nvidia.yaml")).value();
  EXPECT_NE(spec.find("containerPath: \"/usr/lib/i386-linux-gnu/libcuda.so.535.183.01\""), std::string::npos);
}

// For a node whose engine's CDI library predates v0.7.0 (containerd before 1.7.16): the spec without
// additionalGids, nvidia-ctk's flag as `cdi generate` takes it; a flag gpuctk refuses is a usage error.
TEST_F(CliInstallTest, FeatureFlagLeavesAdditionalGidsOutOfTheSpec) {
  ASSERT_EQ(install().exit_code, 0);
  EXPECT_NE(read_file(at("/run/cdi/nvidia.yaml")).value().find("additionalGids"), std::string::npos);
  auto r = install({"--feature-flag", "no-additional-gids-for-device-nodes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto spec = read_file(at("/run/cdi/nvidia.yaml")).value();
  EXPECT_EQ(spec.find("additionalGids"), std::string::npos);
  EXPECT_TRUE(spec.starts_with("---\ncdiVersion: \"0.5.0\"\n")) << spec.substr(0, 40);  // names "0"
  r = install({"--feature-flag", "enable-coherent-annotations"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(
      r.err.starts_with("gpuctk: error: --feature-flag: feature flag \"enable-coherent-annotations\" is not "
                        "supported by gpuctk: "))
      << r.err;
}

TEST_F(CliInstallTest, SecondRunWritesNothingAndSaysUnchanged) {
  ASSERT_EQ(install().exit_code, 0);
  const auto before = installed_state();
  ASSERT_GE(before.size(), 8u);
  const auto r = install();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "unchanged " + at("/usr/local/gpuctk/bin/gpuctk") + "\nunchanged " +
                       at("/usr/local/gpuctk/bin/gpuctk-runtime") + "\nunchanged " +
                       at("/usr/local/gpuctk/docker/nvidia-container-runtime-hook") + "\nunchanged " +
                       at("/etc/gpuctk/config.yaml") + "\ncontainerd: " + at(k_containerd_toml) +
                       " unchanged: runtime \"nvidia\" (/usr/local/gpuctk/bin/gpuctk-runtime) is already "
                       "configured\nspec: unchanged " +
                       at("/run/cdi/nvidia.yaml") + "\n");
  EXPECT_EQ(installed_state(), before);
}

TEST_F(CliInstallTest, KeepsAnEditedConfigUnlessOverwriteConfig) {
  ASSERT_TRUE(fs::create_directories(at("/etc/gpuctk")));
  ASSERT_TRUE(write_file_atomic(at("/etc/gpuctk/config.yaml"), "log-level: debug\n", 0644));
  auto r = install({"--no-runtime-config"});
  ASSERT_EQ(r.exit_code, 2) << "--runtime and --no-runtime-config exclude each other";
  r = test::run_gpuctk({"install", "--host-root", m_root, "--no-runtime-config"}, m_scratch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nunchanged " + at("/etc/gpuctk/config.yaml") + "\n"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(at("/etc/gpuctk/config.yaml")).value(), "log-level: debug\n");
  r = test::run_gpuctk({"install", "--host-root", m_root, "--no-runtime-config", "--overwrite-config",
                        "--driver-root", "/run/nvidia/driver"},
                       m_scratch);
  // No driver below /run/nvidia/driver in the fixture: discovery fails there, and says where.
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(read_file(at("/etc/gpuctk/config.yaml")).value().find("\ndriver-root: /run/nvidia/driver\n"),
            std::string::npos);
  EXPECT_EQ(read_file(at(k_containerd_toml)).value(), m_original_toml) << "--no-runtime-config";
}

TEST_F(CliInstallTest, UninstallRestoresContainerdByteForByteAndRemovesTheRest) {
  ASSERT_EQ(install().exit_code, 0);
  ASSERT_NE(read_file(at(k_containerd_toml)).value(), m_original_toml);
  const auto r = install({"--uninstall"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "spec: removed " + at("/run/cdi/nvidia.yaml") + "\ncontainerd: " +
                       r.out.substr(r.out.find("containerd: ") + 12,
                                    r.out.find("\nremoved " + at("/etc")) - r.out.find("containerd: ") - 12) +
                       "\nremoved " + at("/etc/gpuctk/config.yaml") + "\nremoved " +
                       at("/usr/local/gpuctk/docker/nvidia-container-runtime-hook") + "\nremoved " +
                       at("/usr/local/gpuctk/bin/gpuctk-runtime") + "\nremoved " +
                       at("/usr/local/gpuctk/bin/gpuctk") + "\n");
  EXPECT_EQ(read_file(at(k_containerd_toml)).value(), m_original_toml);
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(at("/etc/containerd"))) {
    left.push_back(entry.path().filename());
  }
  EXPECT_EQ(left, std::vector<std::string>{"config.toml"}) << "no backup or record left";
  for (const std::string gone : {"/usr/local/gpuctk", "/etc/gpuctk", "/run/cdi/nvidia.yaml"}) {
    EXPECT_FALSE(fs::exists(fs::symlink_status(at(gone)))) << gone;
  }
  EXPECT_TRUE(fs::is_directory(at("/usr/local"))) << "only gpuctk's own directories go";
  // Again: nothing left to do.
  const auto again = install({"--uninstall"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out.find("removed"), std::string::npos) << again.out;
}

TEST_F(CliInstallTest, UninstallKeepsAConfigFileSomeoneEdited) {
  ASSERT_EQ(install().exit_code, 0);
  ASSERT_TRUE(write_file_atomic(at("/etc/gpuctk/config.yaml"), "log-level: debug\n", 0644));
  const auto r = install({"--uninstall"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("unchanged " + at("/etc/gpuctk/config.yaml") + "\n"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(at("/etc/gpuctk/config.yaml")).value(), "log-level: debug\n");
}

TEST_F(CliInstallTest, NoDriverIsOneLineAndNoSpecUnlessRequired) {
  const std::string empty = m_fixture->temp.path() + "/bare-node";
  fs::create_directories(empty + "/etc");
  fs::create_directories(empty + "/proc");
  auto r = test::run_gpuctk({"install", "--host-root", empty, "--no-runtime-config"}, m_scratch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.ends_with("\nspec: no NVIDIA driver (" + empty +
                              "/proc/driver/nvidia/version is missing); no spec written\n"))
      << r.out;
  EXPECT_FALSE(fs::exists(empty + "/var/run/cdi"));
  r = test::run_gpuctk({"install", "--host-root", empty, "--no-runtime-config", "--require-spec"}, m_scratch);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "gpuctk: error: spec: no NVIDIA driver (" + empty + "/proc/driver/nvidia/version is missing)\n");
}

// The engine is restarted when (and only when) its config changed: a process serving containerd's socket
// below the host root gets SIGTERM from the first install, nothing from the second, SIGTERM again from the
// uninstall that restores the file.
TEST_F(CliInstallTest, RestartsTheEngineOnlyWhenItsConfigChanged) {
  fs::create_directories(at("/run/containerd"));
  const std::string socket = at("/run/containerd/containerd.sock");
  const std::string line = "containerd: config changed; sent SIGTERM to containerd (pid ";
  const std::string effect =
      ", serving /run/containerd/containerd.sock): it stops gracefully and its supervisor starts it again "
      "with the new config\n";
  {
    test::FakeEngine engine(socket);
    const auto r = install({"--restart-mode", "signal"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out.ends_with("\nspec: wrote " + at("/run/cdi/nvidia.yaml") + "\n" + line +
                                std::to_string(engine.pid()) + effect))
        << r.out;
    EXPECT_EQ(engine.wait(), SIGTERM);
  }
  {
    test::FakeEngine engine(socket);
    const auto r = install({"--restart-mode", "signal"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out.ends_with("\nspec: unchanged " + at("/run/cdi/nvidia.yaml") + "\n")) << r.out;
    EXPECT_TRUE(engine.running()) << "an unchanged config restarts nothing";
    const auto u = install({"--uninstall", "--restart-mode", "signal"});
    ASSERT_EQ(u.exit_code, 0) << u.err;
    EXPECT_NE(u.out.find("\n" + line + std::to_string(engine.pid()) + effect + "removed "), std::string::npos)
        << u.out;
    EXPECT_EQ(engine.wait(), SIGTERM);
  }
  EXPECT_EQ(read_file(at(k_containerd_toml)).value(), m_original_toml);
  EXPECT_FALSE(fs::exists(at(k_containerd_toml) + ".gpuctk-restart"));
}

// A restart that failed stays pending: the next run, which finds the config unchanged, restarts the engine.
TEST_F(CliInstallTest, AFailedRestartIsTriedAgainByTheNextRun) {
  fs::create_directories(at("/run/containerd"));
  const std::string socket = at("/run/containerd/containerd.sock");
  auto r = install({"--restart-mode", "signal"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: connect " + socket + ": No such file or directory\n");
  EXPECT_TRUE(fs::exists(at(k_containerd_toml) + ".gpuctk-restart"));
  test::FakeEngine engine(socket);
  r = install({"--restart-mode", "signal"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      r.out.ends_with("containerd: restart pending from an earlier run; sent SIGTERM to containerd (pid " +
                      std::to_string(engine.pid()) +
                      ", serving /run/containerd/containerd.sock): it stops gracefully and its "
                      "supervisor starts it again with the new config\n"))
      << r.out;
  EXPECT_EQ(engine.wait(), SIGTERM);
  EXPECT_FALSE(fs::exists(at(k_containerd_toml) + ".gpuctk-restart"));
}

TEST_F(CliInstallTest, RestartModeNoneSaysTheEngineMustBeRestarted) {
  const auto r = install({"--restart-mode", "none"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      r.out.ends_with("\ncontainerd: config changed; not restarted (--restart-mode none): restart "
                      "containerd for it to take effect\n"))
      << r.out;
}

TEST_F(CliInstallTest, UsageErrors) {
  auto r = test::run_gpuctk({"install", "--host-root", m_root}, m_scratch);
  EXPECT_EQ(test::usage_error(r),
            "gpuctk: error: missing option --runtime (or --no-runtime-config) (see gpuctk install --help)\n");
  r = install({"--uninstall-on-exit"});
  EXPECT_EQ(test::usage_error(r),
            "gpuctk: error: --uninstall-on-exit needs --watch (see gpuctk install --help)\n");
  r = test::run_gpuctk({"install", "--host-root", m_root, "--runtime", "podman"}, m_scratch);
  EXPECT_EQ(
      test::usage_error(r),
      "gpuctk: error: --runtime: unknown runtime \"podman\" (want containerd, crio or docker) (see gpuctk "
      "install --help)\n");
  r = install({"--restart-mode", "reload"});
  EXPECT_EQ(test::usage_error(r),
            "gpuctk: error: --restart-mode: unknown restart mode \"reload\" (want auto, systemd, signal or "
            "none) (see gpuctk install --help)\n");
  r = install({"--restart-mode", "signal", "--engine-socket", "run/x.sock"});
  EXPECT_EQ(test::usage_error(r),
            "gpuctk: error: --engine-socket: \"run/x.sock\" is not an absolute path (see gpuctk install "
            "--help)\n");
  r = install({"--nvidia-cdi-hook-link", "/usr/bin/hook"});
  EXPECT_EQ(test::usage_error(r),
            "gpuctk: error: --nvidia-cdi-hook-link: \"/usr/bin/hook\" does not end in /nvidia-cdi-hook, the "
            "name NVIDIA's specs run (see gpuctk install --help)\n");
  EXPECT_FALSE(fs::exists(at("/usr/local/gpuctk"))) << "a usage error installs nothing";
}

// Waits up to 30 s for `done`.
template <class Done>
bool eventually(Done done) {
  for (int i = 0; i < 300; ++i) {
    if (done()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TEST_F(CliInstallTest, WatchRegeneratesTheSpecWhenTheDriverChangesAndUninstallsOnSigterm) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    env.emplace_back(*e);
  }
  const std::string out = m_scratch + "/watch.out";
  const pid_t pid =
      test::spawn_logged(GPUCTK_BINARY, install_args({"--watch", "1", "--uninstall-on-exit"}), env, out);
  ASSERT_GT(pid, 0) << "posix_spawn of " << GPUCTK_BINARY;

  const std::string spec = at("/run/cdi/nvidia.yaml");
  ASSERT_TRUE(eventually([&] {
    return read_file(out).value_or("").find("spec: wrote") != std::string::npos;
  })) << read_file(out).value_or("");
  const auto written = read_file(spec).value();
  // A spec that differs from what the driver gives, then a driver change: the spec is written again.
  ASSERT_TRUE(write_file_atomic(spec, "stale\n", 0644));
  const std::string version_file = at("/proc/driver/nvidia/version");
  ASSERT_TRUE(write_file_atomic(version_file, read_file(version_file).value() + "\n", 0444));
  EXPECT_TRUE(eventually([&] { return read_file(spec).value_or("") == written; }))
      << read_file(out).value_or("");

  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const auto text = read_file(out).value_or("");
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 0) << text;
  EXPECT_NE(text.find("\ndriver changed: NVRM version: "), std::string::npos) << text;
  EXPECT_NE(text.find("\nstopping on SIGTERM\nspec: removed " + spec + "\n"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("\nkept " + at("/usr/local/gpuctk/bin/gpuctk") + ", its links and " +
                             at("/etc/gpuctk/config.yaml") +
                             ": running containers of the runtime are stopped through them (gpuctk install "
                             "--uninstall removes them)\n"))
      << text;
  EXPECT_EQ(read_file(at(k_containerd_toml)).value(), m_original_toml);
  EXPECT_FALSE(fs::exists(spec));
  // A container created through the shim is stopped and deleted through it: the binary, its links and
  // the config stay (the shim reads `runtimes` there to reach the container's low-level runtime).
  EXPECT_EQ(read_file(at("/usr/local/gpuctk/bin/gpuctk")).value(), read_file(GPUCTK_BINARY).value());
  EXPECT_EQ(fs::read_symlink(at("/usr/local/gpuctk/bin/gpuctk-runtime")), "gpuctk");
  EXPECT_TRUE(fs::exists(at("/etc/gpuctk/config.yaml")));
  // --uninstall takes them away.
  const auto r = install({"--uninstall"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(fs::symlink_status(at("/usr/local/gpuctk"))));
  EXPECT_FALSE(fs::exists(fs::symlink_status(at("/etc/gpuctk"))));
}

// A host root that is not a node's root (a mistyped --host-root, a pod without the hostPath volume) is
// refused before anything is made below it.
TEST_F(CliInstallTest, RefusesAHostRootWithoutEtcAndProc) {
  const std::string fake = m_fixture->temp.path() + "/not-a-node";
  auto r = test::run_gpuctk({"install", "--host-root", fake, "--runtime", "containerd"}, m_scratch);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "gpuctk: error: --host-root " + fake + ": not a node's root (no directory " + fake +
                       "/etc); mount the node's / there (hostPath /)\n");
  EXPECT_FALSE(fs::exists(fake));
  fs::create_directories(fake + "/etc");
  r = test::run_gpuctk({"install", "--host-root", fake, "--no-runtime-config"}, m_scratch);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: --host-root " + fake + ": not a node's root (no directory " + fake +
                       "/proc); mount the node's / there (hostPath /)\n");
  std::vector<std::string> made;
  for (const auto& entry : fs::recursive_directory_iterator(fake)) {
    made.push_back(entry.path().string());
  }
  EXPECT_EQ(made, std::vector<std::string>{fake + "/etc"});
}

// The DaemonSet's way: every option from GPUCTK_INSTALL_<NAME>, the command line winning.
TEST_F(CliInstallTest, OptionsFromTheEnvironment) {
  const auto r =
      test::run_gpuctk({"install"}, m_scratch,
                       {.env = {"GPUCTK_INSTALL_HOST_ROOT=" + m_root, "GPUCTK_INSTALL_RUNTIME=containerd",
                                "GPUCTK_INSTALL_RUNTIME_NAME=gpu", "GPUCTK_INSTALL_RESTART_MODE=none",
                                "GPUCTK_INSTALL_SPEC_PATH=/etc/cdi/gpu.yaml"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(at("/etc/cdi/gpu.yaml")));
  EXPECT_NE(read_file(at(k_containerd_toml)).value().find("runtimes.gpu]"), std::string::npos);
  EXPECT_TRUE(
      r.out.ends_with("\ncontainerd: config changed; not restarted (--restart-mode none): restart "
                      "containerd for it to take effect\n"))
      << r.out;
  const auto u =
      test::run_gpuctk({"install", "--uninstall", "--runtime-name", "gpu"}, m_scratch,
                       {.env = {"GPUCTK_INSTALL_HOST_ROOT=" + m_root, "GPUCTK_INSTALL_RUNTIME=containerd",
                                "GPUCTK_INSTALL_RUNTIME_NAME=other", "GPUCTK_INSTALL_RESTART_MODE=none",
                                "GPUCTK_INSTALL_SPEC_PATH=/etc/cdi/gpu.yaml"}});
  ASSERT_EQ(u.exit_code, 0) << u.err;
  EXPECT_EQ(read_file(at(k_containerd_toml)).value(), m_original_toml)
      << "--runtime-name gpu won over the env";
  EXPECT_FALSE(fs::exists(at("/etc/cdi/gpu.yaml")));
}

// docker --gpus: the install links nvidia-container-runtime-hook on dockerd's PATH (the node's
// /usr/local/bin) to the installed gpuctk; both uninstalls take the link away.
TEST_F(CliInstallTest, DockerGetsTheHookOnItsPath) {
  fs::create_directories(at("/etc/docker"));
  const auto r = test::run_gpuctk(
      {"install", "--host-root", m_root, "--runtime", "docker", "--restart-mode", "none"}, m_scratch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string link = at("/usr/local/bin/nvidia-container-runtime-hook");
  EXPECT_NE(r.out.find("\ndocker: linked " + link +
                       " -> /usr/local/gpuctk/bin/gpuctk (docker run --gpus, once dockerd restarts)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(fs::read_symlink(link), "/usr/local/gpuctk/bin/gpuctk");
  const auto u = test::run_gpuctk(
      {"install", "--host-root", m_root, "--runtime", "docker", "--restart-mode", "none", "--uninstall"},
      m_scratch);
  ASSERT_EQ(u.exit_code, 0) << u.err;
  EXPECT_NE(u.out.find("\ndocker: removed " + link + "\n"), std::string::npos) << u.out;
  EXPECT_FALSE(fs::exists(fs::symlink_status(link)));
  EXPECT_TRUE(fs::is_directory(at("/usr/local/bin"))) << "/usr/local/bin is not gpuctk's";
}

}  // namespace
}  // namespace gpuctk
