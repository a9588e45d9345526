// install/restart: which engine is restarted how (the plan, pure), finding the engine's process from its
// socket, signalling it, and the node's systemctl run chrooted into a host root.
#include "install/restart.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "install/fake_engine.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::install {
namespace {

namespace fs = std::filesystem;
using engine::Engine;

TEST(RestartMode, ParsesTheFourModesAndRefusesOthers) {
  EXPECT_EQ(parse_restart_mode("auto").value(), RestartMode::automatic);
  EXPECT_EQ(parse_restart_mode("systemd").value(), RestartMode::systemd);
  EXPECT_EQ(parse_restart_mode("signal").value(), RestartMode::signal);
  EXPECT_EQ(parse_restart_mode("none").value(), RestartMode::none);
  EXPECT_EQ(parse_restart_mode("reload").error().message,
            "unknown restart mode \"reload\" (want auto, systemd, signal or none)");
}

// One row per mode, engine and node: what is done.
TEST(RestartPlan, EachModeForEachEngine) {
  struct Row {
    RestartMode mode;
    Engine engine;
    bool systemd;
    RestartAction action;
    int signal;
    std::string reason;
  };
  const Row rows[] = {
      // auto: the node's systemd wherever it runs
      {RestartMode::automatic, Engine::containerd, true, RestartAction::systemd, 0, ""},
      {RestartMode::automatic, Engine::crio, true, RestartAction::systemd, 0, ""},
      {RestartMode::automatic, Engine::docker, true, RestartAction::systemd, 0, ""},
      // auto without systemd: only docker's signal is a reload; stopping containerd would stop the node
      {RestartMode::automatic, Engine::containerd, false, RestartAction::none, 0, "the node runs no systemd"},
      {RestartMode::automatic, Engine::crio, false, RestartAction::none, 0, "the node runs no systemd"},
      {RestartMode::automatic, Engine::docker, false, RestartAction::signal, SIGHUP, ""},
      {RestartMode::systemd, Engine::containerd, false, RestartAction::systemd, 0, ""},
      {RestartMode::signal, Engine::containerd, true, RestartAction::signal, SIGTERM, ""},
      {RestartMode::signal, Engine::docker, true, RestartAction::signal, SIGHUP, ""},
      {RestartMode::none, Engine::docker, true, RestartAction::none, 0, "--restart-mode none"},
      {RestartMode::none, Engine::containerd, false, RestartAction::none, 0, "--restart-mode none"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(engine::engine_name(row.engine)) + " systemd=" + std::to_string(row.systemd));
    const auto plan = plan_restart(row.mode, row.engine, row.systemd);
    ASSERT_TRUE(plan) << plan.error().message;
    EXPECT_EQ(plan->action, row.action);
    EXPECT_EQ(plan->signal, row.signal);
    EXPECT_EQ(plan->reason, row.reason);
  }
  EXPECT_EQ(plan_restart(RestartMode::signal, Engine::crio, false).error().message,
            "crio: no signal makes CRI-O read its runtimes again; use --restart-mode systemd");
}

TEST(RestartPlan, UnitsAndSockets) {
  EXPECT_EQ(default_unit(Engine::containerd), "containerd.service");
  EXPECT_EQ(default_unit(Engine::crio), "crio.service");
  EXPECT_EQ(default_unit(Engine::docker), "docker.service");
  EXPECT_EQ(default_socket(Engine::containerd), "/run/containerd/containerd.sock");
  EXPECT_EQ(default_socket(Engine::crio), "/var/run/crio/crio.sock");
  EXPECT_EQ(default_socket(Engine::docker), "/var/run/docker.sock");
}

TEST(RestartNode, RunsSystemdWhenRunSystemdSystemIsADirectory) {
  test::TempDir dir;
  EXPECT_FALSE(node_runs_systemd(dir.path()));
  dir.write("run/systemd/system", "a file is not systemd's directory");
  EXPECT_FALSE(node_runs_systemd(dir.path()));
  fs::remove(dir.path() + "/run/systemd/system");
  fs::create_directories(dir.path() + "/run/systemd/system");
  EXPECT_TRUE(node_runs_systemd(dir.path()));
}

TEST(RestartSocket, TheOwnerIsTheProcessThatListens) {
  test::TempDir dir;
  test::FakeEngine engine(dir.path() + "/engine.sock");
  const auto pid = socket_owner(dir.path() + "/engine.sock");
  ASSERT_TRUE(pid) << pid.error().message;
  EXPECT_EQ(*pid, engine.pid());
  EXPECT_EQ(socket_owner(dir.path() + "/missing.sock").error().message,
            "connect " + dir.path() + "/missing.sock: No such file or directory");
  const std::string long_path = "/" + std::string(120, 'x');
  EXPECT_EQ(socket_owner(long_path).error().message,
            long_path + ": longer than a unix socket path can be (107 bytes)");
}

TEST(RestartSocket, AnOwnerInAnotherPidNamespaceIsAnError) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root for a new PID namespace";
  }
  test::TempDir dir;
  test::FakeEngine engine(dir.path() + "/engine.sock");
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  // A child in a PID namespace of its own asks: the engine (its parent's child) has no pid there.
  const pid_t child = ::fork();
  if (child == 0) {
    if (::unshare(CLONE_NEWPID) != 0) {
      ::_exit(2);
    }
    const pid_t inner = ::fork();
    if (inner == 0) {
      const auto pid = socket_owner(dir.path() + "/engine.sock");
      const std::string message = pid ? "pid " + std::to_string(*pid) : pid.error().message;
      (void)!::write(out[1], message.data(), message.size());
      ::_exit(0);
    }
    ::waitpid(inner, nullptr, 0);
    ::_exit(0);
  }
  ::close(out[1]);
  ::waitpid(child, nullptr, 0);
  char buffer[512] = {};
  const ssize_t n = ::read(out[0], buffer, sizeof(buffer) - 1);
  ::close(out[0]);
  ASSERT_GT(n, 0);
  EXPECT_EQ(
      std::string(buffer, static_cast<size_t>(n)),
      dir.path() +
          "/engine.sock: its process is in another PID namespace (run the pod with hostPID: true, or use "
          "--restart-mode systemd)");
}

TEST(RestartSignal, ContainerdGetsSigtermDockerdSighup) {
  test::TempDir dir;
  fs::create_directories(dir.path() + "/run/containerd");
  {
    test::FakeEngine engine(dir.path() + "/run/containerd/containerd.sock");
    const auto done = restart_engine(plan_restart(RestartMode::signal, Engine::containerd, false).value(),
                                     {.engine = Engine::containerd,
                                      .host_root = dir.path(),
                                      .unit = "containerd.service",
                                      .socket = "/run/containerd/containerd.sock"});
    ASSERT_TRUE(done) << done.error().message;
    EXPECT_EQ(*done, "sent SIGTERM to containerd (pid " + std::to_string(engine.pid()) +
                         ", serving /run/containerd/containerd.sock): it stops gracefully and its supervisor "
                         "starts it again with the new config");
    EXPECT_EQ(engine.wait(), SIGTERM);
  }
  {
    // /var/run -> /run on the node: the socket is found below the host root, not in this process's /run.
    fs::create_directories(dir.path() + "/var");
    fs::create_symlink("/run", dir.path() + "/var/run");
    test::FakeEngine engine(dir.path() + "/run/docker.sock", "dockerd");
    const auto done = restart_engine(plan_restart(RestartMode::automatic, Engine::docker, false).value(),
                                     {.engine = Engine::docker,
                                      .host_root = dir.path(),
                                      .unit = "docker.service",
                                      .socket = "/var/run/docker.sock"});
    ASSERT_TRUE(done) << done.error().message;
    EXPECT_EQ(*done, "sent SIGHUP to dockerd (pid " + std::to_string(engine.pid()) +
                         ", serving /var/run/docker.sock): it reloads its runtimes");
    EXPECT_EQ(engine.wait(), SIGHUP);
  }
  const auto missing = restart_engine(plan_restart(RestartMode::signal, Engine::docker, false).value(),
                                      {.engine = Engine::docker,
                                       .host_root = dir.path(),
                                       .unit = "docker.service",
                                       .socket = "/run/nothing.sock"});
  EXPECT_EQ(missing.error().message,
            "connect " + dir.path() + "/run/nothing.sock: No such file or directory");
}

// Only the engine's daemon may get its signal: named as the engine's executable, and never pid 1 (with
// systemd's socket activation, the process listening on docker.sock is systemd itself).
TEST(RestartEngineProcess, OnlyTheEnginesDaemonNeverPid1) {
  EXPECT_TRUE(check_engine_process(Engine::docker, 42, "/usr/bin/dockerd"));
  EXPECT_TRUE(check_engine_process(Engine::docker, 42, "/usr/sbin/dockerd (deleted)"));
  EXPECT_TRUE(check_engine_process(Engine::containerd, 42, "/usr/local/bin/containerd"));
  EXPECT_TRUE(check_engine_process(Engine::crio, 42, "/usr/bin/crio"));
  EXPECT_EQ(check_engine_process(Engine::docker, 1, "/usr/lib/systemd/systemd").error().message,
            "pid 1 (/usr/lib/systemd/systemd), the node's init, not dockerd");
  EXPECT_EQ(check_engine_process(Engine::docker, 1, "/usr/bin/dockerd").error().message,
            "pid 1 (/usr/bin/dockerd), the node's init, not dockerd");
  EXPECT_EQ(check_engine_process(Engine::docker, 42, "/usr/bin/socat").error().message,
            "pid 42 (/usr/bin/socat), not dockerd");
  EXPECT_EQ(check_engine_process(Engine::containerd, 42, "/usr/bin/containerd-shim-runc-v2").error().message,
            "pid 42 (/usr/bin/containerd-shim-runc-v2), not containerd");
  EXPECT_EQ(check_engine_process(Engine::containerd, 42, "containerd").error().message,
            "pid 42 (containerd), not containerd");
  // k3s runs containerd inside its own process: stopping it would stop the node agent (README).
  EXPECT_EQ(check_engine_process(Engine::containerd, 42, "/usr/local/bin/k3s").error().message,
            "pid 42 (/usr/local/bin/k3s), not containerd");
}

// A process that listens on the engine's socket but is not the engine's daemon gets no signal, and on a
// node without systemd nothing else is signalled either.
TEST(RestartSignal, AListenerThatIsNotTheEngineIsNeverSignalled) {
  test::TempDir dir;
  fs::create_directories(dir.path() + "/run");
  test::FakeEngine listener(dir.path() + "/run/docker.sock", "systemd");
  const auto done = restart_engine(plan_restart(RestartMode::signal, Engine::docker, false).value(),
                                   {.engine = Engine::docker,
                                    .host_root = dir.path(),
                                    .unit = "docker.service",
                                    .socket = "/run/docker.sock"});
  ASSERT_FALSE(done) << *done;
  const std::string exe = fs::read_symlink("/proc/" + std::to_string(listener.pid()) + "/exe").string();
  EXPECT_TRUE(exe.ends_with("/systemd")) << exe;
  EXPECT_EQ(done.error().message, "nothing signalled: /run/docker.sock is served by pid " +
                                      std::to_string(listener.pid()) + " (" + exe + "), not dockerd");
  EXPECT_TRUE(listener.running()) << "the socket's listener got the engine's signal";
}

// A node root whose systemctl is a shell script (busybox as /bin/sh) that writes its arguments and
// environment to /systemctl.args and exits with the status in /systemctl.status.
class RestartSystemdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root to chroot into the node's root";
    }
    const char* busybox = nullptr;
    for (const char* candidate : {"/bin/busybox", "/usr/bin/busybox"}) {
      if (::access(candidate, X_OK) == 0) {
        busybox = candidate;
      }
    }
    if (busybox == nullptr) {
      GTEST_SKIP() << "busybox-static is not installed (a /bin/sh for the node's fake systemctl)";
    }
    fs::create_directories(m_dir.path() + "/bin");
    fs::copy_file(busybox, m_dir.path() + "/bin/sh");
    m_dir.write("usr/bin/systemctl",
                "#!/bin/sh\necho \"$* PATH=$PATH\" >/systemctl.args\nread status </systemctl.status\nexit "
                "$status\n");
    fs::permissions(m_dir.path() + "/usr/bin/systemctl", fs::perms(0755));
    m_dir.write("systemctl.status", "0\n");
  }
  Result<std::string> restart(const std::string& unit) const {
    return restart_engine(plan_restart(RestartMode::systemd, Engine::containerd, true).value(),
                          {.engine = Engine::containerd,
                           .host_root = m_dir.path(),
                           .unit = unit,
                           .socket = "/run/containerd/containerd.sock"});
  }
  test::TempDir m_dir;
};

TEST_F(RestartSystemdTest, RunsTheNodesSystemctlInTheNodesRoot) {
  const auto done = restart("containerd.service");
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(*done, "restarted containerd.service through the node's systemd");
  EXPECT_EQ(read_file(m_dir.path() + "/systemctl.args").value(),
            "restart containerd.service PATH=/usr/sbin:/usr/bin:/sbin:/bin\n");
}

TEST_F(RestartSystemdTest, AFailedSystemctlIsAnError) {
  m_dir.write("systemctl.status", "5\n");
  EXPECT_EQ(restart("k3s.service").error().message, "systemctl restart k3s.service on the node exited 5");
  fs::remove(m_dir.path() + "/usr/bin/systemctl");
  EXPECT_EQ(restart("containerd.service").error().message,
            "restart containerd.service: no systemctl on the node (" + m_dir.path() + "/usr/bin/systemctl)");
}

// Socket activation: systemd (here a process named systemd) listens on docker.sock, docker.service's
// main process is dockerd. dockerd gets SIGHUP, the listener nothing; when the unit has no main process, or
// its main process is not dockerd, nobody is signalled.
TEST_F(RestartSystemdTest, SocketActivationSignalsTheUnitsMainProcessNeverTheListener) {
  fs::create_directories(m_dir.path() + "/run/systemd/system");
  m_dir.write("usr/bin/systemctl",
              "#!/bin/sh\necho \"$*\" >/systemctl.args\nread pid </systemctl.mainpid\necho \"$pid\"\n");
  test::FakeEngine listener(m_dir.path() + "/run/docker.sock", "systemd");
  test::FakeEngine dockerd(m_dir.path() + "/run/dockerd-own.sock", "dockerd");
  const std::string listener_exe =
      fs::read_symlink("/proc/" + std::to_string(listener.pid()) + "/exe").string();
  const auto signal = [&] {
    return restart_engine(plan_restart(RestartMode::signal, Engine::docker, true).value(),
                          {.engine = Engine::docker,
                           .host_root = m_dir.path(),
                           .unit = "docker.service",
                           .socket = "/run/docker.sock"});
  };
  const std::string served_by = "/run/docker.sock is served by pid " + std::to_string(listener.pid()) + " (" +
                                listener_exe + "), not dockerd";

  m_dir.write("systemctl.mainpid", "0\n");
  EXPECT_EQ(signal().error().message,
            "nothing signalled: " + served_by + ", and docker.service has no main process");
  EXPECT_EQ(read_file(m_dir.path() + "/systemctl.args").value(), "show -p MainPID --value docker.service\n");

  m_dir.write("systemctl.mainpid", std::to_string(listener.pid()) + "\n");
  EXPECT_EQ(signal().error().message,
            "nothing signalled: " + served_by + ", and docker.service's main process is pid " +
                std::to_string(listener.pid()) + " (" + listener_exe + "), not dockerd");

  m_dir.write("systemctl.mainpid", std::to_string(dockerd.pid()) + "\n");
  const auto done = signal();
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(*done, "sent SIGHUP to dockerd (pid " + std::to_string(dockerd.pid()) +
                       ", the main process of docker.service; " + served_by + "): it reloads its runtimes");
  EXPECT_EQ(dockerd.wait(), SIGHUP);
  EXPECT_TRUE(listener.running()) << "the socket's listener got the engine's signal";
}

}  // namespace
}  // namespace gpuctk::install
