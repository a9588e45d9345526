#include "cdi/registry.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "cdi/doc_tree.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk::cdi {
namespace {

using Lines = std::vector<std::string>;

// A valid spec of kind vendor.com/device defining `names`, each with env "FROM=<tag>".
std::string spec_yaml(std::initializer_list<std::string_view> names, std::string_view tag) {
  std::string text = "---\ncdiVersion: \"0.5.0\"\nkind: \"vendor.com/device\"\ndevices:\n";
  for (const auto name : names) {
    text += "  - name: \"" + std::string(name) +
            "\"\n    containerEdits:\n      env: [\"FROM=" + std::string(tag) + "\"]\n";
  }
  return text;
}

// "name<TAB>file" for each resolvable device, paths relative to `root`.
Lines resolved(const Registry& registry, const std::string& root) {
  Lines lines;
  for (const auto& [name, device] : registry.devices) {
    EXPECT_EQ(device.name.str(), name);
    lines.push_back(name + "\t" + device.spec_file.substr(root.size() + 1) + "\t" +
                    device.device().container_edits.env.at(0));
  }
  return lines;
}

class CdiRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(m_dir.path().empty()); }
  [[nodiscard]] std::string dir(std::string_view name) const {
    return m_dir.path() + "/" + std::string(name);
  }
  [[nodiscard]] const std::string& root() const { return m_dir.path(); }

  test::TempDir m_dir;
};

TEST_F(CdiRegistryTest, LoadsValidSpecFile) {
  const std::string file = m_dir.write("a.yaml", spec_yaml({"dev0"}, "a"));
  const LoadedSpec loaded = load_spec_file(file);
  EXPECT_EQ(loaded.errors, Lines{});
  ASSERT_NE(loaded.spec, nullptr);
  EXPECT_EQ(loaded.spec->devices.at(0).name, "dev0");
}

TEST_F(CdiRegistryTest, LoadSpecFileReportsReadParseAndValidationErrorsWithoutTheFileName) {
  EXPECT_EQ(load_spec_file(dir("missing.yaml")).errors, Lines{"No such file or directory"});
  EXPECT_EQ(load_spec_file(m_dir.write("x.yml", "")).errors,
            Lines{R"(unsupported file extension ".yml" (CDI reads only .json and .yaml files))"});
  EXPECT_EQ(load_spec_file(m_dir.write("empty.json", "")).errors, Lines{"no spec data"});
  const LoadedSpec invalid =
      load_spec_file(m_dir.write("bad.yaml", "cdiVersion: \"0.3.0\"\nkind: \"vendor.com\"\n"));
  EXPECT_EQ(invalid.spec, nullptr);
  EXPECT_EQ(invalid.errors, (Lines{R"(kind: kind "vendor.com" has no "/" (want vendor/class))",
                                   "devices: no devices (a spec needs at least one)"}));
}

TEST_F(CdiRegistryTest, ResolvesDevicesSortedWithTheirSpec) {
  m_dir.write(
      "etc/b.json",
      R"({"cdiVersion": "0.5.0", "kind": "vendor.com/device", "devices": [{"name": "1", "containerEdits": {"env": ["FROM=b"]}}]})");
  m_dir.write("etc/a.yaml", spec_yaml({"dev0", "0"}, "a"));
  const Registry registry = scan_spec_dirs(std::vector<std::string>{dir("etc")});
  EXPECT_EQ(registry.errors, Lines{});
  EXPECT_EQ(resolved(registry, root()),
            (Lines{"vendor.com/device=0\tetc/a.yaml\tFROM=a", "vendor.com/device=1\tetc/b.json\tFROM=b",
                   "vendor.com/device=dev0\tetc/a.yaml\tFROM=a"}));
  const ResolvedDevice& device = registry.devices.at("vendor.com/device=0");
  EXPECT_EQ(device.name, (QualifiedName{"vendor.com", "device", "0"}));
  EXPECT_EQ(device.device_index, 1u);
  EXPECT_EQ(device.spec->kind, "vendor.com/device");
}

TEST_F(CdiRegistryTest, LaterDirectoryOverridesEarlierOneSilently) {
  m_dir.write("etc/cdi/vendor.yaml", spec_yaml({"dev1", "dev2"}, "etc"));
  m_dir.write("var/run/cdi/vendor.yaml", spec_yaml({"dev1"}, "run"));
  const Registry registry = scan_spec_dirs(std::vector<std::string>{dir("etc/cdi"), dir("var/run/cdi/")});
  EXPECT_EQ(registry.errors, Lines{});
  EXPECT_EQ(resolved(registry, root()), (Lines{"vendor.com/device=dev1\tvar/run/cdi/vendor.yaml\tFROM=run",
                                               "vendor.com/device=dev2\tetc/cdi/vendor.yaml\tFROM=etc"}));
}

TEST_F(CdiRegistryTest, SameDirectoryConflictRemovesTheDeviceAndNamesBothFiles) {
  m_dir.write("etc/a.yaml", spec_yaml({"dev0", "dev1"}, "a"));
  m_dir.write(
      "etc/b.json",
      R"({"cdiVersion": "0.5.0", "kind": "vendor.com/device", "devices": [{"name": "dev0", "containerEdits": {"env": ["FROM=b"]}}, {"name": "dev2", "containerEdits": {"env": ["FROM=b"]}}]})");
  const Registry registry = scan_spec_dirs(std::vector<std::string>{dir("etc")});
  EXPECT_EQ(registry.errors, Lines{R"(conflicting device "vendor.com/device=dev0" (specs ")" +
                                   dir("etc/a.yaml") + R"(", ")" + dir("etc/b.json") + R"("))"});
  EXPECT_EQ(resolved(registry, root()), (Lines{"vendor.com/device=dev1\tetc/a.yaml\tFROM=a",
                                               "vendor.com/device=dev2\tetc/b.json\tFROM=b"}));
}

TEST_F(CdiRegistryTest, ConflictInHigherDirectoryHidesLowerDefinitionToo) {
  m_dir.write("low/x.yaml", spec_yaml({"dev0"}, "low"));
  m_dir.write("high/a.yaml", spec_yaml({"dev0"}, "a"));
  m_dir.write("high/b.yaml", spec_yaml({"dev0"}, "b"));
  const Registry registry = scan_spec_dirs(std::vector<std::string>{dir("low"), dir("high")});
  EXPECT_EQ(registry.errors.size(), 1u);
  EXPECT_EQ(resolved(registry, root()), Lines{});
}

TEST_F(CdiRegistryTest, ConflictInLowerDirectoryDoesNotHideHigherDefinition) {
  m_dir.write("low/a.yaml", spec_yaml({"dev0"}, "a"));
  m_dir.write("low/b.yaml", spec_yaml({"dev0"}, "b"));
  m_dir.write("high/x.yaml", spec_yaml({"dev0"}, "high"));
  const Registry registry = scan_spec_dirs(std::vector<std::string>{dir("low"), dir("high")});
  EXPECT_EQ(registry.errors.size(), 1u);
  EXPECT_EQ(resolved(registry, root()), Lines{"vendor.com/device=dev0\thigh/x.yaml\tFROM=high"});
}

TEST_F(CdiRegistryTest, InvalidFilesAreReportedAndSkipped) {
  m_dir.write("etc/a.yaml", spec_yaml({"dev0"}, "a"));
  m_dir.write("etc/b.yaml",
              "cdiVersion: \"0.3.0\"\nkind: \"vendor.com/device\"\ndevices:\n  - name: \"-bad\"\n"
              "    containerEdits: {env: [\"X\"]}\n");
  m_dir.write("etc/c.json", "{");
  m_dir.write("etc/d.yaml", "");
  const Registry registry = scan_spec_dirs(std::vector<std::string>{dir("etc")});
  EXPECT_EQ(
      registry.errors,
      (Lines{dir("etc/b.yaml") + R"(: devices[0].name: device name "-bad" must start with a letter or digit)",
             dir("etc/b.yaml") + R"(: devices[0].containerEdits.env[0]: invalid environment variable "X" )"
                                 "(want KEY=VALUE with a non-empty KEY)",
             dir("etc/c.json") +
                 ": JSON syntax error at line 1, column 2: syntax error while parsing object key - "
                 "unexpected end of input; expected string literal",
             dir("etc/d.yaml") + ": no spec data"}));
  EXPECT_EQ(resolved(registry, root()), Lines{"vendor.com/device=dev0\tetc/a.yaml\tFROM=a"});
}

TEST_F(CdiRegistryTest, IgnoresYmlOtherFilesAndSubdirectories) {
  m_dir.write("etc/a.yml", spec_yaml({"yml"}, "yml"));
  m_dir.write("etc/README", "not a spec");
  m_dir.write("etc/schema/schema.json", "{}");
  m_dir.write("etc/sub.yaml/inner.yaml", spec_yaml({"inner"}, "inner"));  // a directory named *.yaml
  m_dir.write("elsewhere/real.yaml", spec_yaml({"linked"}, "link"));
  ASSERT_EQ(::symlink(dir("elsewhere/real.yaml").c_str(), dir("etc/link.yaml").c_str()), 0);
  const Registry registry = scan_spec_dirs(std::vector<std::string>{dir("etc")});
  EXPECT_EQ(registry.errors, Lines{});
  EXPECT_EQ(resolved(registry, root()), Lines{"vendor.com/device=linked\tetc/link.yaml\tFROM=link"});
}

TEST_F(CdiRegistryTest, MissingDirectoryIsFine) {
  m_dir.write("var/x.yaml", spec_yaml({"dev0"}, "var"));
  const Registry registry = scan_spec_dirs(std::vector<std::string>{dir("does-not-exist"), dir("var")});
  EXPECT_EQ(registry.errors, Lines{});
  EXPECT_EQ(resolved(registry, root()), Lines{"vendor.com/device=dev0\tvar/x.yaml\tFROM=var"});
}

TEST_F(CdiRegistryTest, NonDirectoryIsAnError) {
  const std::string file = m_dir.write("file", "");
  const Registry registry = scan_spec_dirs(std::vector<std::string>{file});
  EXPECT_EQ(registry.errors, Lines{file + ": Not a directory"});
}

TEST_F(CdiRegistryTest, LoadSpecFileGivesTheErrnoTextOfAReadFailure) {
  const std::string directory = dir("dir.yaml");  // opens fine, even for root, but cannot be read
  ASSERT_EQ(::mkdir(directory.c_str(), 0755), 0);
  EXPECT_EQ(load_spec_file(directory).errors, Lines{"Is a directory"});
}

TEST_F(CdiRegistryTest, AFileLargerThanASpecMayBeIsNotReadWhole) {
  const std::string file = m_dir.write("huge.yaml", "");
  ASSERT_EQ(::truncate(file.c_str(), static_cast<off_t>(k_max_spec_bytes) + 1), 0);  // sparse
  EXPECT_EQ(load_spec_file(file).errors,
            Lines{"spec too large: 67108865 bytes, more than the 64 MiB a spec may have"});
}

TEST_F(CdiRegistryTest, UnreadableFileIsReported) {
  const std::string file = m_dir.write("etc/a.yaml", spec_yaml({"dev0"}, "a"));
  ASSERT_EQ(::chmod(file.c_str(), 0), 0);
  const auto reported = [&] {
    const Registry registry = scan_spec_dirs(std::vector<std::string>{dir("etc")});
    return registry.errors == Lines{file + ": Permission denied"} && registry.devices.empty();
  };
  if (::geteuid() != 0) {
    EXPECT_TRUE(reported());
    return;
  }
  // Root reads files whatever their mode, so as root (as in CI) the scan runs in a child that has
  // dropped to nobody; the directories on the way must let nobody through.
  ASSERT_EQ(::chmod(root().c_str(), 0755), 0);
  EXPECT_EXIT(
      {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
          std::_Exit(2);
        }
        std::_Exit(reported() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace gpuctk::cdi
