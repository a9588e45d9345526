#include <gtest/gtest.h>

#include "cli/run_gpuctk.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk {
namespace {

std::string spec_yaml(std::initializer_list<std::string_view> names) {
  std::string text = "---\ncdiVersion: \"0.5.0\"\nkind: \"vendor.com/device\"\ndevices:\n";
  for (const auto name : names) {
    text += "  - name: \"" + std::string(name) + "\"\n    containerEdits:\n      env: [\"A=1\"]\n";
  }
  return text;
}

class CliCdiListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_dir.path().empty());
    m_etc = m_dir.path() + "/etc/cdi";
    m_run = m_dir.path() + "/var/run/cdi";
    m_dir.write("etc/cdi/vendor.yaml", spec_yaml({"gpu1", "gpu0", "shared"}));
    m_dir.write(
        "var/run/cdi/vendor.json",
        R"({"cdiVersion": "0.5.0", "kind": "vendor.com/device", "devices": [{"name": "gpu0", "containerEdits": {"env": ["B=1"]}}]})");
  }
  test::RunResult run(const std::vector<std::string>& args) {
    std::vector<std::string> all{"cdi", "list"};
    all.insert(all.end(), args.begin(), args.end());
    return test::run_gpuctk(all, m_dir.path());
  }
  test::TempDir m_dir;
  std::string m_etc;
  std::string m_run;
};

TEST_F(CliCdiListTest, PrintsResolvableNamesSorted) {
  const auto result = run({"--spec-dir", m_etc, "--spec-dir", m_run});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "vendor.com/device=gpu0\nvendor.com/device=gpu1\nvendor.com/device=shared\n");
  EXPECT_EQ(result.err, "");
}

TEST_F(CliCdiListTest, VerboseNamesTheSpecFileAndLaterDirectoryWins) {
  const auto result = run({"--spec-dir=" + m_etc, "--spec-dir", m_run, "--verbose"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "vendor.com/device=gpu0\t" + m_run + "/vendor.json\n" + "vendor.com/device=gpu1\t" +
                            m_etc + "/vendor.yaml\n" + "vendor.com/device=shared\t" + m_etc +
                            "/vendor.yaml\n");
}

TEST_F(CliCdiListTest, WarnsAboutInvalidFilesAndConflictsButSucceeds) {
  m_dir.write("etc/cdi/other.yaml", spec_yaml({"shared"}));
  m_dir.write("etc/cdi/broken.yaml", "cdiVersion: \"0.3.0\"\nkind: \"vendor.com/device\"\ndevices: []\n");
  m_dir.write("etc/cdi/ignored.yml", "not even parsed");
  const auto result = run({"--spec-dir", m_etc, "--spec-dir", m_dir.path() + "/missing", "-v"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "vendor.com/device=gpu0\t" + m_etc + "/vendor.yaml\n" + "vendor.com/device=gpu1\t" +
                            m_etc + "/vendor.yaml\n");
  EXPECT_EQ(result.err, "gpuctk: warning: " + m_etc +
                            "/broken.yaml: devices: no devices (a spec needs at least one)\n" +
                            R"(gpuctk: warning: conflicting device "vendor.com/device=shared" (specs ")" +
                            m_etc + R"(/other.yaml", ")" + m_etc + "/vendor.yaml\")\n");
}

// A warning names a file whose name anyone who may write the spec directory chose: a terminal escape in
// it reaches the terminal escaped, like every other warning of the CLI.
TEST_F(CliCdiListTest, AWarningEscapesTheFileName) {
  m_dir.write("etc/cdi/\x1b[2Jbroken.yaml",
              "cdiVersion: \"0.3.0\"\nkind: \"vendor.com/device\"\ndevices: []\n");
  const auto result = run({"--spec-dir", m_etc});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.err, "gpuctk: warning: " + m_etc +
                            "/\\x1b[2Jbroken.yaml: devices: no devices (a spec needs at least one)\n");
}

// Nothing at all is no error, but whoever asked wants to know where was looked.
TEST_F(CliCdiListTest, NothingToListSaysWhereItLooked) {
  const auto result = run({"--spec-dir", m_dir.path() + "/empty", "--spec-dir", m_dir.path() + "/none"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "gpuctk: note: no CDI device in " + m_dir.path() + "/empty, " + m_dir.path() +
                            "/none (gpuctk cdi generate --output " + m_dir.path() +
                            "/empty/nvidia.yaml writes one)\n");
}

// Without --spec-dir, the directories the hooks and the shim read: the config's spec-dirs.
TEST_F(CliCdiListTest, TheConfigsSpecDirsByDefault) {
  const std::string config = m_dir.write("gpuctk.yaml", "spec-dirs: [" + m_run + "]\nlog-file: \"\"\n");
  const auto result =
      test::run_gpuctk({"cdi", "list", "-v"}, m_dir.path(), {.env = {"GPUCTK_CONFIG=" + config}});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "vendor.com/device=gpu0\t" + m_run + "/vendor.json\n");
  EXPECT_EQ(result.err, "");
}

}  // namespace
}  // namespace gpuctk
