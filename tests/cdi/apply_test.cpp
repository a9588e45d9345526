#include "cdi/apply.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::cdi {
namespace {

using Json = nlohmann::ordered_json;

Json parse(std::string_view text) {
  return Json::parse(text);
}

// A host with the given device nodes; every stat is recorded.
class FakeHost {
 public:
  void add(const std::string& path, HostNode node) { m_nodes[path] = node; }
  [[nodiscard]] StatNode stat() {
    return [this](const std::string& path) -> Result<HostNode> {
      m_calls.push_back(path);
      const auto it = m_nodes.find(path);
      if (it == m_nodes.end()) {
        return fail("stat " + path + ": No such file or directory");
      }
      return it->second;
    };
  }
  [[nodiscard]] const std::vector<std::string>& calls() const { return m_calls; }

 private:
  std::map<std::string, HostNode> m_nodes;
  std::vector<std::string> m_calls;
};

// Applies `edits` to `config_text` and returns the compact result (or "error: ...").
std::string apply(std::string_view config_text, const ContainerEdits& edits, const StatNode& stat) {
  Json config = parse(config_text);
  const auto result = apply_edits(config, edits, stat);
  if (!result) {
    return "error: " + result.error().message;
  }
  return config.dump();
}

// Applying once and twice must give the same document.
void expect_idempotent(const Json& config, const ContainerEdits& edits, const StatNode& stat) {
  Json once = config;
  ASSERT_TRUE(apply_edits(once, edits, stat));
  Json twice = once;
  ASSERT_TRUE(apply_edits(twice, edits, stat));
  EXPECT_EQ(twice.dump(), once.dump());
}

StatNode no_host() {
  return [](const std::string& path) -> Result<HostNode> {
    return fail("stat " + path + ": No such file or directory");
  };
}

// ---- env -----------------------------------------------------------------------------------------

TEST(ApplyEnv, ReplacesExistingKeyInPlaceAndAppendsNewKeys) {
  EXPECT_EQ(apply(R"({"process":{"env":["PATH=/bin","FOO=old","G=1"]}})",
                  ContainerEdits{.env = {"FOO=new", "X=1"}}, no_host()),
            R"({"process":{"env":["PATH=/bin","FOO=new","G=1","X=1"]}})");
}

TEST(ApplyEnv, LaterDuplicateInTheEditsWinsInPlace) {
  EXPECT_EQ(
      apply(R"({"process":{"env":["PATH=/bin"]}})", ContainerEdits{.env = {"A=1", "B=2", "A=3"}}, no_host()),
      R"({"process":{"env":["PATH=/bin","A=3","B=2"]}})");
}

TEST(ApplyEnv, ReplacesEveryEntryOfTheKeyAndNotKeysThatOnlyShareAPrefix) {
  EXPECT_EQ(apply(R"({"process":{"env":["FOO=a","FOOBAR=x","FOO=b","FOO"]}})",
                  ContainerEdits{.env = {"FOO="}}, no_host()),
            R"({"process":{"env":["FOO=","FOOBAR=x","FOO=","FOO="]}})");
}

TEST(ApplyEnv, CreatesProcessAndEnvAtTheEnd) {
  EXPECT_EQ(apply(R"({"ociVersion":"1.0.2"})", ContainerEdits{.env = {"A=1"}}, no_host()),
            R"({"ociVersion":"1.0.2","process":{"env":["A=1"]}})");
}

TEST(ApplyEnv, InvalidEntryIsAnErrorAndLeavesTheConfigAsItWas) {
  Json config = parse(R"({"process":{"env":["PATH=/bin"]}})");
  const std::string before = config.dump();
  const auto result = apply_edits(config, ContainerEdits{.env = {"A=1", "FOO"}}, no_host());
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, R"(invalid environment variable "FOO")");
  EXPECT_EQ(config.dump(), before);
  EXPECT_EQ(apply("{}", ContainerEdits{.env = {"=x"}}, no_host()),
            R"(error: invalid environment variable "=x")");
}

TEST(ApplyEnv, Idempotent) {
  expect_idempotent(parse(R"({"process":{"env":["FOO=old","B=1"]}})"),
                    ContainerEdits{.env = {"FOO=new", "X=1", "X=2", "B=1"}}, no_host());
}

// ---- device nodes -------------------------------------------------------------------------------

TEST(ApplyDeviceNodes, FillsTypeNumbersAndModeFromTheHostAndAddsTheCgroupRule) {
  FakeHost host;
  host.add("/dev/nvidia0", HostNode{.type = 'c', .major = 195, .minor = 0, .mode = 0666});
  EXPECT_EQ(
      apply("{}", ContainerEdits{.device_nodes = {{.path = "/dev/nvidia0"}}}, host.stat()),
      R"({"linux":{"devices":[{"path":"/dev/nvidia0","type":"c","major":195,"minor":0,"fileMode":438}],)"
      R"("resources":{"devices":[{"allow":true,"type":"c","major":195,"minor":0,"access":"rwm"}]}}})");
  EXPECT_EQ(host.calls(), std::vector<std::string>{"/dev/nvidia0"});
}

TEST(ApplyDeviceNodes, StatsTheHostPathAndWritesTheContainerPath) {
  FakeHost host;
  host.add("/host/dev/nvidia-uvm", HostNode{.type = 'c', .major = 508, .minor = 1, .mode = 0660});
  EXPECT_EQ(
      apply("{}",
            ContainerEdits{.device_nodes = {{.path = "/dev/nvidia-uvm",
                                             .host_path = "/host/dev/nvidia-uvm",
                                             .permissions = "rw"}}},
            host.stat()),
      R"({"linux":{"devices":[{"path":"/dev/nvidia-uvm","type":"c","major":508,"minor":1,"fileMode":432}],)"
      R"("resources":{"devices":[{"allow":true,"type":"c","major":508,"minor":1,"access":"rw"}]}}})");
  EXPECT_EQ(host.calls(), std::vector<std::string>{"/host/dev/nvidia-uvm"});
}

TEST(ApplyDeviceNodes, MissingHostNodeIsAnErrorNamingTheHostPath) {
  FakeHost host;
  Json config = parse(R"({"process":{"env":["A=1"]}})");
  const auto result = apply_edits(
      config,
      ContainerEdits{.env = {"B=2"}, .device_nodes = {{.path = "/dev/nvidia0", .host_path = "/h/nvidia0"}}},
      host.stat());
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message,
            R"(CDI device "/dev/nvidia0": stat /h/nvidia0: No such file or directory)");
  EXPECT_EQ(config.dump(), R"({"process":{"env":["A=1"]}})");  // env was not half-applied
}

TEST(ApplyDeviceNodes, TypeDifferentFromTheHostIsAnError) {
  FakeHost host;
  host.add("/dev/nvidia0", HostNode{.type = 'c', .major = 195, .minor = 0, .mode = 0666});
  EXPECT_EQ(apply("{}", ContainerEdits{.device_nodes = {{.path = "/dev/nvidia0", .type = "b"}}}, host.stat()),
            R"(error: CDI device "/dev/nvidia0": host type mismatch (b, c))");
  // "u" never matches a host stat, so without a major it cannot be resolved.
  EXPECT_EQ(apply("{}", ContainerEdits{.device_nodes = {{.path = "/dev/nvidia0", .type = "u"}}}, host.stat()),
            R"(error: CDI device "/dev/nvidia0": host type mismatch (u, c))");
}

TEST(ApplyDeviceNodes, FullySpecifiedNodeIsNotStated) {
  FakeHost host;
  EXPECT_EQ(
      apply("{}",
            ContainerEdits{.device_nodes = {{.path = "/dev/nvidiactl",
                                             .type = "c",
                                             .major = 195,
                                             .minor = 255,
                                             .file_mode = 0666,
                                             .uid = 0,
                                             .gid = 0}}},
            host.stat()),
      R"({"linux":{"devices":[{"path":"/dev/nvidiactl","type":"c","major":195,"minor":255,"fileMode":438,)"
      R"("uid":0,"gid":0}],"resources":{"devices":[{"allow":true,"type":"c","major":195,"minor":255,)"
      R"("access":"rwm"}]}}})");
  EXPECT_TRUE(host.calls().empty());
}

TEST(ApplyDeviceNodes, MinimalNodeTakesOnlyTheModeFromTheHostAndToleratesAMissingNode) {
  const ContainerEdits edits{
      .device_nodes = {{.path = "/dev/nvidia1", .type = "c", .major = 195, .minor = 1}}};
  FakeHost absent;
  EXPECT_EQ(apply("{}", edits, absent.stat()),
            R"({"linux":{"devices":[{"path":"/dev/nvidia1","type":"c","major":195,"minor":1}],)"
            R"("resources":{"devices":[{"allow":true,"type":"c","major":195,"minor":1,"access":"rwm"}]}}})");
  EXPECT_EQ(absent.calls(), std::vector<std::string>{"/dev/nvidia1"});
  // The spec is trusted: the host's other numbers and type are not used.
  FakeHost other;
  other.add("/dev/nvidia1", HostNode{.type = 'b', .major = 7, .minor = 9, .mode = 0600});
  EXPECT_EQ(
      apply("{}", edits, other.stat()),
      R"({"linux":{"devices":[{"path":"/dev/nvidia1","type":"c","major":195,"minor":1,"fileMode":384}],)"
      R"("resources":{"devices":[{"allow":true,"type":"c","major":195,"minor":1,"access":"rwm"}]}}})");
}

TEST(ApplyDeviceNodes, GivenMajorWithoutTypeKeepsTheNumbersAndTakesTheType) {
  FakeHost host;
  host.add("/dev/x", HostNode{.type = 'c', .major = 1, .minor = 2, .mode = 0640});
  EXPECT_EQ(apply("{}", ContainerEdits{.device_nodes = {{.path = "/dev/x", .major = 10, .minor = 20}}},
                  host.stat()),
            R"({"linux":{"devices":[{"path":"/dev/x","type":"c","major":10,"minor":20,"fileMode":416}],)"
            R"("resources":{"devices":[{"allow":true,"type":"c","major":10,"minor":20,"access":"rwm"}]}}})");
}

TEST(ApplyDeviceNodes, FifoAndUnbufferedNodesGetNoCgroupRule) {
  FakeHost host;
  host.add("/run/fifo", HostNode{.type = 'p', .major = 0, .minor = 0, .mode = 0600});
  EXPECT_EQ(
      apply("{}",
            ContainerEdits{
                .device_nodes = {{.path = "/run/fifo"},
                                 {.path = "/dev/u", .type = "u", .major = 4, .minor = 5, .file_mode = 0600}}},
            host.stat()),
      R"({"linux":{"devices":[{"path":"/run/fifo","type":"p","major":0,"minor":0,"fileMode":384},)"
      R"({"path":"/dev/u","type":"u","major":4,"minor":5,"fileMode":384}]}})");
}

TEST(ApplyDeviceNodes, OwnerComesFromProcessUserWhenUnsetAndNonZero) {
  const ContainerEdits edits{
      .device_nodes = {
          {.path = "/dev/a", .type = "c", .major = 1, .minor = 1, .file_mode = 0666},
          {.path = "/dev/b", .type = "c", .major = 1, .minor = 2, .file_mode = 0666, .uid = 0, .gid = 5}}};
  Json config = parse(R"({"process":{"user":{"uid":1000,"gid":1001}}})");
  ASSERT_TRUE(apply_edits(config, edits, no_host()));
  EXPECT_EQ(config["linux"]["devices"].dump(),
            R"([{"path":"/dev/a","type":"c","major":1,"minor":1,"fileMode":438,"uid":1000,"gid":1001},)"
            R"({"path":"/dev/b","type":"c","major":1,"minor":2,"fileMode":438,"uid":0,"gid":5}])");
  Json root_user = parse(R"({"process":{"user":{"uid":0,"gid":0}}})");
  ASSERT_TRUE(apply_edits(root_user, edits, no_host()));
  EXPECT_EQ(root_user["linux"]["devices"][0].dump(),
            R"({"path":"/dev/a","type":"c","major":1,"minor":1,"fileMode":438})");
}

TEST(ApplyDeviceNodes, ReplacesADeviceWithTheSamePathAndKeepsTheOthers) {
  EXPECT_EQ(
      apply(R"({"linux":{"devices":[{"path":"/dev//nvidia0/","type":"c","major":1,"minor":1,"x":1},)"
            R"({"path":"/dev/fuse","type":"c","major":10,"minor":229,"vendor":"kept"}]}})",
            ContainerEdits{
                .device_nodes =
                    {{.path = "/dev/nvidia0", .type = "c", .major = 195, .minor = 0, .file_mode = 0666}}},
            no_host()),
      R"({"linux":{"devices":[{"path":"/dev/fuse","type":"c","major":10,"minor":229,"vendor":"kept"},)"
      R"({"path":"/dev/nvidia0","type":"c","major":195,"minor":0,"fileMode":438}],)"
      R"("resources":{"devices":[{"allow":true,"type":"c","major":195,"minor":0,"access":"rwm"}]}}})");
}

TEST(ApplyDeviceNodes, CgroupRuleIsAddedOnlyWhenNotAlreadyPresent) {
  // The runtime's rule has another key order; a rule with other access is a different rule.
  const std::string config = R"({"linux":{"resources":{"devices":[{"allow":false,"access":"rwm"},)"
                             R"({"access":"rwm","minor":0,"major":195,"type":"c","allow":true},)"
                             R"({"allow":true,"type":"c","major":195,"minor":255,"access":"rw"}]}}})";
  const ContainerEdits edits{
      .device_nodes = {{.path = "/dev/nvidia0", .type = "c", .major = 195, .minor = 0, .file_mode = 0666},
                       {.path = "/dev/nvidiactl", .type = "c", .major = 195, .minor = 255, .file_mode = 0666},
                       {.path = "/dev/nvidia0", .type = "c", .major = 195, .minor = 0, .file_mode = 0666}}};
  EXPECT_EQ(apply(config, edits, no_host()),
            R"({"linux":{"resources":{"devices":[{"allow":false,"access":"rwm"},)"
            R"({"access":"rwm","minor":0,"major":195,"type":"c","allow":true},)"
            R"({"allow":true,"type":"c","major":195,"minor":255,"access":"rw"},)"
            R"({"allow":true,"type":"c","major":195,"minor":255,"access":"rwm"}]},)"
            R"("devices":[{"path":"/dev/nvidiactl","type":"c","major":195,"minor":255,"fileMode":438},)"
            R"({"path":"/dev/nvidia0","type":"c","major":195,"minor":0,"fileMode":438}]}})");
}

TEST(ApplyDeviceNodes, CgroupRulesWithoutIntegerNumbersAreStillCompared) {
  // A rule written with 195.0 is the same rule to JSON; one with a string minor is not.
  const std::string config =
      R"({"linux":{"resources":{"devices":[{"allow":true,"type":"c","major":195.0,"minor":0,"access":"rwm"},)"
      R"({"allow":true,"type":"c","major":195,"minor":"255","access":"rwm"}]}}})";
  const ContainerEdits edits{
      .device_nodes = {
          {.path = "/dev/nvidia0", .type = "c", .major = 195, .minor = 0, .file_mode = 0666},
          {.path = "/dev/nvidiactl", .type = "c", .major = 195, .minor = 255, .file_mode = 0666}}};
  EXPECT_EQ(
      apply(config, edits, no_host()),
      R"({"linux":{"resources":{"devices":[{"allow":true,"type":"c","major":195.0,"minor":0,"access":"rwm"},)"
      R"({"allow":true,"type":"c","major":195,"minor":"255","access":"rwm"},)"
      R"({"allow":true,"type":"c","major":195,"minor":255,"access":"rwm"}]},)"
      R"("devices":[{"path":"/dev/nvidia0","type":"c","major":195,"minor":0,"fileMode":438},)"
      R"({"path":"/dev/nvidiactl","type":"c","major":195,"minor":255,"fileMode":438}]}})");
}

TEST(ApplyDeviceNodes, Idempotent) {
  FakeHost host;
  host.add("/dev/nvidia0", HostNode{.type = 'c', .major = 195, .minor = 0, .mode = 0666});
  host.add("/dev/sda", HostNode{.type = 'b', .major = 8, .minor = 0, .mode = 0660});
  expect_idempotent(
      parse(R"({"process":{"user":{"uid":7,"gid":8}},"linux":{"devices":[{"path":"/dev/fuse"}]}})"),
      ContainerEdits{.device_nodes = {{.path = "/dev/nvidia0"},
                                      {.path = "/dev/sda", .permissions = "r"},
                                      {.path = "/dev/fuse", .type = "c", .major = 10, .minor = 229},
                                      {.path = "/dev/nvidia0", .permissions = "rw"}}},
      host.stat());
}

TEST(ApplyDeviceNodes, RealStatReadsTheNodeAndDoesNotFollowSymlinks) {
  const auto null = stat_host_node("/dev/null");
  if (!null) {
    GTEST_SKIP() << "no /dev/null here: " << null.error().message;
  }
  EXPECT_EQ(null->type, 'c');
  EXPECT_EQ(null->major, 1);
  EXPECT_EQ(null->minor, 3);
  EXPECT_EQ(null->mode, 0666u);

  const test::TempDir tmp{"gpuctk-apply"};
  ASSERT_FALSE(tmp.path().empty());
  const std::string& dir = tmp.path();
  const std::string link = dir + "/null-link";
  const std::string file = dir + "/file";
  ASSERT_EQ(::symlink("/dev/null", link.c_str()), 0);
  ASSERT_TRUE(write_file_atomic(file, "x", 0644));
  const auto via_link = stat_host_node(link);
  const auto regular = stat_host_node(file);
  const auto missing = stat_host_node(dir + "/missing");
  ASSERT_FALSE(via_link);
  EXPECT_EQ(via_link.error().message, "stat " + link + ": not a device node");
  ASSERT_FALSE(regular);
  EXPECT_EQ(regular.error().message, "stat " + file + ": not a device node");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "stat " + dir + "/missing: No such file or directory");
}

// ---- mounts -------------------------------------------------------------------------------------

TEST(ApplyMounts, ReplacesSameDestinationAndStableSortsByDepth) {
  const std::string config = R"({"mounts":[{"destination":"/proc","type":"proc","source":"proc"},)"
                             R"({"destination":"/dev","type":"tmpfs","source":"tmpfs"},)"
                             R"({"destination":"/dev/pts","type":"devpts","source":"devpts"},)"
                             R"({"destination":"/dev/shm/","type":"tmpfs","source":"shm"},)"
                             R"({"destination":"/sys/fs/cgroup","type":"cgroup","source":"cgroup"},)"
                             R"({"destination":"/dev/mqueue","type":"mqueue","source":"mqueue"},)"
                             R"({"destination":"/sys","type":"sysfs","source":"sysfs"}]})";
  const ContainerEdits edits{
      .mounts = {
          {.host_path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
           .container_path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
           .options = {"ro", "nosuid", "nodev", "bind"}},
          {.host_path = "/host/shm", .container_path = "/dev/shm", .options = {"bind"}, .type = "none"},
          {.host_path = "/host/a", .container_path = "/a"}}};
  EXPECT_EQ(
      apply(config, edits, no_host()),
      R"({"mounts":[{"destination":"/proc","type":"proc","source":"proc"},)"
      R"({"destination":"/dev","type":"tmpfs","source":"tmpfs"},)"
      R"({"destination":"/sys","type":"sysfs","source":"sysfs"},)"
      R"({"destination":"/a","source":"/host/a"},)"
      R"({"destination":"/dev/pts","type":"devpts","source":"devpts"},)"
      R"({"destination":"/dev/mqueue","type":"mqueue","source":"mqueue"},)"
      R"({"destination":"/dev/shm","type":"none","source":"/host/shm","options":["bind"]},)"
      R"({"destination":"/sys/fs/cgroup","type":"cgroup","source":"cgroup"},)"
      R"({"destination":"/usr/lib/x86_64-linux-gnu/libcuda.so.1",)"
      R"("source":"/usr/lib/x86_64-linux-gnu/libcuda.so.1","options":["ro","nosuid","nodev","bind"]}]})");
  expect_idempotent(parse(config), edits, no_host());
}

TEST(ApplyMounts, RemovesEveryMountWithTheDestinationAndKeepsExtraKeysOfOthers) {
  EXPECT_EQ(
      apply(
          R"({"mounts":[{"destination":"/x","source":"a"},{"destination":"/y","source":"b","uidMappings":[]},)"
          R"({"destination":"/x/","source":"c"}]})",
          ContainerEdits{.mounts = {{.host_path = "/h", .container_path = "/x"}}}, no_host()),
      R"({"mounts":[{"destination":"/y","source":"b","uidMappings":[]},{"destination":"/x","source":"/h"}]})");
}

TEST(ApplyMounts, NoMountEditsLeavesTheRuntimeOrderAlone) {
  const std::string config =
      R"({"mounts":[{"destination":"/a/b","source":"x"},{"destination":"/a","source":"y"}]})";
  EXPECT_EQ(apply(config, ContainerEdits{.env = {"A=1"}}, no_host()),
            R"({"mounts":[{"destination":"/a/b","source":"x"},{"destination":"/a","source":"y"}],)"
            R"("process":{"env":["A=1"]}})");
}

TEST(ApplyMounts, MountWithoutDestinationIsAnError) {
  EXPECT_EQ(apply(R"({"mounts":[{"destination":"/a","source":"x"},{"source":"y"}]})",
                  ContainerEdits{.mounts = {{.host_path = "/h", .container_path = "/b"}}}, no_host()),
            "error: OCI config: mounts[1] has no destination");
}

// ---- hooks --------------------------------------------------------------------------------------

TEST(ApplyHooks, AppendsToTheNamedListOnlyWhenNotAlreadyThere) {
  const std::string config =
      R"({"hooks":{"prestart":[{"env":["A=1"],"args":["nvidia-cdi-hook","x"],"path":"/usr/bin/nvidia-cdi-hook"}]}})";
  const ContainerEdits edits{.hooks = {{.hook_name = "prestart",
                                        .path = "/usr/bin/nvidia-cdi-hook",
                                        .args = {"nvidia-cdi-hook", "x"},
                                        .env = {"A=1"}},
                                       {.hook_name = "createContainer",
                                        .path = "/usr/bin/gpuctk",
                                        .args = {"gpuctk", "hook"},
                                        .env = {"PATH=/usr/bin"},
                                        .timeout = 10},
                                       {.hook_name = "createContainer",
                                        .path = "/usr/bin/gpuctk",
                                        .args = {"gpuctk", "hook"},
                                        .env = {"PATH=/usr/bin"},
                                        .timeout = 10},
                                       {.hook_name = "poststop", .path = "/bin/true"}}};
  EXPECT_EQ(
      apply(config, edits, no_host()),
      R"({"hooks":{"prestart":[{"env":["A=1"],"args":["nvidia-cdi-hook","x"],"path":"/usr/bin/nvidia-cdi-hook"}],)"
      R"("createContainer":[{"path":"/usr/bin/gpuctk","args":["gpuctk","hook"],"env":["PATH=/usr/bin"],"timeout":10}],)"
      R"("poststop":[{"path":"/bin/true"}]}})");
  expect_idempotent(parse(config), edits, no_host());
}

TEST(ApplyHooks, DifferentArgumentsMakeADifferentHook) {
  EXPECT_EQ(
      apply(R"({"hooks":{"poststart":[{"path":"/bin/x","args":["x","1"]}]}})",
            ContainerEdits{.hooks = {{.hook_name = "poststart", .path = "/bin/x", .args = {"x", "2"}}}},
            no_host()),
      R"({"hooks":{"poststart":[{"path":"/bin/x","args":["x","1"]},{"path":"/bin/x","args":["x","2"]}]}})");
}

TEST(ApplyHooks, UnknownHookNameIsAnErrorAndNothingIsApplied) {
  Json config = parse(R"({"process":{"env":["A=1"]}})");
  const auto result =
      apply_edits(config,
                  ContainerEdits{.env = {"B=1"},
                                 .hooks = {{.hook_name = "createRuntime", .path = "/bin/ok"},
                                           {.hook_name = "preStart", .path = "/usr/bin/nvidia-cdi-hook"}}},
                  no_host());
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, R"(CDI hook "/usr/bin/nvidia-cdi-hook": unknown hook name "preStart")");
  EXPECT_EQ(config.dump(), R"({"process":{"env":["A=1"]}})");
}

// ---- intelRdt, additionalGids, netDevices --------------------------------------------------------

TEST(ApplyIntelRdt, ReplacesTheWholeObject) {
  const std::string config = R"({"linux":{"intelRdt":{"closID":"old","memBwSchema":"MB:0=20"}}})";
  const ContainerEdits edits{.intel_rdt = IntelRdt{.clos_id = "gpu",
                                                   .l3_cache_schema = "L3:0=ff",
                                                   .schemata = std::vector<std::string>{"L2:0=f"},
                                                   .enable_monitoring = true}};
  EXPECT_EQ(apply(config, edits, no_host()),
            R"({"linux":{"intelRdt":{"closID":"gpu","l3CacheSchema":"L3:0=ff","schemata":["L2:0=f"],)"
            R"("enableMonitoring":true}}})");
  EXPECT_EQ(apply(config, ContainerEdits{.intel_rdt = IntelRdt{}}, no_host()),
            R"({"linux":{"intelRdt":{}}})");
  expect_idempotent(parse(config), edits, no_host());
}

TEST(ApplyAdditionalGids, AddsEachGidOnceAndSkipsZero) {
  const std::string config = R"({"process":{"user":{"uid":1000,"gid":1000,"additionalGids":[44]}}})";
  const ContainerEdits edits{.additional_gids = {0, 44, 107, 107, 27}};
  EXPECT_EQ(apply(config, edits, no_host()),
            R"({"process":{"user":{"uid":1000,"gid":1000,"additionalGids":[44,107,27]}}})");
  expect_idempotent(parse(config), edits, no_host());
}

TEST(ApplyAdditionalGids, CreatesAUserWithUidAndGidZeroAndOnlyZeroChangesNothing) {
  EXPECT_EQ(apply("{}", ContainerEdits{.additional_gids = {5}}, no_host()),
            R"({"process":{"user":{"uid":0,"gid":0,"additionalGids":[5]}}})");
  EXPECT_EQ(apply("{}", ContainerEdits{.additional_gids = {0}}, no_host()), "{}");
}

// A config's own entries count whatever their JSON number type; entries that are no gid (a string, a
// negative number: runc refuses them) are left for the runtime to refuse, never matched.
TEST(ApplyAdditionalGids, KeepsTheConfigsEntriesAndAddsOnlyWhatIsMissing) {
  const std::string config =
      R"({"process":{"user":{"uid":1000,"gid":1000,"additionalGids":[105,"44",-44,7]}}})";
  const ContainerEdits edits{.additional_gids = {44, 105}};
  EXPECT_EQ(apply(config, edits, no_host()),
            R"({"process":{"user":{"uid":1000,"gid":1000,"additionalGids":[105,"44",-44,7,44]}}})");
  expect_idempotent(parse(config), edits, no_host());
  auto wrong = parse(R"({"process":{"user":{"uid":1,"gid":1,"additionalGids":{"a":1}}}})");
  const auto before = wrong;
  const auto r = apply_edits(wrong, edits, no_host());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "OCI config: process.user.additionalGids is an object, expected an array");
  EXPECT_EQ(wrong, before);
}

// Bounded: more groups than Linux lets a process have (NGROUPS_MAX, 65536) are one error, from the edits
// or from the config with them, and the config stays as it was.
TEST(ApplyAdditionalGids, MoreGroupsThanLinuxAllowsAreAnError) {
  ContainerEdits many;
  for (uint32_t gid = 1; gid <= k_max_additional_gids + 1; ++gid) {
    many.additional_gids.push_back(gid);
  }
  auto config = parse("{}");
  auto r = apply_edits(config, many, no_host());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "CDI additionalGids: 65537 groups, more than Linux allows (65536)");
  EXPECT_EQ(config, parse("{}"));

  many.additional_gids.pop_back();  // 65536 from the edits alone are fine
  ASSERT_TRUE(apply_edits(config, many, no_host()));
  EXPECT_EQ(config["process"]["user"]["additionalGids"].size(), k_max_additional_gids);
  ASSERT_TRUE(apply_edits(config, ContainerEdits{.additional_gids = {5}}, no_host())) << "nothing new";
  const auto full = config;
  r = apply_edits(config, ContainerEdits{.additional_gids = {4000000000u}}, no_host());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "OCI config: process.user.additionalGids: 65537 groups, more than Linux allows (65536)");
  EXPECT_EQ(config, full);
}

TEST(ApplyNetDevices, SetsTheEntryOfEachHostInterface) {
  const std::string config = R"({"linux":{"netDevices":{"eth1":{"name":"old"},"eth9":{"name":"kept"}}}})";
  const ContainerEdits edits{.net_devices = {{.host_interface_name = "eth1", .name = "gpu-net0"},
                                             {.host_interface_name = "ib0", .name = "ib0"}}};
  EXPECT_EQ(
      apply(config, edits, no_host()),
      R"({"linux":{"netDevices":{"eth1":{"name":"gpu-net0"},"eth9":{"name":"kept"},"ib0":{"name":"ib0"}}}})");
  expect_idempotent(parse(config), edits, no_host());
}

// ---- whole configs ------------------------------------------------------------------------------

TEST(ApplyConfig, KeysTheEditsDoNotOwnAreUntouched) {
  const std::string config =
      R"({"zeta":1e3,"process":{"weird":18446744073709551615,"user":{"gid":0,"uid":0},"env":["A=1"],"neg":-5},)"
      R"("annotations":{"b":"2","a":"1"},"ociVersion":"1.0.2",)"
      R"("mounts":[{"source":"proc","destination":"/proc","type":"proc","x-extra":true}],)"
      R"("linux":{"uidMappings":[],"devices":[{"vendor":"x","path":"/dev/fuse","type":"c","major":10,"minor":229}],)"
      R"("resources":{"memory":{"limit":-1},"devices":[{"allow":false,"access":"rwm"}]}}})";
  const ContainerEdits edits{
      .env = {"B=2"},
      .device_nodes = {{.path = "/dev/nvidia0", .type = "c", .major = 195, .minor = 0, .file_mode = 0666}},
      .mounts = {{.host_path = "/h/x", .container_path = "/usr/bin/x", .options = {"ro", "bind"}}}};
  EXPECT_EQ(
      apply(config, edits, no_host()),
      R"({"zeta":1000.0,"process":{"weird":18446744073709551615,"user":{"gid":0,"uid":0},"env":["A=1","B=2"],)"
      R"("neg":-5},"annotations":{"b":"2","a":"1"},"ociVersion":"1.0.2",)"
      R"("mounts":[{"source":"proc","destination":"/proc","type":"proc","x-extra":true},)"
      R"({"destination":"/usr/bin/x","source":"/h/x","options":["ro","bind"]}],)"
      R"("linux":{"uidMappings":[],"devices":[{"vendor":"x","path":"/dev/fuse","type":"c","major":10,"minor":229},)"
      R"({"path":"/dev/nvidia0","type":"c","major":195,"minor":0,"fileMode":438}],)"
      R"("resources":{"memory":{"limit":-1},"devices":[{"allow":false,"access":"rwm"},)"
      R"({"allow":true,"type":"c","major":195,"minor":0,"access":"rwm"}]}}})");
}

TEST(ApplyConfig, EmptyEditsChangeNothing) {
  const std::string config = R"({"b":1,"a":{"y":2,"x":[3]}})";
  EXPECT_EQ(apply(config, ContainerEdits{}, no_host()), config);
}

TEST(ApplyConfig, WrongShapesAreErrors) {
  EXPECT_EQ(apply("[]", ContainerEdits{.env = {"A=1"}}, no_host()),
            "error: OCI config: the document is an array, expected an object");
  EXPECT_EQ(apply(R"({"process":"x"})", ContainerEdits{.env = {"A=1"}}, no_host()),
            "error: OCI config: process is a string, expected an object");
  EXPECT_EQ(apply(R"({"linux":{"devices":"x"}})",
                  ContainerEdits{.device_nodes = {{.path = "/d", .type = "c", .major = 1, .file_mode = 0}}},
                  no_host()),
            "error: OCI config: linux.devices is a string, expected an array");
  EXPECT_EQ(apply(R"({"hooks":{"prestart":{}}})",
                  ContainerEdits{.hooks = {{.hook_name = "prestart", .path = "/x"}}}, no_host()),
            "error: OCI config: hooks.prestart is an object, expected an array");
  // null counts as absent, as in Go.
  EXPECT_EQ(apply(R"({"process":null})", ContainerEdits{.env = {"A=1"}}, no_host()),
            R"({"process":{"env":["A=1"]}})");
}

// Every kind of edit at once, on the configs runc and podman really write.
ContainerEdits all_edits() {
  return ContainerEdits{
      .env = {"NVIDIA_VISIBLE_DEVICES=void", "TERM=dumb", "GPU=0"},
      .device_nodes = {{.path = "/dev/nvidia0"},
                       {.path = "/dev/nvidiactl", .type = "c", .major = 195, .minor = 255, .file_mode = 0666},
                       {.path = "/dev/nvidia-caps/nvidia-cap1",
                        .host_path = "/host/cap1",
                        .permissions = "r"}},
      .mounts = {{.host_path = "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
                  .container_path = "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
                  .options = {"ro", "nosuid", "nodev", "bind"}},
                 {.host_path = "/usr/bin/nvidia-smi",
                  .container_path = "/usr/bin/nvidia-smi",
                  .options = {"ro", "nosuid", "nodev", "bind"}},
                 {.host_path = "/run/nvidia-persistenced/socket",
                  .container_path = "/run/nvidia-persistenced/socket",
                  .options = {"ro", "nosuid", "nodev", "bind", "noexec"}}},
      .hooks = {{.hook_name = "createContainer",
                 .path = "/usr/bin/gpuctk",
                 .args = {"gpuctk", "hook", "update-ldcache", "--folder", "/usr/lib/x86_64-linux-gnu"},
                 .env = {"GPUCTK_DEBUG=0"}}},
      .intel_rdt = IntelRdt{.clos_id = "gpu"},
      .additional_gids = {44, 0, 107},
      .net_devices = {{.host_interface_name = "ib0", .name = "ib0"}}};
}

StatNode gpu_host() {
  return [](const std::string& path) -> Result<HostNode> {
    if (path == "/dev/nvidia0") {
      return HostNode{.type = 'c', .major = 195, .minor = 0, .mode = 0666};
    }
    if (path == "/host/cap1") {
      return HostNode{.type = 'c', .major = 237, .minor = 1, .mode = 0400};
    }
    return fail("stat " + path + ": No such file or directory");
  };
}

Json read_data(const std::string& name) {
  const auto text = read_file(std::string(GPUCTK_SOURCE_DIR) + "/tests/data/oci/" + name);
  EXPECT_TRUE(text) << (text ? "" : text.error().message);
  return text ? Json::parse(*text) : Json::object();
}

TEST(ApplyConfig, RealRuncSpecConfig) {
  Json config = read_data("runc-spec-config.json");
  const Json original = config;
  ASSERT_TRUE(apply_edits(config, all_edits(), gpu_host()));

  EXPECT_EQ(config["process"]["env"].dump(),
            R"(["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","TERM=dumb",)"
            R"("NVIDIA_VISIBLE_DEVICES=void","GPU=0"])");
  EXPECT_EQ(config["process"]["user"].dump(), R"({"uid":0,"gid":0,"additionalGids":[44,107]})");
  EXPECT_EQ(config["linux"]["devices"].dump(),
            R"([{"path":"/dev/nvidia0","type":"c","major":195,"minor":0,"fileMode":438},)"
            R"({"path":"/dev/nvidiactl","type":"c","major":195,"minor":255,"fileMode":438},)"
            R"({"path":"/dev/nvidia-caps/nvidia-cap1","type":"c","major":237,"minor":1,"fileMode":256}])");
  // runc spec denies all devices first; our allow rules follow.
  EXPECT_EQ(
      config["linux"]["resources"]["devices"].dump(),
      R"([{"allow":false,"access":"rwm"},{"allow":true,"type":"c","major":195,"minor":0,"access":"rwm"},)"
      R"({"allow":true,"type":"c","major":195,"minor":255,"access":"rwm"},)"
      R"({"allow":true,"type":"c","major":237,"minor":1,"access":"r"}])");
  std::vector<std::string> destinations;
  for (const auto& mount : config["mounts"]) {
    destinations.push_back(mount["destination"].get<std::string>());
  }
  EXPECT_EQ(destinations, (std::vector<std::string>{"/proc", "/dev", "/sys", "/dev/pts", "/dev/shm",
                                                    "/dev/mqueue", "/sys/fs/cgroup", "/usr/bin/nvidia-smi",
                                                    "/run/nvidia-persistenced/socket",
                                                    "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"}));
  EXPECT_EQ(
      config["hooks"].dump(),
      R"({"createContainer":[{"path":"/usr/bin/gpuctk","args":["gpuctk","hook","update-ldcache","--folder",)"
      R"("/usr/lib/x86_64-linux-gnu"],"env":["GPUCTK_DEBUG=0"]}]})");
  EXPECT_EQ(config["linux"]["intelRdt"].dump(), R"({"closID":"gpu"})");
  EXPECT_EQ(config["linux"]["netDevices"].dump(), R"({"ib0":{"name":"ib0"}})");
  // Everything else is as runc wrote it, in its order.
  for (const char* key : {"ociVersion", "root", "hostname"}) {
    EXPECT_EQ(config[key], original[key]) << key;
  }
  for (const char* key : {"maskedPaths", "readonlyPaths", "namespaces", "uidMappings"}) {
    EXPECT_EQ(config["linux"].value(key, Json()), original["linux"].value(key, Json())) << key;
  }
  EXPECT_EQ(config["process"]["capabilities"], original["process"]["capabilities"]);
  expect_idempotent(original, all_edits(), gpu_host());
}

TEST(ApplyConfig, RealPodmanConfigIsIdempotentAndKeepsItsAnnotations) {
  const Json original = read_data("podman-config.json");
  Json config = original;
  ASSERT_TRUE(apply_edits(config, all_edits(), gpu_host()));
  EXPECT_EQ(config["annotations"], original["annotations"]);
  EXPECT_EQ(config["process"]["env"].size(), original["process"]["env"].size() + 2);
  expect_idempotent(original, all_edits(), gpu_host());
}

// ---- append -------------------------------------------------------------------------------------

TEST(ApplyAppend, AppendsEveryListAndTheLastIntelRdtWins) {
  const ContainerEdits spec_wide{.env = {"A=1"},
                                 .device_nodes = {{.path = "/dev/nvidiactl"}},
                                 .hooks = {{.hook_name = "prestart", .path = "/x"}},
                                 .intel_rdt = IntelRdt{.clos_id = "first"},
                                 .additional_gids = {44}};
  const ContainerEdits device{.env = {"A=2"},
                              .device_nodes = {{.path = "/dev/nvidia0"}},
                              .mounts = {{.host_path = "/h", .container_path = "/c"}},
                              .additional_gids = {44},
                              .net_devices = {{.host_interface_name = "a", .name = "b"}}};
  ContainerEdits merged = spec_wide;
  append(merged, device);
  EXPECT_EQ(merged.env, (std::vector<std::string>{"A=1", "A=2"}));
  EXPECT_EQ(merged.device_nodes,
            (std::vector<DeviceNode>{{.path = "/dev/nvidiactl"}, {.path = "/dev/nvidia0"}}));
  EXPECT_EQ(merged.mounts, device.mounts);
  EXPECT_EQ(merged.hooks, spec_wide.hooks);
  EXPECT_EQ(merged.additional_gids, (std::vector<uint32_t>{44, 44}));
  EXPECT_EQ(merged.net_devices, device.net_devices);
  ASSERT_TRUE(merged.intel_rdt);
  EXPECT_EQ(merged.intel_rdt->clos_id, "first");
  append(merged, ContainerEdits{.intel_rdt = IntelRdt{.clos_id = "second"}});
  EXPECT_EQ(merged.intel_rdt->clos_id, "second");
  ContainerEdits empty;
  append(empty, ContainerEdits{});
  EXPECT_EQ(empty, ContainerEdits{});
}

// ---- resolve_edits: the typed form prestart carries out ------------------------------------------

// Every list of resolve_edits is what apply_edits writes into a config that has none of its own: the
// same entries, values and order, written back as apply_edits writes them.
TEST(ResolveEdits, IsWhatApplyEditsWritesIntoAConfigWithoutLists) {
  FakeHost host;
  host.add("/dev/nvidia0", {'c', 195, 0, 0666});
  host.add("/host/dev/nvidia1", {'c', 195, 1, 0660});
  host.add("/dev/fifo", {'p', 0, 0, 0600});
  ContainerEdits edits;
  edits.env = {"A=1", "B=2", "A=3", "C="};
  edits.device_nodes = {
      {.path = "/dev/nvidia0"},
      {.path = "/dev/nvidia1", .host_path = "/host/dev/nvidia1", .permissions = "rw", .gid = 44},
      {.path = "/dev//nvidia0/", .type = "c", .major = 195, .minor = 0, .file_mode = 0600},
      {.path = "/dev/fifo"},
      {.path = "/dev/x", .type = "c", .major = 10, .minor = 200, .file_mode = 0644, .uid = 7},
  };
  edits.mounts = {{.host_path = "/a", .container_path = "/usr/lib/x/y", .options = {"ro", "bind"}},
                  {.host_path = "/b", .container_path = "/opt", .options = {"bind"}, .type = "bind"},
                  {.host_path = "/c", .container_path = "/usr/lib/x/y/", .options = {"ro"}},
                  {.host_path = "/d", .container_path = "/usr/lib"}};
  const Hook hook{.hook_name = "createContainer", .path = "/bin/h", .args = {"h", "1"}};
  edits.hooks = {hook, {.hook_name = "prestart", .path = "/bin/p", .timeout = 5}, hook};
  edits.additional_gids = {0, 44, 45, 44};

  const Json config = parse(R"({"process":{"user":{"uid":1000,"gid":1001,"additionalGids":[45]}}})");
  const auto resolved = resolve_edits(edits, process_owner(config), host.stat());
  ASSERT_TRUE(resolved) << resolved.error().message;
  Json applied = config;
  ASSERT_TRUE(apply_edits(applied, edits, host.stat()));

  Json env = Json::array();
  for (const auto& entry : resolved->env) {
    env.push_back(entry);
  }
  EXPECT_EQ(env, applied["process"]["env"]);
  EXPECT_EQ(resolved->env, (std::vector<std::string>{"A=3", "B=2", "C="}));

  Json devices = Json::array();
  for (const auto& d : resolved->devices) {
    Json entry = {{"path", d.path}, {"type", d.type}, {"major", d.major}, {"minor", d.minor}};
    if (d.file_mode) {
      entry["fileMode"] = *d.file_mode;
    }
    if (d.uid) {
      entry["uid"] = *d.uid;
    }
    if (d.gid) {
      entry["gid"] = *d.gid;
    }
    devices.push_back(entry);
  }
  EXPECT_EQ(devices, applied["linux"]["devices"]);
  ASSERT_EQ(resolved->devices.size(), 4U);
  EXPECT_EQ(resolved->devices[0].host_path, "/host/dev/nvidia1");
  EXPECT_EQ(resolved->devices[1].path, "/dev//nvidia0/");  // the later entry, in its own place
  EXPECT_EQ(resolved->devices[1].uid, 1000U);
  EXPECT_EQ(resolved->devices[1].gid, 1001U);

  Json rules = Json::array();
  for (const auto& r : resolved->rules) {
    rules.push_back(
        {{"allow", true}, {"type", r.type}, {"major", r.major}, {"minor", r.minor}, {"access", r.access}});
  }
  EXPECT_EQ(rules, applied["linux"]["resources"]["devices"]);
  EXPECT_EQ(resolved->rules.size(), 3U);  // nvidia0's two entries give the same rule once; no fifo rule

  Json mounts = Json::array();
  for (const auto& m : resolved->mounts) {
    Json entry = {{"destination", m.container_path}};
    if (!m.type.empty()) {
      entry["type"] = m.type;
    }
    entry["source"] = m.host_path;
    if (!m.options.empty()) {
      entry["options"] = m.options;
    }
    mounts.push_back(entry);
  }
  EXPECT_EQ(mounts, applied["mounts"]);
  ASSERT_EQ(resolved->mounts.size(), 3U);
  EXPECT_EQ(resolved->mounts[0].container_path, "/opt");  // parents first
  EXPECT_EQ(resolved->mounts[2].host_path, "/c");

  ASSERT_EQ(resolved->hooks.size(), 2U);
  EXPECT_EQ(resolved->hooks[0], hook);
  EXPECT_EQ(applied["hooks"]["createContainer"].size(), 1U);
  EXPECT_EQ(applied["hooks"]["prestart"][0]["timeout"], 5);

  EXPECT_EQ(resolved->additional_gids, (std::vector<uint32_t>{44, 45}));
  EXPECT_EQ(applied["process"]["user"]["additionalGids"], Json::parse("[45,44]"));
}

TEST(ResolveEdits, HasApplyEditsErrors) {
  ContainerEdits env;
  env.env = {"=x"};
  EXPECT_EQ(resolve_edits(env, {}, no_host()).error().message, "invalid environment variable \"=x\"");
  ContainerEdits hook;
  hook.hooks = {{.hook_name = "preStart", .path = "/usr/bin/x"}};
  EXPECT_EQ(resolve_edits(hook, {}, no_host()).error().message,
            "CDI hook \"/usr/bin/x\": unknown hook name \"preStart\"");
  ContainerEdits node;
  node.device_nodes = {{.path = "/dev/nvidia0"}};
  EXPECT_EQ(resolve_edits(node, {}, no_host()).error().message,
            "CDI device \"/dev/nvidia0\": stat /dev/nvidia0: No such file or directory");
}

}  // namespace
}  // namespace gpuctk::cdi
