#include "cdi/validate.hpp"

#include <gtest/gtest.h>

#include "cdi/codec.hpp"

namespace gpuctk::cdi {
namespace {

using Lines = std::vector<std::string>;

// The problems of `spec` as "<where>: <what>" lines.
Lines problems(const Spec& spec) {
  Lines lines;
  for (const Problem& p : validate(spec)) {
    lines.push_back(p.where + ": " + p.what);
  }
  return lines;
}

// A valid spec of the newest version, so that content rules can be tested without version noise.
Spec valid_spec(std::string version = "1.1.0") {
  Spec spec;
  spec.cdi_version = std::move(version);
  spec.kind = "vendor.com/device";
  spec.devices.push_back(Device{"dev0", {}, ContainerEdits{.env = {"A=1"}}});
  return spec;
}

ContainerEdits& edits(Spec& spec) {
  return spec.devices[0].container_edits;
}

TEST(CdiValidateTest, ValidSpecHasNoProblems) {
  EXPECT_EQ(problems(valid_spec()), Lines{});
  EXPECT_EQ(problems(valid_spec("0.3.0")), Lines{});
}

// What gpuctk generates is checked before it is written: the first problem, with the spec's kind.
TEST(CdiValidateTest, CheckGeneratedNamesTheKindAndTheFirstProblem) {
  EXPECT_TRUE(check_generated(valid_spec()));
  Spec spec = valid_spec();
  spec.devices.push_back(spec.devices[0]);
  spec.devices.push_back(spec.devices[0]);
  ASSERT_FALSE(problems(spec).empty()) << "dev0 three times";
  EXPECT_EQ(check_generated(spec).error().message,
            "generated vendor.com/device spec is invalid: " + problems(spec).front());
}

TEST(CdiValidateTest, CdiVersionMustBeKnown) {
  EXPECT_EQ(problems(valid_spec("")), Lines{"cdiVersion: missing cdiVersion"});
  const std::string known = " (known: 0.3.0, 0.4.0, 0.5.0, 0.6.0, 0.7.0, 0.8.0, 1.0.0, 1.1.0)";
  EXPECT_EQ(problems(valid_spec("1.2.0")), Lines{R"(cdiVersion: unknown cdiVersion "1.2.0")" + known});
  EXPECT_EQ(problems(valid_spec("0.2.0")), Lines{R"(cdiVersion: unknown cdiVersion "0.2.0")" + known});
  EXPECT_EQ(problems(valid_spec("0.5")), Lines{R"(cdiVersion: unknown cdiVersion "0.5")" + known});
  EXPECT_EQ(problems(valid_spec("not-a-version")),
            Lines{R"(cdiVersion: unknown cdiVersion "not-a-version")" + known});
  EXPECT_EQ(problems(valid_spec("v0.5.0")), Lines{});  // a leading "v" is tolerated
  EXPECT_EQ(problems(valid_spec("v1.1.0")), Lines{});
}

TEST(CdiValidateTest, CdiVersionMustNotBeLowerThanTheContentNeeds) {
  Spec spec = valid_spec("0.3.0");
  edits(spec).device_nodes.push_back(DeviceNode{.path = "/dev/x", .host_path = "/dev/x"});
  EXPECT_EQ(problems(spec),
            Lines{R"(cdiVersion: cdiVersion "0.3.0" is lower than 0.5.0, which this spec needs for )"
                  "devices[0].containerEdits.deviceNodes[0].hostPath"});
  spec.cdi_version = "0.5.0";
  EXPECT_EQ(problems(spec), Lines{});
  spec.cdi_version = "0.8.0";  // higher than needed is legal
  EXPECT_EQ(problems(spec), Lines{});

  Spec dotted = valid_spec("v0.5.0");
  dotted.kind = "vendor.com/dotted.class";
  EXPECT_EQ(problems(dotted),
            Lines{R"(cdiVersion: cdiVersion "v0.5.0" is lower than 0.6.0, which this spec needs for )"
                  R"(kind (class contains "."))"});
  Spec digit = valid_spec("0.4.0");
  digit.devices[0].name = "0";
  EXPECT_EQ(problems(digit),
            Lines{R"(cdiVersion: cdiVersion "0.4.0" is lower than 0.5.0, which this spec needs for )"
                  "devices[0].name (starts with a digit)"});
}

TEST(CdiValidateTest, KindNeedsVendorAndClass) {
  Spec spec = valid_spec();
  spec.kind = "";
  EXPECT_EQ(problems(spec), Lines{"kind: missing kind (want vendor/class)"});
  spec.kind = "vendor.com";
  EXPECT_EQ(problems(spec), Lines{R"(kind: kind "vendor.com" has no "/" (want vendor/class))"});
  spec.kind = "/device";
  EXPECT_EQ(problems(spec), Lines{"kind: empty vendor"});
  spec.kind = "vendor.com-/device=";  // both parts bad: both reported
  EXPECT_EQ(
      problems(spec),
      (Lines{R"(kind: vendor "vendor.com-" must end with a letter or digit)",
             R"(kind: class "device=" contains "="; only letters, digits, "_", "-" and "." are allowed)"}));
  spec.kind = "vendor.com/foo/bar";
  EXPECT_EQ(
      problems(spec),
      Lines{R"(kind: class "foo/bar" contains "/"; only letters, digits, "_", "-" and "." are allowed)"});
}

TEST(CdiValidateTest, OneCharacterVendorOrClassIsRejectedBecauseItCrashesReleasedLibraries) {
  Spec spec = valid_spec();
  spec.kind = "a/b";
  EXPECT_EQ(
      problems(spec),
      (Lines{
          R"(kind: vendor "a" is a single character, which crashes released CDI libraries (up to v1.1.0); )"
          "use at least two characters",
          R"(kind: class "b" is a single character, which crashes released CDI libraries (up to v1.1.0); )"
          "use at least two characters"}));
  spec.kind = "ab/cd";
  EXPECT_EQ(problems(spec), Lines{});
}

TEST(CdiValidateTest, DeviceNames) {
  Spec spec = valid_spec();
  spec.devices[0].name = "-dev";
  EXPECT_EQ(problems(spec),
            Lines{R"(devices[0].name: device name "-dev" must start with a letter or digit)"});
  spec.devices[0].name = "";
  EXPECT_EQ(problems(spec), Lines{"devices[0].name: empty device name"});
  spec.devices[0].name = "gpu:0.1";
  EXPECT_EQ(problems(spec), Lines{});
}

TEST(CdiValidateTest, DuplicateDeviceNames) {
  Spec spec = valid_spec();
  spec.devices.push_back(Device{"dev1", {}, ContainerEdits{.env = {"B=1"}}});
  spec.devices.push_back(Device{"dev0", {}, ContainerEdits{.env = {"C=1"}}});
  EXPECT_EQ(problems(spec), Lines{R"(devices[2].name: duplicate device name "dev0" (also devices[0]))"});
  spec.devices[2].name = "dev2";
  EXPECT_EQ(problems(spec), Lines{});
}

TEST(CdiValidateTest, AtLeastOneDevice) {
  Spec spec = valid_spec();
  spec.devices.clear();
  EXPECT_EQ(problems(spec), Lines{"devices: no devices (a spec needs at least one)"});
}

TEST(CdiValidateTest, DeviceEditsMustNotBeEmpty) {
  Spec spec = valid_spec();
  edits(spec) = {};
  EXPECT_EQ(problems(spec),
            Lines{"devices[0].containerEdits: no container edits (a device needs at least one of env, "
                  "deviceNodes, mounts, hooks, intelRdt, additionalGids, netDevices)"});
  edits(spec).intel_rdt = IntelRdt{};  // present counts, as in the reference
  EXPECT_EQ(problems(spec), Lines{});
  edits(spec) = ContainerEdits{.additional_gids = {0}};
  EXPECT_EQ(problems(spec), Lines{});
  spec.container_edits = {};  // spec-level edits may be empty
  EXPECT_EQ(problems(spec), Lines{});
}

TEST(CdiValidateTest, EnvironmentVariables) {
  Spec spec = valid_spec();
  edits(spec).env = {"FOO", "=x", "B=", "A=b=c"};
  spec.container_edits.env = {""};
  EXPECT_EQ(
      problems(spec),
      (Lines{
          R"(devices[0].containerEdits.env[0]: invalid environment variable "FOO" (want KEY=VALUE with a non-empty KEY))",
          R"(devices[0].containerEdits.env[1]: invalid environment variable "=x" (want KEY=VALUE with a non-empty KEY))",
          R"(containerEdits.env[0]: invalid environment variable "" (want KEY=VALUE with a non-empty KEY))"}));
}

TEST(CdiValidateTest, DeviceNodePath) {
  Spec spec = valid_spec();
  edits(spec).device_nodes = {DeviceNode{.path = ""}, DeviceNode{.path = "dev/x"},
                              DeviceNode{.path = "/dev/x"}};
  EXPECT_EQ(
      problems(spec),
      (Lines{"devices[0].containerEdits.deviceNodes[0].path: empty device node path",
             R"(devices[0].containerEdits.deviceNodes[1].path: device node path "dev/x" is not absolute)"}));
}

TEST(CdiValidateTest, DeviceNodeType) {
  Spec spec = valid_spec();
  for (const char* type : {"", "b", "c", "p"}) {
    edits(spec).device_nodes = {DeviceNode{.path = "/dev/x", .type = type}};
    EXPECT_EQ(problems(spec), Lines{}) << type;
  }
  edits(spec).device_nodes = {DeviceNode{.path = "/dev/x", .type = "x"}};
  EXPECT_EQ(problems(spec),
            Lines{R"(devices[0].containerEdits.deviceNodes[0].type: invalid device node type "x" )"
                  R"((want "b", "c", "u", "p" or none))"});
}

TEST(CdiValidateTest, UnbufferedDeviceNeedsMajor) {
  Spec spec = valid_spec();
  edits(spec).device_nodes = {DeviceNode{.path = "/dev/x", .type = "u"}};
  EXPECT_EQ(problems(spec),
            Lines{R"(devices[0].containerEdits.deviceNodes[0].type: device node type "u" needs a major )"
                  R"((a host node never stats as "u"))"});
  edits(spec).device_nodes[0].major = 10;
  EXPECT_EQ(problems(spec), Lines{});
}

TEST(CdiValidateTest, DeviceNodePermissions) {
  Spec spec = valid_spec();
  for (const char* permissions : {"", "r", "rw", "rwm", "mwr", "rrw"}) {
    edits(spec).device_nodes = {DeviceNode{.path = "/dev/x", .permissions = permissions}};
    EXPECT_EQ(problems(spec), Lines{}) << permissions;
  }
  edits(spec).device_nodes = {DeviceNode{.path = "/dev/x", .permissions = "rwx"},
                              DeviceNode{.path = "/dev/y", .permissions = "none"}};
  EXPECT_EQ(
      problems(spec),
      (Lines{
          R"(devices[0].containerEdits.deviceNodes[0].permissions: invalid device node permissions "rwx" )"
          R"((want letters of "rwm"))",
          R"(devices[0].containerEdits.deviceNodes[1].permissions: device node permissions "none" are rejected )"
          R"(by released CDI libraries (up to v1.1.0); use letters of "rwm" or leave it empty)"}));
}

TEST(CdiValidateTest, Mounts) {
  Spec spec = valid_spec();
  edits(spec).mounts = {Mount{"", "", {}, ""}, Mount{"/a", "relative", {}, ""},
                        Mount{"tmpfs", "/b", {}, "tmpfs"}};
  EXPECT_EQ(problems(spec),
            (Lines{"devices[0].containerEdits.mounts[0].hostPath: empty mount hostPath",
                   "devices[0].containerEdits.mounts[0].containerPath: empty mount containerPath",
                   R"(devices[0].containerEdits.mounts[1].containerPath: mount containerPath "relative" )"
                   "is not absolute"}));
}

TEST(CdiValidateTest, HookNames) {
  Spec spec = valid_spec();
  for (const char* name :
       {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"}) {
    spec.container_edits.hooks = {Hook{name, "/bin/hook", {}, {}, std::nullopt}};
    EXPECT_EQ(problems(spec), Lines{}) << name;
  }
  spec.container_edits.hooks = {Hook{"preStart", "/bin/hook", {}, {}, std::nullopt}};
  EXPECT_EQ(problems(spec),
            Lines{R"(containerEdits.hooks[0].hookName: invalid hook name "preStart" (want one of )"
                  "prestart, createRuntime, createContainer, startContainer, poststart, poststop)"});
}

TEST(CdiValidateTest, HookPathEnvAndTimeout) {
  Spec spec = valid_spec();
  spec.container_edits.hooks = {Hook{"poststop", "", {}, {"OK=1", "BAD"}, 0},
                                Hook{"poststop", "bin/hook", {}, {}, -1},
                                Hook{"poststop", "/bin/hook", {"hook"}, {"E="}, 1}};
  EXPECT_EQ(
      problems(spec),
      (Lines{
          "containerEdits.hooks[0].path: empty hook path",
          R"(containerEdits.hooks[0].env[1]: invalid environment variable "BAD" (want KEY=VALUE with a non-empty KEY))",
          "containerEdits.hooks[0].timeout: hook timeout must be greater than 0, not 0",
          R"(containerEdits.hooks[1].path: hook path "bin/hook" is not absolute)",
          "containerEdits.hooks[1].timeout: hook timeout must be greater than 0, not -1"}));
}

TEST(CdiValidateTest, AnnotationKeys) {
  Spec spec = valid_spec();
  spec.annotations = {
      {"simple", "x"}, {"vendor.com/key_1.a-b", "x"}, {"Vendor.COM/Name", "x"}, {std::string(63, 'k'), "x"}};
  EXPECT_EQ(problems(spec), Lines{});
  spec.annotations = {{"a/b/c", ""},
                      {"/x", ""},
                      {"x/", ""},
                      {"", ""},
                      {"-x", ""},
                      {"x_", ""},
                      {"bad_prefix.com/x", ""},
                      {"-a.com/x", ""},
                      {std::string(64, 'k'), ""},
                      {std::string(254, 'p') + "/x", ""},
                      {"has space", ""}};
  spec.devices[0].annotations = {{"ok", "1"}, {"a..b/c", "2"}};
  const std::string name_rule =
      R"(must start and end with a letter or digit and contain only letters, digits, "-", "_" and ".")";
  const std::string dns_rule =
      R"(is not a DNS subdomain (letters, digits, "-" and "."; each label starts and ends with a letter or digit))";
  EXPECT_EQ(
      problems(spec),
      (Lines{R"(annotations: invalid annotation key "": empty name)",
             R"(annotations: invalid annotation key "-a.com/x": prefix "-a.com" )" + dns_rule,
             R"(annotations: invalid annotation key "-x": name "-x" )" + name_rule,
             R"(annotations: invalid annotation key "/x": empty prefix before "/")",
             R"(annotations: invalid annotation key "a/b/c": more than one "/")",
             R"(annotations: invalid annotation key "bad_prefix.com/x": prefix "bad_prefix.com" )" + dns_rule,
             R"(annotations: invalid annotation key "has space": name "has space" )" + name_rule,
             "annotations: invalid annotation key \"" + std::string(64, 'k') +
                 "\": name longer than 63 characters",
             "annotations: invalid annotation key \"" + std::string(254, 'p') +
                 "/x\": prefix longer than 253 characters",
             R"(annotations: invalid annotation key "x/": empty name)",
             R"(annotations: invalid annotation key "x_": name "x_" )" + name_rule,
             R"(devices[0].annotations: invalid annotation key "a..b/c": prefix "a..b" )" + dns_rule}));
}

TEST(CdiValidateTest, AnnotationsTotalSize) {
  Spec spec = valid_spec();
  spec.annotations = {{"a", std::string(256 * 1024 - 1, 'x')}};  // key + value = 256 KiB exactly
  EXPECT_EQ(problems(spec), Lines{});
  spec.annotations["b"] = "";
  EXPECT_EQ(problems(spec), Lines{"annotations: annotations take 262145 bytes, more than 262144 (256 KiB)"});
}

TEST(CdiValidateTest, IntelRdtClosId) {
  Spec spec = valid_spec();
  for (const char* id : {"", "/", "group1", "a.b"}) {
    edits(spec).intel_rdt = IntelRdt{.clos_id = id};
    EXPECT_EQ(problems(spec), Lines{}) << id;
  }
  const auto problem_of = [&](std::string id) {
    edits(spec).intel_rdt = IntelRdt{.clos_id = std::move(id)};
    return problems(spec);
  };
  EXPECT_EQ(problem_of("."),
            Lines{R"(devices[0].containerEdits.intelRdt.closID: closID "." is not a group name)"});
  EXPECT_EQ(problem_of(".."),
            Lines{R"(devices[0].containerEdits.intelRdt.closID: closID ".." is not a group name)"});
  EXPECT_EQ(problem_of("a/b"),
            Lines{R"(devices[0].containerEdits.intelRdt.closID: closID "a/b" contains "/")"});
  EXPECT_EQ(problem_of("a\nb"),
            Lines{R"(devices[0].containerEdits.intelRdt.closID: closID "a\nb" contains a newline)"});
  EXPECT_EQ(problem_of(std::string(4095, 'c')), Lines{});
  EXPECT_EQ(
      problem_of(std::string(4096, 'c')),
      Lines{"devices[0].containerEdits.intelRdt.closID: closID is 4096 characters long; the limit is 4095"});
}

TEST(CdiValidateTest, RemovedRdtFieldsWithVersion110) {
  Spec spec = valid_spec("1.0.0");
  edits(spec).intel_rdt = IntelRdt{.enable_cmt = true, .enable_mbm = true};
  EXPECT_EQ(problems(spec), Lines{});
  spec.cdi_version = "1.1.0";
  EXPECT_EQ(problems(spec), (Lines{"devices[0].containerEdits.intelRdt.enableCMT: enableCMT does not exist "
                                   "in cdiVersion 1.1.0 and later "
                                   "(removed; CDI libraries from v1.1.0 reject it)",
                                   "devices[0].containerEdits.intelRdt.enableMBM: enableMBM does not exist "
                                   "in cdiVersion 1.1.0 and later "
                                   "(removed; CDI libraries from v1.1.0 reject it)"}));
}

TEST(CdiValidateTest, NetDevices) {
  Spec spec = valid_spec();
  edits(spec).net_devices = {NetDevice{"eth0", "net0"}, NetDevice{"eth1", "net1"}};
  EXPECT_EQ(problems(spec), Lines{});
  edits(spec).net_devices = {NetDevice{"", ""}, NetDevice{"eth0", "net0"}, NetDevice{"eth0", "net0"}};
  spec.container_edits.net_devices = {NetDevice{"eth0", "net0"}};  // another edits block: no conflict
  EXPECT_EQ(
      problems(spec),
      (Lines{
          "devices[0].containerEdits.netDevices[0].hostInterfaceName: empty hostInterfaceName",
          "devices[0].containerEdits.netDevices[0].name: empty net device name",
          R"(devices[0].containerEdits.netDevices[2].hostInterfaceName: duplicate hostInterfaceName "eth0" )"
          "(also devices[0].containerEdits.netDevices[1])",
          R"(devices[0].containerEdits.netDevices[2].name: duplicate net device name "net0" )"
          "(also devices[0].containerEdits.netDevices[1])"}));
}

TEST(CdiValidateTest, ReportsEveryProblemInFileOrder) {
  const auto spec = parse_spec(R"(---
cdiVersion: "0.3.0"
kind: "a/gpu"
devices:
  - name: "0"
    containerEdits: {}
  - name: "0"
    containerEdits:
      env: ["NOEQUALS"]
containerEdits:
  hooks:
    - hookName: "preStart"
      path: "hook"
)",
                               Format::yaml);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(
      problems(*spec),
      (Lines{
          R"(cdiVersion: cdiVersion "0.3.0" is lower than 0.5.0, which this spec needs for devices[0].name )"
          "(starts with a digit)",
          R"(kind: vendor "a" is a single character, which crashes released CDI libraries (up to v1.1.0); )"
          "use at least two characters",
          "devices[0].containerEdits: no container edits (a device needs at least one of env, deviceNodes, "
          "mounts, hooks, intelRdt, additionalGids, netDevices)",
          R"(devices[1].name: duplicate device name "0" (also devices[0]))",
          R"(devices[1].containerEdits.env[0]: invalid environment variable "NOEQUALS" (want KEY=VALUE with a )"
          "non-empty KEY)",
          R"(containerEdits.hooks[0].hookName: invalid hook name "preStart" (want one of prestart, )"
          "createRuntime, createContainer, startContainer, poststart, poststop)",
          R"(containerEdits.hooks[0].path: hook path "hook" is not absolute)"}));
}

}  // namespace
}  // namespace gpuctk::cdi
