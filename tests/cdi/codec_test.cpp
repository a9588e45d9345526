#include "cdi/codec.hpp"

#include <gtest/gtest.h>

#include "cdi/cdi_test_support.hpp"
#include "util/file.hpp"

namespace gpuctk::cdi {
namespace {

// The error of parsing `text`, or "ok".
std::string parse_error(std::string_view text, Format format = Format::yaml) {
  const auto spec = parse_spec(text, format);
  return spec ? "ok" : spec.error().message;
}

// Every field of the model set, including the 0.7.0-only enableCMT/enableMBM (a round trip does not
// need a valid spec).
Spec full_spec() {
  Device gpu;
  gpu.name = "0";
  gpu.annotations = {{"vendor.com/model", "A100"}, {"slot", "3"}};
  ContainerEdits& edits = gpu.container_edits;
  edits.env = {"A=1", "B=", "C=x=y"};
  edits.device_nodes = {
      DeviceNode{"/dev/nvidia0", "/host/dev/nvidia0", "c", 195, 0, 438, "rw", 0, 44},
      DeviceNode{.path = "/dev/fifo", .type = "p", .major = -1, .minor = 9223372036854775807LL},
      DeviceNode{.path = "/dev/plain"},
  };
  edits.mounts = {
      Mount{"/usr/lib/libcuda.so.1", "/usr/lib/libcuda.so.1", {"ro", "nosuid", "nodev", "bind"}, "none"},
      Mount{"tmpfs", "/scratch", {}, "tmpfs"}};
  edits.hooks = {
      Hook{"createContainer", "/usr/bin/gpuctk", {"gpuctk", "hook", "update-ldcache"}, {"LANG=C"}, 30},
      Hook{"poststop", "/bin/cleanup", {}, {}, std::nullopt}};
  edits.intel_rdt = IntelRdt{"clos1", "L3:0=ff", "MB:0=50", std::vector<std::string>{"L3:0=f", "MB:0=20"},
                             true,    true,      true};
  edits.additional_gids = {44, 0, 4294967295U};
  edits.net_devices = {NetDevice{"eth0", "net0"}, NetDevice{"eth1", "net1"}};

  Spec spec;
  spec.cdi_version = "1.1.0";
  spec.kind = "vendor.com/dotted.class";
  spec.annotations = {{"vendor.com/generator", "gpuctk"}, {"z", ""}};
  spec.devices = {gpu, Device{"gpu1", {}, ContainerEdits{.env = {"X=1"}}}};
  spec.container_edits.env = {"NVIDIA_VISIBLE_DEVICES=void"};
  spec.container_edits.intel_rdt = IntelRdt{.schemata = std::vector<std::string>{}};
  spec.container_edits.device_nodes = {DeviceNode{.path = "/dev/nvidiactl", .uid = 0, .gid = 0}};
  return spec;
}

// Strings that YAML readers could misread if they were not quoted and escaped.
Spec tricky_strings_spec() {
  Spec spec;
  spec.cdi_version = "0.6.0";
  spec.kind = "vendor.com/device";
  spec.annotations = {{"on", "yes"},
                      {"0", "~"},
                      {"a: b", "# not a comment"},
                      {"nl", "line1\nline2\r\n"},
                      {"quote", R"(say "hi" \ bye)"},
                      {"utf8", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80"},
                      {"ctl", std::string("\x01\x1f\x7f\xc2\x85\xe2\x80\xa8\xef\xbb\xbf", 11)},
                      {"nul", std::string("a\0b", 3)},
                      {"spaces", "  lead and trail  "},
                      {"", "empty key"},
                      {"null", ""},
                      {"[x]", "{y}"}};
  spec.devices = {Device{"007", {}, ContainerEdits{.env = {"X=0.5", "Y=on", "Z=- item"}}}};
  return spec;
}

TEST(CdiCodecTest, FullSpecRoundTripsThroughYamlAndJson) {
  const Spec spec = full_spec();
  for (const Format format : {Format::yaml, Format::json}) {
    const std::string text = write_spec(spec, format);
    const auto parsed = parse_spec(text, format);
    ASSERT_TRUE(parsed) << parsed.error().message << "\n" << text;
    EXPECT_EQ(*parsed, spec) << text;
    EXPECT_EQ(write_spec(*parsed, format), text);  // deterministic: same spec, same bytes
  }
}

TEST(CdiCodecTest, TrickyStringsRoundTrip) {
  const Spec spec = tricky_strings_spec();
  for (const Format format : {Format::yaml, Format::json}) {
    const std::string text = write_spec(spec, format);
    const auto parsed = parse_spec(text, format);
    ASSERT_TRUE(parsed) << parsed.error().message << "\n" << text;
    EXPECT_EQ(*parsed, spec) << text;
  }
}

// YAML limits an implicit mapping key to 1024 characters and gpuctk writes keys that way, so a key longer
// than that as written (quoted and escaped) is refused on reading, from either format: it could not be
// written back readably (found by the cdi_yaml fuzz target: yaml-cpp said "illegal map value").
TEST(CdiCodecTest, MapKeysLongerThanYamlAllowsAreRefused) {
  const auto spec_with_key = [](const std::string& key) {
    return R"({"cdiVersion": "0.6.0", "kind": "x.com/gpu", "annotations": {")" + key +
           R"(": "v"}, "devices": [{"name": "0", "containerEdits": {"env": ["A=1"]}}]})";
  };
  EXPECT_TRUE(parse_spec(spec_with_key(std::string(1022, 'a')), Format::json));
  const auto long_key = parse_spec(spec_with_key(std::string(1023, 'a')), Format::json);
  ASSERT_FALSE(long_key);
  EXPECT_EQ(long_key.error().message, "key of 1025 characters as YAML in annotations: longer than 1024");
  // Escapes count as written: 300 control characters (JSON \u001f) are 1200 characters of YAML \x1f.
  std::string controls;
  for (int i = 0; i < 300; ++i) {
    controls += "\\u001f";
  }
  const auto escaped = parse_spec(spec_with_key(controls), Format::json);
  ASSERT_FALSE(escaped);
  EXPECT_EQ(escaped.error().message, "key of 1202 characters as YAML in annotations: longer than 1024");
}

// A small spec shaped like a generated one, to pin the exact output.
Spec small_spec() {
  Spec spec;
  spec.cdi_version = "0.5.0";
  spec.kind = "nvidia.com/gpu";
  spec.devices = {Device{
      "0",
      {},
      ContainerEdits{.device_nodes = {DeviceNode{
                         .path = "/dev/nvidia0", .type = "c", .major = 195, .minor = 0, .file_mode = 438}}}}};
  spec.container_edits.env = {"NVIDIA_VISIBLE_DEVICES=void"};
  spec.container_edits.mounts = {Mount{"/usr/lib/libcuda.so.1", "/usr/lib/libcuda.so.1", {"ro", "bind"}, ""}};
  spec.container_edits.hooks = {
      Hook{"createContainer", "/usr/bin/gpuctk", {"gpuctk", "hook"}, {}, std::nullopt}};
  spec.container_edits.additional_gids = {44};
  return spec;
}

TEST(CdiCodecTest, WritesYamlInFixedKeyOrderWithAllStringsQuoted) {
  EXPECT_EQ(write_spec(small_spec(), Format::yaml), R"(---
cdiVersion: "0.5.0"
kind: "nvidia.com/gpu"
devices:
  - name: "0"
    containerEdits:
      deviceNodes:
        - path: "/dev/nvidia0"
          type: "c"
          major: 195
          minor: 0
          fileMode: 438
containerEdits:
  env:
    - "NVIDIA_VISIBLE_DEVICES=void"
  mounts:
    - hostPath: "/usr/lib/libcuda.so.1"
      containerPath: "/usr/lib/libcuda.so.1"
      options:
        - "ro"
        - "bind"
  hooks:
    - hookName: "createContainer"
      path: "/usr/bin/gpuctk"
      args:
        - "gpuctk"
        - "hook"
  additionalGids:
    - 44
)");
}

TEST(CdiCodecTest, WritesJsonIndentedWithTrailingNewline) {
  EXPECT_EQ(write_spec(small_spec(), Format::json), R"({
  "cdiVersion": "0.5.0",
  "kind": "nvidia.com/gpu",
  "devices": [
    {
      "name": "0",
      "containerEdits": {
        "deviceNodes": [
          {
            "path": "/dev/nvidia0",
            "type": "c",
            "major": 195,
            "minor": 0,
            "fileMode": 438
          }
        ]
      }
    }
  ],
  "containerEdits": {
    "env": [
      "NVIDIA_VISIBLE_DEVICES=void"
    ],
    "mounts": [
      {
        "hostPath": "/usr/lib/libcuda.so.1",
        "containerPath": "/usr/lib/libcuda.so.1",
        "options": [
          "ro",
          "bind"
        ]
      }
    ],
    "hooks": [
      {
        "hookName": "createContainer",
        "path": "/usr/bin/gpuctk",
        "args": [
          "gpuctk",
          "hook"
        ]
      }
    ],
    "additionalGids": [
      44
    ]
  }
}
)");
}

TEST(CdiCodecTest, WritesKeysInReferenceOrder) {
  const std::string yaml = write_spec(full_spec(), Format::yaml);
  const auto order = [&](std::initializer_list<std::string_view> keys) {
    size_t last = 0;
    for (const auto key : keys) {
      const size_t at = yaml.find(std::string(key) + ":", last);
      if (at == std::string::npos) {
        return std::string(key) + " missing or out of order";
      }
      last = at;
    }
    return std::string("ok");
  };
  EXPECT_EQ(order({"cdiVersion",
                   "kind",
                   "annotations",
                   "devices",
                   "name",
                   "annotations",
                   "containerEdits",
                   "env",
                   "deviceNodes",
                   "path",
                   "hostPath",
                   "type",
                   "major",
                   "minor",
                   "fileMode",
                   "permissions",
                   "uid",
                   "gid",
                   "mounts",
                   "hostPath",
                   "containerPath",
                   "options",
                   "type",
                   "hooks",
                   "hookName",
                   "path",
                   "args",
                   "env",
                   "timeout",
                   "intelRdt",
                   "closID",
                   "l3CacheSchema",
                   "memBwSchema",
                   "schemata",
                   "enableMonitoring",
                   "enableCMT",
                   "enableMBM",
                   "additionalGids",
                   "netDevices",
                   "hostInterfaceName",
                   "name"}),
            "ok");
  EXPECT_EQ(yaml.rfind("\ncontainerEdits:"), yaml.rfind("containerEdits:") - 1);  // spec edits come last
}

TEST(CdiCodecTest, NeverWritesEmptyOptionalKeys) {
  Spec spec;
  spec.cdi_version = "0.3.0";
  spec.kind = "vendor.com/device";
  spec.devices = {Device{"dev",
                         {},
                         ContainerEdits{.device_nodes = {DeviceNode{.path = "/dev/x"}},
                                        .mounts = {Mount{"/a", "/b", {}, ""}},
                                        .hooks = {Hook{"poststop", "/bin/x", {}, {}, std::nullopt}}}}};
  EXPECT_EQ(write_spec(spec, Format::yaml), R"(---
cdiVersion: "0.3.0"
kind: "vendor.com/device"
devices:
  - name: "dev"
    containerEdits:
      deviceNodes:
        - path: "/dev/x"
      mounts:
        - hostPath: "/a"
          containerPath: "/b"
      hooks:
        - hookName: "poststop"
          path: "/bin/x"
)");
}

TEST(CdiCodecTest, WritesPresentButEmptyOptionals) {
  Spec spec;
  spec.cdi_version = "1.1.0";
  spec.kind = "vendor.com/device";
  spec.devices = {
      Device{"dev", {}, ContainerEdits{.intel_rdt = IntelRdt{.schemata = std::vector<std::string>{}}}},
      Device{"empty", {}, {}}};
  spec.container_edits.intel_rdt = IntelRdt{};
  EXPECT_EQ(write_spec(spec, Format::yaml), R"(---
cdiVersion: "1.1.0"
kind: "vendor.com/device"
devices:
  - name: "dev"
    containerEdits:
      intelRdt:
        schemata: []
  - name: "empty"
    containerEdits: {}
containerEdits:
  intelRdt: {}
)");
  const auto parsed = parse_spec(write_spec(spec, Format::json), Format::json);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, spec);
}

TEST(CdiCodecTest, WritesRequiredKeysOfAnEmptySpec) {
  EXPECT_EQ(write_spec(Spec{}, Format::yaml), "---\ndevices: []\n");
  EXPECT_EQ(write_spec(Spec{}, Format::json), "{\n  \"devices\": []\n}\n");
}

TEST(CdiCodecTest, ReadsAHandWrittenYamlSpec) {
  const auto spec = parse_spec(R"(# written by hand
cdiVersion: 0.5.0
kind: vendor.com/device
devices:
- name: 0
  containerEdits:
    env: [A=1]
    deviceNodes:
    - {path: /dev/x, type: c, major: 0x10, minor: 3, fileMode: 0640, uid: 1000}
    hooks:
    - hookName: poststop
      path: /bin/x
      timeout: 5
    intelRdt:
      enableCMT: yes
)",
                               Format::yaml);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->cdi_version, "0.5.0");
  EXPECT_EQ(spec->devices.at(0).name, "0");
  const DeviceNode& node = spec->devices[0].container_edits.device_nodes.at(0);
  EXPECT_EQ(
      node,
      (DeviceNode{.path = "/dev/x", .type = "c", .major = 16, .minor = 3, .file_mode = 416, .uid = 1000}));
  EXPECT_EQ(spec->devices[0].container_edits.hooks.at(0).timeout, 5);
  EXPECT_TRUE(spec->devices[0].container_edits.intel_rdt->enable_cmt);
}

TEST(CdiCodecTest, NullValuesAreAbsent) {
  const auto spec = parse_spec(R"({"cdiVersion": "0.3.0", "kind": "a.com/bb", "annotations": null,
    "devices": [{"name": "d", "containerEdits": {"env": ["A=1"], "intelRdt": null}}], "containerEdits": null})",
                               Format::json);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_TRUE(spec->annotations.empty());
  EXPECT_FALSE(spec->devices.at(0).container_edits.intel_rdt.has_value());
  const auto yaml = parse_spec("cdiVersion: \"0.3.0\"\nannotations:\ncontainerEdits: ~\n", Format::yaml);
  ASSERT_TRUE(yaml) << yaml.error().message;
  EXPECT_EQ(*yaml, (Spec{.cdi_version = "0.3.0"}));
}

TEST(CdiCodecTest, EmptyInputHasNoSpecData) {
  for (const char* text : {"", "  \n", "# only a comment\n", "---\n", "null\n", "~\n"}) {
    EXPECT_EQ(parse_error(text, Format::yaml), "no spec data") << text;
  }
  for (const char* text : {"", " \n\t", "null"}) {
    EXPECT_EQ(parse_error(text, Format::json), "no spec data") << text;
  }
}

TEST(CdiCodecTest, RejectsUnknownFieldsNamingKeyAndPlace) {
  EXPECT_EQ(parse_error(R"(devices:
  - name: "d"
    containerEdits:
      deviceNodes:
        - path: "/dev/a"
        - path: "/dev/b"
          hostpath: "/dev/b"
)"),
            R"(unknown field "hostpath" in devices[0].containerEdits.deviceNodes[1])");
  EXPECT_EQ(parse_error(R"({"cdiVersion": "0.3.0", "containerRuntime": "x"})", Format::json),
            R"(unknown field "containerRuntime" at top level)");
  EXPECT_EQ(
      parse_error(R"({"containerEdits": {"mounts": [{"hostPath": "/a", "readonly": true}]}})", Format::json),
      R"(unknown field "readonly" in containerEdits.mounts[0])");
  // Keys match exactly: the reference's case-insensitive matching is deliberately not copied.
  EXPECT_EQ(parse_error("CDIVERSION: \"0.3.0\"\n"), R"(unknown field "CDIVERSION" at top level)");
  EXPECT_EQ(parse_error(R"({"devices": [{"Name": "d"}]})", Format::json),
            R"(unknown field "Name" in devices[0])");
  // SPEC.md's sample misspells schemata.
  EXPECT_EQ(parse_error("containerEdits:\n  intelRdt:\n    schema: []\n"),
            R"(unknown field "schema" in containerEdits.intelRdt)");
}

TEST(CdiCodecTest, RejectsDuplicateKeys) {
  EXPECT_EQ(parse_error("kind: \"a.com/bb\"\nkind: \"a.com/cc\"\n"),
            R"(duplicate field "kind" at top level)");
  EXPECT_EQ(parse_error(R"({"kind": "a.com/bb", "kind": "a.com/cc"})", Format::json),
            R"(duplicate field "kind" at top level)");
  EXPECT_EQ(
      parse_error(R"({"devices": [{"name": "a", "containerEdits": {"env": [], "env": []}}]})", Format::json),
      R"(duplicate field "env" in devices[0].containerEdits)");
  EXPECT_EQ(parse_error("annotations:\n  a: \"1\"\n  a: \"2\"\n"), R"(duplicate key "a" in annotations)");
  EXPECT_EQ(parse_error(R"({"devices": [{"annotations": {"x": "1", "x": "1"}}]})", Format::json),
            R"(duplicate key "x" in devices[0].annotations)");
}

TEST(CdiCodecTest, RejectsWrongTypes) {
  EXPECT_EQ(parse_error("- a\n- b\n"), "top level: expected an object, got a list");
  EXPECT_EQ(parse_error(R"("just a string")", Format::json),
            R"(top level: expected an object, got "just a string")");
  EXPECT_EQ(parse_error("devices:\n  - name: [a]\n"), "devices[0].name: expected a string, got a list");
  EXPECT_EQ(parse_error(R"({"devices": {"name": "a"}})", Format::json),
            "devices: expected a list, got an object");
  EXPECT_EQ(parse_error(R"({"kind": 5})", Format::json), "kind: expected a string, got 5");
  EXPECT_EQ(parse_error(R"({"kind": true})", Format::json), "kind: expected a string, got true");
  EXPECT_EQ(parse_error(R"({"containerEdits": {"env": ["A=1", 2]}})", Format::json),
            "containerEdits.env[1]: expected a string, got 2");
  EXPECT_EQ(parse_error(R"({"containerEdits": {"deviceNodes": [{"major": "195"}]}})", Format::json),
            R"(containerEdits.deviceNodes[0].major: expected an integer, got "195")");
  EXPECT_EQ(parse_error(R"({"containerEdits": {"deviceNodes": [{"major": 1.5}]}})", Format::json),
            "containerEdits.deviceNodes[0].major: expected an integer, got 1.5");
  EXPECT_EQ(parse_error("containerEdits:\n  deviceNodes:\n    - fileMode: \"0640\"\n"),
            R"(containerEdits.deviceNodes[0].fileMode: expected an integer, got "0640")");
  EXPECT_EQ(parse_error("containerEdits:\n  deviceNodes:\n    - uid: 4294967296\n"),
            "containerEdits.deviceNodes[0].uid: 4294967296 is out of range (0 to 4294967295)");
  EXPECT_EQ(parse_error(R"({"containerEdits": {"additionalGids": [-1]}})", Format::json),
            "containerEdits.additionalGids[0]: -1 is out of range (0 to 4294967295)");
  EXPECT_EQ(parse_error("containerEdits:\n  hooks:\n    - timeout: 2147483648\n"),
            "containerEdits.hooks[0].timeout: 2147483648 is out of range (-2147483648 to 2147483647)");
  EXPECT_EQ(
      parse_error(R"({"containerEdits": {"deviceNodes": [{"major": 9223372036854775808}]}})", Format::json),
      "containerEdits.deviceNodes[0].major: 9223372036854775808 is out of range "
      "(-9223372036854775808 to 9223372036854775807)");
  EXPECT_EQ(parse_error("containerEdits:\n  intelRdt:\n    enableMonitoring: \"true\"\n"),
            R"(containerEdits.intelRdt.enableMonitoring: expected a boolean, got "true")");
  EXPECT_EQ(
      parse_error("annotations:\n  a: 1.5\n"),
      R"(annotations["a"]: unquoted 1.5 is a number to CDI runtimes (YAML 1.1), not a string; quote it)");
  EXPECT_EQ(parse_error("annotations:\n  ? [a]\n  : b\n"), R"(annotations: expected a string, got a list)");
  EXPECT_EQ(parse_error("? [a]\n: b\n"), "top level: expected a string key, got a list");
  const auto minimum =
      parse_spec(R"({"containerEdits": {"deviceNodes": [{"major": -9223372036854775808}]}})", Format::json);
  ASSERT_TRUE(minimum) << minimum.error().message;
  EXPECT_EQ(minimum->container_edits.device_nodes.at(0).major, std::numeric_limits<int64_t>::min());
}

TEST(CdiCodecTest, RejectsUnquotedYamlThatRuntimesReadDifferently) {
  EXPECT_EQ(parse_error("devices:\n  - name: on\n"),
            "devices[0].name: unquoted on is a boolean to CDI runtimes (YAML 1.1), not a string; quote it");
  EXPECT_EQ(parse_error("cdiVersion: 0.5\n"),
            "cdiVersion: unquoted 0.5 is a number to CDI runtimes (YAML 1.1), not a string; quote it");
  EXPECT_EQ(parse_error("devices:\n  - name: 007\n"),
            "devices[0].name: unquoted 007 is a number to CDI runtimes (YAML 1.1), not a string; quote it");
  EXPECT_EQ(parse_error("kind: 2024-01-02\n"),
            "kind: unquoted 2024-01-02 is a timestamp to CDI runtimes (YAML 1.1), not a string; quote it");
  // Quoted, or unambiguous, they are strings.
  EXPECT_EQ(parse_error("devices:\n  - name: \"on\"\n  - name: 'y'\n  - name: !!str off\n  - name: 12\n"),
            "ok");
}

TEST(CdiCodecTest, ReportsSyntaxErrorsWithLineAndColumn) {
  EXPECT_EQ(parse_error("kind: \"a.com/bb\"\ndevices: [\n"),
            "YAML syntax error at line 3, column 1: end of sequence flow not found");
  EXPECT_EQ(parse_error("{\"kind\": \"a\",}", Format::json),
            "JSON syntax error at line 1, column 14: syntax error while parsing object key - unexpected '}'; "
            "expected "
            "string literal");
  EXPECT_EQ(parse_error("kind: \"\xff\"\n"), "invalid UTF-8 at line 1, column 8");
}

TEST(CdiCodecTest, RejectsHostileNesting) {
  const std::string deep_json = std::string(100, '[') + std::string(100, ']');
  EXPECT_EQ(parse_error(deep_json, Format::json), "nesting deeper than 64 levels");
  const std::string deep_yaml = "annotations: " + std::string(100, '[') + std::string(100, ']') + "\n";
  EXPECT_EQ(parse_error(deep_yaml, Format::yaml), "nesting deeper than 64 levels");
  const std::string laughs = test::alias_bomb_yaml();
  EXPECT_EQ(
      parse_error(laughs, Format::yaml),
      "spec too large: more than 1000000 YAML nodes (keys, values and list items, aliases expanded; a DGX "
      "A100's spec has about 4000)");
}

TEST(CdiCodecTest, FormatFromFileExtension) {
  EXPECT_EQ(format_for_path("/etc/cdi/nvidia.yaml"), Format::yaml);
  EXPECT_EQ(format_for_path("nvidia.json"), Format::json);
  EXPECT_EQ(format_for_path("/etc/cdi.json/spec.yaml"), Format::yaml);
  const auto yml = format_for_path("/etc/cdi/nvidia.yml");
  ASSERT_FALSE(yml);
  EXPECT_EQ(yml.error().message,
            R"(unsupported file extension ".yml" (CDI reads only .json and .yaml files))");
  const auto none = format_for_path("/etc/cdi.d/spec");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, R"(unsupported file extension "" (CDI reads only .json and .yaml files))");
}

TEST(CdiCodecTest, DataFilesAreCanonical) {
  // The test data is written exactly as write_spec writes it, so parse + write reproduces the bytes.
  for (const auto& [name, format] :
       {std::pair{"valid-full.json", Format::json}, std::pair{"valid-minimal.yaml", Format::yaml}}) {
    const auto text = read_file(std::string(GPUCTK_SOURCE_DIR) + "/tests/data/cdi/" + name);
    ASSERT_TRUE(text) << text.error().message;
    const auto spec = parse_spec(*text, format);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(write_spec(*spec, format), *text) << name;
  }
}

}  // namespace
}  // namespace gpuctk::cdi
