// The prestart hook (inject/prestart.hpp): the plan made from resolved CDI edits (pure, with a fake host
// stat), what cannot be done live, the hook entry the runtime shim writes, and prestart() itself: a
// container that asks for nothing is left alone, a state without a pid is refused, and a live run mounts
// and runs hooks in the container's mount namespace (a forked "container" with its own namespace).
#include "inject/prestart.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cgroup/device_filter.hpp"
#include "oci/bundle.hpp"
#include "rootfs/rootfs_test_support.hpp"
#include "rootfs/sandbox_probe.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::inject {
namespace {

using nlohmann::ordered_json;

const std::string k_data = std::string(GPUCTK_SOURCE_DIR) + "/tests/data/oci/";

// ---- plan_live -------------------------------------------------------------------------------------

// A host where /host/dev/nvidiactl is c 195:255 0660; everything else is missing. Records every call.
struct FakeHost {
  std::vector<std::string> calls;
  cdi::StatNode stat() {
    return [this](const std::string& path) -> Result<cdi::HostNode> {
      calls.push_back(path);
      if (path == "/host/dev/nvidiactl") {
        return cdi::HostNode{'c', 195, 255, 0660};
      }
      return fail("stat " + path + ": No such file or directory");
    };
  }
};

ordered_json user_config(const ordered_json& user) {
  ordered_json config = ordered_json::object();
  config["ociVersion"] = "1.0.2";
  config["process"]["user"] = user;
  config["process"]["env"] = {"PATH=/usr/bin:/bin", "NVIDIA_VISIBLE_DEVICES=0"};
  return config;
}

ResolvedRequest resolved(cdi::ContainerEdits edits) {
  ResolvedRequest r;
  r.gpu_container = true;
  r.edits = std::move(edits);
  r.devices = {"nvidia.com/gpu=0"};
  r.spec_source = "/etc/cdi/nvidia.yaml";
  return r;
}

// The edits of a typical GPU: nodes (one fully given, one from the host, one with its own owner and
// access), driver files, hooks of both namespaces, env and a group.
cdi::ContainerEdits gpu_edits() {
  cdi::ContainerEdits edits;
  edits.env = {"NVIDIA_VISIBLE_DEVICES=void"};
  edits.device_nodes = {
      {.path = "/dev/nvidia0", .type = "c", .major = 195, .minor = 0, .file_mode = 0666},
      {.path = "/dev//nvidiactl", .host_path = "/host/dev/nvidiactl"},
      {.path = "/dev/nvidia-uvm",
       .type = "c",
       .major = 510,
       .minor = 0,
       .file_mode = 0640,
       .permissions = "rw",
       .uid = 7,
       .gid = 8},
  };
  const std::vector<std::string> ro{"ro", "nosuid", "nodev", "bind"};
  edits.mounts = {
      {.host_path = "/host/lib/libcuda.so.1",
       .container_path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
       .options = ro},
      {.host_path = "/host/run/socket",
       .container_path = "/run/nvidia-persistenced/socket",
       .options = {"ro", "nosuid", "nodev", "bind", "noexec"}},
      {.host_path = "/host/bin/nvidia-smi", .container_path = "/usr/bin/nvidia-smi", .options = ro},
      {.host_path = "/host/firmware",
       .container_path = "/lib/firmware/nvidia",
       .options = {"rbind", "ro"},
       .type = "bind"},
      {.host_path = "/host/opt", .container_path = "/opt//nvidia/", .options = {"bind"}},
  };
  edits.hooks = {
      {.hook_name = "createContainer",
       .path = "/usr/bin/gpuctk",
       .args = {"gpuctk", "hook", "update-ldcache"},
       .env = {"PATH=/usr/bin"},
       .timeout = 5},
      {.hook_name = "createContainer", .path = "/usr/bin/other"},
  };
  edits.additional_gids = {44, 0};
  return edits;
}

std::string node_line(const LivePlan::Node& node) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(node.spec.mode));
  return node.spec.path + " " + node.spec.type + " " + std::to_string(node.spec.major) + ":" +
         std::to_string(node.spec.minor) + " " + mode + " " + std::to_string(node.spec.uid) + ":" +
         std::to_string(node.spec.gid) + " from " + node.host_path;
}

std::vector<std::string> node_lines(const LivePlan& plan) {
  std::vector<std::string> out;
  for (const auto& node : plan.nodes) {
    out.push_back(node_line(node));
  }
  return out;
}

std::vector<std::string> rule_lines(const LivePlan& plan) {
  std::vector<std::string> out;
  for (const auto& rule : plan.rules) {
    out.push_back(cgroup::rule_text(rule));
  }
  return out;
}

std::vector<std::string> mount_lines(const LivePlan& plan) {
  std::vector<std::string> out;
  for (const auto& bind : plan.mounts) {
    char attributes[32];
    std::snprintf(attributes, sizeof attributes, "0x%llx",
                  static_cast<unsigned long long>(bind.options.attributes));
    out.push_back(bind.destination + " <- " + bind.source + (bind.options.recursive ? " rbind " : " bind ") +
                  attributes);
  }
  return out;
}

std::string hook_line(const oci::HookCommand& hook) {
  return hook.path + " [" + join(hook.args, " ") + "] {" + join(hook.env, " ") + "}" +
         (hook.timeout ? " timeout " + std::to_string(*hook.timeout) : "");
}

std::vector<std::string> hook_lines(const std::vector<oci::HookCommand>& hooks) {
  std::vector<std::string> out;
  for (const auto& hook : hooks) {
    out.push_back(hook_line(hook));
  }
  return out;
}

std::string hex(uint64_t value) {
  char out[32];
  std::snprintf(out, sizeof out, "0x%llx", static_cast<unsigned long long>(value));
  return out;
}

TEST(PrestartPlan, AGpusEditsBecomeThePlan) {
  FakeHost host;
  const auto plan =
      plan_live(user_config({{"uid", 1000}, {"gid", 1000}}), "/b/rootfs", resolved(gpu_edits()), host.stat());
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->root, "/b/rootfs");
  EXPECT_EQ(node_lines(*plan), (std::vector<std::string>{
                                   "/dev/nvidia0 c 195:0 0666 1000:1000 from /dev/nvidia0",
                                   "/dev/nvidiactl c 195:255 0660 1000:1000 from /host/dev/nvidiactl",
                                   "/dev/nvidia-uvm c 510:0 0640 7:8 from /dev/nvidia-uvm",
                               }));
  EXPECT_EQ(rule_lines(*plan), (std::vector<std::string>{"c 195:0 rwm", "c 195:255 rwm", "c 510:0 rw"}));
  const std::string ro = hex(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
  // Sorted by depth as cdi::apply_edits sorts (stable: equal depths keep the edits' order).
  EXPECT_EQ(mount_lines(*plan),
            (std::vector<std::string>{
                "/opt/nvidia <- /host/opt bind 0x0",
                "/run/nvidia-persistenced/socket <- /host/run/socket bind " +
                    hex(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC),
                "/usr/bin/nvidia-smi <- /host/bin/nvidia-smi bind " + ro,
                "/lib/firmware/nvidia <- /host/firmware rbind " + hex(MOUNT_ATTR_RDONLY),
                "/usr/lib/x86_64-linux-gnu/libcuda.so.1 <- /host/lib/libcuda.so.1 bind " + ro,
            }));
  EXPECT_EQ(hook_lines(plan->container_hooks),
            (std::vector<std::string>{
                "/usr/bin/gpuctk [gpuctk hook update-ldcache] {PATH=/usr/bin} timeout 5",
                "/usr/bin/other [] {PATH=/usr/sbin:/usr/bin:/sbin:/bin}",
            }));
  EXPECT_EQ(hook_lines(plan->runtime_hooks), std::vector<std::string>{});
  EXPECT_EQ(plan->env_not_set, std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=void"});
  EXPECT_EQ(plan->gids_not_added, std::vector<uint32_t>{44});
  // Pure: only the node that needed the host was looked at, through the fake.
  EXPECT_EQ(host.calls, std::vector<std::string>{"/host/dev/nvidiactl"});
}

TEST(PrestartPlan, OwnersDefaultToRootWithoutAProcessUser) {
  FakeHost host;
  ordered_json config = ordered_json::object();
  cdi::ContainerEdits edits;
  edits.device_nodes = {{.path = "/dev/nvidia0", .type = "c", .major = 195, .minor = 0, .file_mode = 0666},
                        {.path = "/dev/sdx", .type = "b", .major = 8, .minor = 16, .file_mode = 0600}};
  const auto plan = plan_live(config, "/r", resolved(edits), host.stat());
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(node_lines(*plan), (std::vector<std::string>{"/dev/nvidia0 c 195:0 0666 0:0 from /dev/nvidia0",
                                                         "/dev/sdx b 8:16 0600 0:0 from /dev/sdx"}));
  EXPECT_EQ(rule_lines(*plan), (std::vector<std::string>{"c 195:0 rwm", "b 8:16 rwm"}));
  EXPECT_TRUE(plan->mounts.empty());
  EXPECT_TRUE(plan->env_not_set.empty());
  EXPECT_TRUE(plan->gids_not_added.empty());
}

TEST(PrestartPlan, GroupsTheProcessHasAlreadyAreNotReported) {
  FakeHost host;
  cdi::ContainerEdits edits;
  edits.additional_gids = {44, 45};
  // As read from config.json text (non-negative numbers are unsigned there).
  const auto config =
      oci::parse_config(R"({"process":{"user":{"uid":1000,"gid":1000,"additionalGids":[44,5]}}})");
  ASSERT_TRUE(config) << config.error().message;
  const auto plan = plan_live(*config, "/r", resolved(edits), host.stat());
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->gids_not_added, std::vector<uint32_t>{45});
}

TEST(PrestartPlan, RuntimeNamespaceHooks) {
  FakeHost host;
  cdi::ContainerEdits edits;
  edits.hooks = {{.hook_name = "createRuntime", .path = "/usr/bin/rt", .args = {"rt"}, .env = {"X=1"}},
                 {.hook_name = "createContainer", .path = "/usr/bin/cc", .env = {"Y=1"}}};
  const auto plan = plan_live(ordered_json::object(), "/r", resolved(edits), host.stat());
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(hook_lines(plan->runtime_hooks), std::vector<std::string>{"/usr/bin/rt [rt] {X=1}"});
  EXPECT_EQ(hook_lines(plan->container_hooks), std::vector<std::string>{"/usr/bin/cc [] {Y=1}"});
}

// A runtime runs all prestart hooks before any createRuntime hook (runc, crun); the plan's runtime hooks
// keep that order whatever order the spec lists them in.
TEST(PrestartPlan, PrestartStageHooksRunBeforeCreateRuntimeHooks) {
  FakeHost host;
  cdi::ContainerEdits edits;
  edits.hooks = {{.hook_name = "createRuntime", .path = "/usr/bin/rt", .env = {"X=1"}},
                 {.hook_name = "prestart", .path = "/usr/bin/ps", .env = {"X=1"}}};
  const auto plan = plan_live(ordered_json::object(), "/r", resolved(edits), host.stat());
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(hook_lines(plan->runtime_hooks),
            (std::vector<std::string>{"/usr/bin/ps [] {X=1}", "/usr/bin/rt [] {X=1}"}));
}

std::string plan_error(const cdi::ContainerEdits& edits) {
  FakeHost host;
  const auto plan = plan_live(user_config({{"uid", 0}, {"gid", 0}}), "/r", resolved(edits), host.stat());
  return plan ? "planned" : plan.error().message;
}

TEST(PrestartPlan, HooksOfLaterStagesAreErrors) {
  for (const char* stage : {"poststart", "startContainer", "poststop"}) {
    cdi::ContainerEdits edits;
    edits.hooks = {{.hook_name = "createContainer", .path = "/usr/bin/ok", .env = {"A=1"}},
                   {.hook_name = stage, .path = "/x", .env = {"A=1"}}};
    const std::string message = plan_error(edits);
    EXPECT_NE(message.find(
                  "CDI hook \"/x\" of stage \"" + std::string(stage) +
                  "\" cannot be added by a prestart hook (use the runtime shim, the precreate hook or CDI)"),
              std::string::npos)
        << message;
  }
}

// The text prestart.hpp documents for plan_live's error.
TEST(PrestartPlan, PoststartHookErrorIsTheDocumentedText) {
  cdi::ContainerEdits edits;
  edits.hooks = {{.hook_name = "poststart", .path = "/x", .env = {"A=1"}}};
  EXPECT_EQ(plan_error(edits),
            "CDI hook \"/x\" of stage \"poststart\" cannot be added by a prestart hook (use the runtime "
            "shim, the precreate hook or CDI)");
}

TEST(PrestartPlan, NetDevicesAndIntelRdtAreErrors) {
  cdi::ContainerEdits net;
  net.net_devices = {{.host_interface_name = "eth1", .name = "net0"}};
  EXPECT_EQ(
      plan_error(net),
      "CDI netDevices cannot be moved into a container at prestart (use the runtime shim, the precreate "
      "hook or CDI)");
  cdi::ContainerEdits rdt;
  rdt.intel_rdt = cdi::IntelRdt{.clos_id = "gpu"};
  EXPECT_EQ(plan_error(rdt),
            "CDI intelRdt cannot be set at prestart (use the runtime shim, the precreate hook or CDI)");
}

TEST(PrestartPlan, MountsThatAreNotBindMountsAreErrors) {
  cdi::ContainerEdits tmpfs;
  tmpfs.mounts = {
      {.host_path = "tmpfs", .container_path = "/dev/shm", .options = {"nosuid"}, .type = "tmpfs"}};
  EXPECT_EQ(plan_error(tmpfs),
            "CDI mount \"/dev/shm\": mount type \"tmpfs\" is not supported at prestart (only bind mounts)");
  cdi::ContainerEdits no_bind;
  no_bind.mounts = {{.host_path = "/h", .container_path = "/x", .options = {"ro"}}};
  EXPECT_EQ(plan_error(no_bind),
            "CDI mount \"/x\": mount options \"ro\" name no bind or rbind (only bind mounts "
            "can be made at prestart)");
  cdi::ContainerEdits unknown;
  unknown.mounts = {{.host_path = "/h", .container_path = "/y", .options = {"bind", "x-foo"}}};
  EXPECT_EQ(plan_error(unknown), "CDI mount \"/y\": mount option \"x-foo\" is not supported at prestart");
}

TEST(PrestartPlan, OnlyCharacterAndBlockDevices) {
  cdi::ContainerEdits fifo;
  fifo.device_nodes = {{.path = "/dev/fifo", .type = "p", .file_mode = 0600}};
  EXPECT_EQ(plan_error(fifo),
            "CDI device \"/dev/fifo\" of type \"p\" cannot be created at prestart (only character and block "
            "devices)");
  cdi::ContainerEdits unbuffered;
  unbuffered.device_nodes = {{.path = "/dev/u", .type = "u", .major = 4, .minor = 1, .file_mode = 0600}};
  EXPECT_EQ(plan_error(unbuffered),
            "CDI device \"/dev/u\" of type \"u\" cannot be created at prestart (only character and block "
            "devices)");
}

TEST(PrestartPlan, AHostNodeThatCannotBeExaminedIsAnError) {
  cdi::ContainerEdits edits;
  edits.device_nodes = {{.path = "/dev/gone"}};
  EXPECT_EQ(plan_error(edits), "CDI device \"/dev/gone\": stat /dev/gone: No such file or directory");
}

// ---- prestart_hook ---------------------------------------------------------------------------------

TEST(PrestartHook, TheShimsHookEntry) {
  const cdi::Hook plain = prestart_hook("/usr/bin/gpuctk", "");
  EXPECT_EQ(plain, (cdi::Hook{.hook_name = "prestart",
                              .path = "/usr/bin/gpuctk",
                              .args = {"gpuctk", "hook", "prestart"},
                              .env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"},
                              .timeout = std::nullopt}));
  const cdi::Hook configured = prestart_hook("/opt/gpuctk/bin/gpuctk", "/etc/gpuctk/other.yaml");
  EXPECT_EQ(configured,
            (cdi::Hook{.hook_name = "prestart",
                       .path = "/opt/gpuctk/bin/gpuctk",
                       .args = {"gpuctk", "hook", "prestart", "--config", "/etc/gpuctk/other.yaml"},
                       .env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"},
                       .timeout = std::nullopt}));
}

// ---- prestart --------------------------------------------------------------------------------------

// A bundle <temp>/bundle (config.json from runc's default spec plus `env`, root "rootfs"), a spec
// directory <temp>/cdi and an empty driver/dev root, so nothing of this host is read.
class Prestart : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_temp.path().empty());
    m_bundle = m_temp.path() + "/bundle";
    test::make_host_dirs(m_bundle + "/rootfs/usr/lib");
    test::make_host_dirs(m_temp.path() + "/cdi");
    test::make_host_dirs(m_temp.path() + "/host-root");
    m_cfg.spec_dirs = {m_temp.path() + "/cdi"};
    m_cfg.driver_root = m_temp.path() + "/host-root";
    m_cfg.dev_root = m_temp.path() + "/host-root";
  }

  void write_config(const std::vector<std::string>& env) {
    auto config = oci::parse_config(read_file(k_data + "runc-spec-config.json").value()).value();
    for (const auto& e : env) {
      config["process"]["env"].push_back(e);
    }
    test::write_host_file(m_bundle + "/config.json", oci::dump_config(config));
  }

  void write_spec(const std::string& yaml) {
    test::write_host_file(m_temp.path() + "/cdi/nvidia.yaml", yaml);
  }

  [[nodiscard]] std::string state(const std::string& pid_member) const {
    return R"({"ociVersion":"1.0.2","id":"c1","status":"creating",)" + pid_member + R"("bundle":")" +
           m_bundle + R"("})";
  }

  // GPU 0 asked for, a spec whose createContainer hook is /bin/sh, and the container `pid` moved into
  // `cgroups`: the state prestart gets, or "" when it could not be moved.
  [[nodiscard]] std::string gpu_container_in(const test::TestCgroups& cgroups, pid_t pid) {
    write_spec(R"(cdiVersion: "0.5.0"
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    hooks:
    - hookName: createContainer
      path: /bin/sh
      args: [sh, -c, "true"]
      env: [PATH=/bin]
)");
    write_config({"NVIDIA_VISIBLE_DEVICES=0"});
    if (!cgroups.move_into(pid)) {
      return "";
    }
    return state("\"pid\":" + std::to_string(pid) + ",");
  }

  test::TempDir m_temp;
  std::string m_bundle;
  config::Config m_cfg;
};

const char* const k_gpu0_spec = R"(cdiVersion: "0.5.0"
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
      type: c
      major: 195
      minor: 0
)";

TEST_F(Prestart, AContainerThatAsksForNoGpuIsLeftAlone) {
  write_config({});
  write_spec(k_gpu0_spec);
  const std::string log_path = m_temp.path() + "/log/prestart.log";
  test::make_host_dirs(m_temp.path() + "/log");
  const std::string config_before = read_file(m_bundle + "/config.json").value_or("<missing>");
  const std::string tree_before = test::tree_digest(m_temp.path(), {m_temp.path() + "/log"});
  // In a child: were it to go on, it would enter the state's pid's namespace (its own here).
  const std::string outcome = test::in_child([&]() -> std::string {
    auto log = config::Log::open(log_path, config::LogLevel::debug);
    if (!log) {
      return log.error().message;
    }
    const auto result = prestart(state("\"pid\":" + std::to_string(::getpid()) + ","), m_cfg, *log);
    if (!result) {
      return result.error().message;
    }
    return std::string("changed ") + (result->changed ? "true" : "false") + " gpu " +
           (result->resolved.gpu_container ? "true" : "false") + " id " + result->container_id + " nodes " +
           std::to_string(result->nodes) + " mounts " + std::to_string(result->mounts) + " hooks " +
           std::to_string(result->hooks);
  });
  EXPECT_EQ(outcome, "changed false gpu false id c1 nodes 0 mounts 0 hooks 0");
  EXPECT_EQ(read_file(m_bundle + "/config.json").value_or("<missing>"), config_before);
  EXPECT_EQ(test::tree_digest(m_temp.path(), {m_temp.path() + "/log"}), tree_before);
  const std::string log_text = read_file(log_path).value_or("");
  EXPECT_EQ(log_text.find("prestart:"), std::string::npos) << log_text;
}

TEST_F(Prestart, VoidAsksForNothingToo) {
  write_config({"NVIDIA_VISIBLE_DEVICES=void"});
  write_spec(k_gpu0_spec);
  const std::string outcome = test::in_child([&]() -> std::string {
    const auto result = prestart(state(""), m_cfg, config::Log{});
    return result ? (result->changed ? "changed" : "unchanged") : result.error().message;
  });
  EXPECT_EQ(outcome, "unchanged");
}

TEST_F(Prestart, AStateWithoutAPidIsRefusedForAGpuContainer) {
  write_config({"NVIDIA_VISIBLE_DEVICES=0"});
  write_spec(k_gpu0_spec);
  const std::string expected =
      "the OCI state has no pid: gpuctk hook prestart runs at the prestart or createRuntime stage, when the "
      "container's process exists";
  for (const std::string pid_member : {"\"pid\":0,", ""}) {
    const std::string outcome = test::in_child([&]() -> std::string {
      const auto result = prestart(state(pid_member), m_cfg, config::Log{});
      return result ? "ran" : result.error().message;
    });
    EXPECT_NE(outcome.find("has no pid"), std::string::npos) << outcome;
    EXPECT_EQ(outcome, expected);
  }
}

TEST_F(Prestart, AnUnknownDeviceIsAnError) {
  write_config({"NVIDIA_VISIBLE_DEVICES=3"});
  write_spec(k_gpu0_spec);
  const std::string outcome = test::in_child([&]() -> std::string {
    const auto result = prestart(state("\"pid\":0,"), m_cfg, config::Log{});
    return result ? "ran" : result.error().message;
  });
  EXPECT_NE(outcome.find("unknown device"), std::string::npos) << outcome;
  EXPECT_NE(outcome.find("nvidia.com/gpu=3"), std::string::npos) << outcome;
}

TEST_F(Prestart, ABadStateIsAnError) {
  const auto result = prestart("[]", m_cfg, config::Log{});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "OCI state: the document is an array, expected an object");
}

// A "container": a forked process in a mount namespace of its own (root rprivate), waiting until the
// object is destroyed; ready() says whether it got the namespace.
class FakeContainer {
 public:
  FakeContainer()
      : m_child([] {
          const bool ok = ::unshare(CLONE_NEWNS) == 0 &&
                          ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
          return std::string(ok ? "y" : "n");
        }) {}
  [[nodiscard]] pid_t pid() const { return m_child.pid(); }
  [[nodiscard]] bool ready() const { return m_child.report() == "y"; }

 private:
  test::WaitingChild m_child;
};

// A GPU container whose process is in test cgroups (gpu_container_in): what gpuctk's own hooks get from
// the container's cgroups. Needs root and mount namespaces; skipped where no cgroup hierarchy takes one.
class PrestartInCgroups : public Prestart {
 protected:
  void SetUp() override {
    Prestart::SetUp();
    ASSERT_EQ(::geteuid(), 0U)
        << "this test needs root (CI runs the suite as root): it makes cgroups and enters a mount namespace";
    ASSERT_TRUE(test::can_unshare_mounts()) << "this test needs unshare(CLONE_NEWNS)";
    if (cgroups.v2().empty() && cgroups.v1().empty()) {
      GTEST_SKIP() << "no cgroup hierarchy to make a test cgroup in";
    }
    ASSERT_TRUE(m_container.ready());
    state_text = gpu_container_in(cgroups, m_container.pid());
    ASSERT_FALSE(state_text.empty()) << "the fake container could not be moved into the test cgroups";
  }

  const test::TestCgroups cgroups;
  std::string state_text;  // the OCI state prestart is given

 private:
  const FakeContainer m_container;
};

std::string mount_ns_of(const std::string& pid) {
  char buffer[256];
  const ssize_t n = ::readlink(("/proc/" + pid + "/ns/mnt").c_str(), buffer, sizeof buffer);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "<unreadable>";
}

TEST_F(Prestart, LiveMountsAndHooksInTheContainersNamespace) {
  ASSERT_EQ(::geteuid(), 0U)
      << "this test needs root (CI runs the suite as root): it enters a mount namespace "
         "and mounts; run gpuctk_tests as root";
  ASSERT_TRUE(test::can_unshare_mounts()) << "this test needs unshare(CLONE_NEWNS)";
  const std::string host_file = m_temp.path() + "/host/libfoo.so.1";
  test::write_host_file(host_file, "host library");
  const std::string runtime_out = m_temp.path() + "/runtime-hook";
  const std::string container_out = m_temp.path() + "/container-hook";
  write_spec(R"(cdiVersion: "0.5.0"
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    mounts:
    - hostPath: )" +
             host_file + R"(
      containerPath: /usr/lib/libfoo.so.1
      options: [ro, nosuid, nodev, bind]
    hooks:
    - hookName: createRuntime
      path: /bin/sh
      args: [sh, -c, 'readlink /proc/$$/ns/mnt > "$OUT"']
      env: [OUT=)" +
             runtime_out + R"(]
    - hookName: createContainer
      path: /bin/sh
      args: [sh, -c, '{ readlink /proc/$$/ns/mnt; cat; } > "$OUT"']
      env: [OUT=)" +
             container_out + R"(]
)");
  write_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=all"});
  const FakeContainer container;
  ASSERT_TRUE(container.ready());
  const std::string state_text = state("\"pid\":" + std::to_string(container.pid()) + ",");
  const std::string target = m_bundle + "/rootfs/usr/lib/libfoo.so.1";
  const std::string outcome = test::in_child([&]() -> std::string {
    const auto result = prestart(state_text, m_cfg, config::Log{});
    if (!result) {
      return result.error().message;
    }
    // Now in the container's namespace (prestart leaves this process there).
    return std::string("changed ") + (result->changed ? "true" : "false") + " nodes " +
           std::to_string(result->nodes) + " mounts " + std::to_string(result->mounts) + " hooks " +
           std::to_string(result->hooks) + " | " + read_file(target).value_or("<unreadable>") + " | " +
           (mount_ns_of("self") == mount_ns_of(std::to_string(container.pid()))
                ? "in the container's namespace"
                : "elsewhere");
  });
  EXPECT_EQ(outcome, "changed true nodes 0 mounts 1 hooks 2 | host library | in the container's namespace");
  // The test's (the host's) namespace: the mount point made in the root, no mount on it.
  EXPECT_EQ(test::host_kind(target), "file");
  EXPECT_EQ(read_file(target).value_or("<unreadable>"), "");
  // createRuntime ran in the runtime's namespace, createContainer in the container's, with the state.
  EXPECT_EQ(read_file(runtime_out).value_or("<missing>"), mount_ns_of("self") + "\n");
  EXPECT_EQ(read_file(container_out).value_or("<missing>"),
            mount_ns_of(std::to_string(container.pid())) + "\n" + state_text);
}

// A spec whose mounts nest (a host directory, then a file inside it, as a generic CDI spec may have):
// the plan sorts parents first, as a runtime does, and both are made.
TEST_F(Prestart, LiveNestedMounts) {
  ASSERT_EQ(::geteuid(), 0U)
      << "this test needs root (CI runs the suite as root): it enters a mount namespace "
         "and mounts; run gpuctk_tests as root";
  ASSERT_TRUE(test::can_unshare_mounts()) << "this test needs unshare(CLONE_NEWNS)";
  const std::string host_dir = m_temp.path() + "/vendor";
  test::write_host_file(host_dir + "/lib.so", "from the directory");
  const std::string host_file = m_temp.path() + "/host/lib.so";
  test::write_host_file(host_file, "from the file");
  write_spec(R"(cdiVersion: "0.5.0"
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    mounts:
    - hostPath: )" +
             host_file + R"(
      containerPath: /opt/vendor/lib.so
      options: [ro, nosuid, nodev, bind]
    - hostPath: )" +
             host_dir + R"(
      containerPath: /opt/vendor
      options: [ro, nosuid, nodev, rbind]
)");
  write_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=all"});
  const FakeContainer container;
  ASSERT_TRUE(container.ready());
  const std::string state_text = state("\"pid\":" + std::to_string(container.pid()) + ",");
  const std::string outcome = test::in_child([&]() -> std::string {
    const auto result = prestart(state_text, m_cfg, config::Log{});
    if (!result) {
      return result.error().message;
    }
    return "mounts " + std::to_string(result->mounts) + " | " +
           read_file(m_bundle + "/rootfs/opt/vendor/lib.so").value_or("<unreadable>");
  });
  EXPECT_EQ(outcome, "mounts 2 | from the file");
}

// ---- a container whose root is not the host's ----------------------------------------------------

// What a prestart hook must refuse, the state of a created container that is not at prestart any more:
TEST_F(Prestart, AStateOfAContainerNotBeingCreatedIsRefused) {
  write_config({"NVIDIA_VISIBLE_DEVICES=0"});
  write_spec(k_gpu0_spec);
  for (const std::string status : {"running", "stopped", ""}) {
    const std::string text = R"({"ociVersion":"1.0.2","id":"c1","status":")" + status + R"(","pid":)" +
                             std::to_string(::getpid()) + R"(,"bundle":")" + m_bundle + R"("})";
    const std::string outcome = test::in_child([&]() -> std::string {
      const auto result = prestart(text, m_cfg, config::Log{});
      return result ? "injected" : result.error().message;
    });
    EXPECT_EQ(outcome, "the OCI state's status is \"" + status +
                           "\": gpuctk hook prestart runs at the prestart or createRuntime stage, while the "
                           "container is being created (status \"creating\" or \"created\")");
  }
}

// A root a container has pivoted into (<temp>/pivoted), planted with what a prestart hook would find
// there if it looked up host paths after entering the container's mount namespace: at the spec hook's
// path (`hook_path`) a script that writes /planted-ran (and busybox as the /bin/sh it runs with), a
// /proc/self/mountinfo of its own (no procfs is mounted there) and the bundle's root directory.
std::string plant_pivoted_root(const std::string& temp, const std::string& bundle,
                               const std::string& hook_path) {
  const std::string root = temp + "/pivoted";
  test::make_host_dirs(root + "/oldroot");
  test::make_host_dirs(root + bundle + "/rootfs");
  const auto busybox = read_file("/bin/busybox");
  test::write_host_file(root + "/bin/sh", busybox.value_or(""), 0755);
  test::write_host_file(root + hook_path, "#!/bin/sh\necho planted > /planted-ran\n", 0755);
  test::write_host_file(root + "/proc/self/mountinfo", "1 0 0:1 / / rw - tmpfs tmpfs rw\n");
  return root;
}

// The attack: the state names a process that is already in its own root (a runtime that runs prestart
// late, a hook in the wrong stage, a config.json that joins another container's mount namespace). Were
// the hook to resolve host paths after setns, the image's file at the spec hook's path would run as root
// in the host's PID and network namespaces. Refused with one line, whether the process itself is in the
// new root (Pivot::done, seen before anything is done) or only its namespace is (Pivot::back_into_host,
// seen once the namespace is entered); nothing planted runs, and neither does the host's hook.
TEST_F(Prestart, AContainerPastPivotRootIsRefusedAndNothingItPlantedRuns) {
  ASSERT_EQ(::geteuid(), 0U) << "this test needs root (CI runs the suite as root): it pivots a child's root";
  ASSERT_TRUE(test::can_unshare_mounts()) << "this test needs unshare(CLONE_NEWNS)";
  ASSERT_EQ(test::host_kind("/bin/busybox"), "file") << "this test needs busybox-static (/bin/busybox)";
  const std::string hook_path = m_temp.path() + "/hooks/vendor-hook";
  const std::string host_ran = m_temp.path() + "/host-hook-ran";
  test::write_host_file(hook_path, "#!/bin/sh\necho host > " + host_ran + "\n", 0755);
  const std::string planted = plant_pivoted_root(m_temp.path(), m_bundle, hook_path);
  write_spec(R"(cdiVersion: "0.5.0"
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    hooks:
    - hookName: createContainer
      path: )" +
             hook_path + R"(
      args: [vendor-hook]
      env: [PATH=/bin]
)");
  write_config({"NVIDIA_VISIBLE_DEVICES=0"});
  const std::string why =
      "its container has already pivoted into its own root (a prestart hook runs before pivot_root); refused";
  for (const auto how : {test::Pivot::done, test::Pivot::back_into_host}) {
    const test::PivotedChild container(planted, how);
    ASSERT_EQ(container.report(), "ready");
    const std::string pid = std::to_string(container.pid());
    const std::string outcome = test::in_child([&]() -> std::string {
      const auto result = prestart(state("\"pid\":" + pid + ","), m_cfg, config::Log{});
      return result ? "injected" : result.error().message;
    });
    EXPECT_EQ(outcome,
              how == test::Pivot::done
                  ? "the root directory of process " + pid + " is not the host's: " + why
                  : "enter the mount namespace of process " + pid + ": its root is not the host's: " + why);
    EXPECT_EQ(test::host_kind(planted + "/planted-ran"), "missing");
    EXPECT_EQ(test::host_kind(host_ran), "missing");
  }
}

// Issue 21 item 3: the programs that gpuctk's own createContainer hooks run in their sandbox (ldconfig)
// start in the container's cgroups, so that its device rules apply to them: the preparer is handed
// them, opened before the container's namespace is entered (here the container is moved into test
// cgroups first).
TEST_F(PrestartInCgroups, OwnHooksAreGivenTheContainersCgroups) {
  const std::string outcome = test::in_child([&]() -> std::string {
    std::string seen;
    const auto prepare = [&](const oci::HookCommand& hook,
                             const SandboxCgroupRef& cgroup) -> Result<ContainerHook> {
      seen = hook.path + ": " +
             (cgroup ? "v2 " + cgroup->v2_dir + (cgroup->v2 ? " (open)" : " (closed)") + ", v1 " +
                           cgroup->v1_dir + (cgroup->v1_procs ? " (open)" : " (closed)")
                     : std::string("none"));
      return ContainerHook([](std::string_view, const rootfs::Root&) -> Result<void> { return {}; });
    };
    const auto result = prestart(state_text, m_cfg, config::Log{}, prepare);
    return result ? seen : result.error().message;
  });
  const auto opened = [](const std::string& dir) { return dir + (dir.empty() ? " (closed)" : " (open)"); };
  EXPECT_EQ(outcome, "/bin/sh: v2 " + opened(cgroups.v2()) + ", v1 " + opened(cgroups.v1()));
}

// Issue 33: gpuctk's own createContainer hooks work on the image's files as host root. They run in a child
// placed in the container's cgroups (v2: CLONE_INTO_CGROUP; v1: the devices cgroup.procs), so that its
// device cgroup applies to whatever they open: here the hook answers with the cgroups it runs in.
TEST_F(PrestartInCgroups, OwnHooksRunInTheContainersCgroups) {
  const std::string outcome = test::in_child([&]() -> std::string {
    const auto prepare = [](const oci::HookCommand&, const SandboxCgroupRef&) -> Result<ContainerHook> {
      return ContainerHook([](std::string_view, const rootfs::Root&) -> Result<void> {
        return fail("cgroups: " + read_file("/proc/self/cgroup").value_or("<unreadable>"));
      });
    };
    const auto result = prestart(state_text, m_cfg, config::Log{}, prepare);
    return result ? "ok" : result.error().message;
  });
  ASSERT_TRUE(outcome.starts_with("cgroups: ")) << outcome;
  // The lines of the hierarchies the test made a cgroup in, as /proc/self/cgroup lists them.
  const std::string name = "/gpuctk-sandbox-test-" + std::to_string(::getpid());
  std::string placed;
  const std::string lines = outcome.substr(9);
  for (const auto line : split(lines, '\n')) {
    if (line.starts_with("0::") || line.find(":devices:") != std::string_view::npos) {
      placed += std::string(line.substr(line.find(':', line.find(':') + 1) + 1)) + "\n";
    }
  }
  const std::string expected =
      (cgroups.v2().empty() ? "" : name + "\n") + (cgroups.v1().empty() ? "" : name + "\n");
  EXPECT_EQ(placed, expected) << outcome;
}

}  // namespace
}  // namespace gpuctk::inject
