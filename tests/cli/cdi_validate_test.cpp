#include <gtest/gtest.h>

#include "cdi/temp_dir.hpp"
#include "cli/run_gpuctk.hpp"

namespace gpuctk {
namespace {

const std::string k_data = std::string(GPUCTK_SOURCE_DIR) + "/tests/data/cdi/";

class CliCdiValidateTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(m_dir.path().empty()); }
  test::RunResult run(const std::vector<std::string>& args) {
    std::vector<std::string> all{"cdi", "validate"};
    all.insert(all.end(), args.begin(), args.end());
    return test::run_gpuctk(all, m_dir.path());
  }
  test::TempDir m_dir;
};

TEST_F(CliCdiValidateTest, ValidFilesPrintNothingAndExitZero) {
  const auto result = run({k_data + "valid-minimal.yaml", k_data + "valid-full.json"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "");
}

TEST_F(CliCdiValidateTest, PrintsEveryProblemOfEveryFile) {
  const std::string many = k_data + "invalid-many.yaml";
  const std::string unknown = k_data + "invalid-unknown-field.json";
  const std::string missing = m_dir.path() + "/missing.yaml";
  const std::string yml = m_dir.write("spec.yml", "");
  const auto result = run({many, k_data + "valid-minimal.yaml", unknown, missing, yml});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err,
            many + R"(: cdiVersion: cdiVersion "0.3.0" is lower than 0.6.0, which this spec needs for annotations)" "\n" +
            many + R"(: kind: vendor "a" is a single character, which crashes released CDI libraries (up to v1.1.0); use at least two characters)" "\n" +
            many + R"(: annotations: invalid annotation key "bad key/x/y": more than one "/")" "\n" +
            many + R"(: devices[0].name: device name "-gpu" must start with a letter or digit)" "\n" +
            many + R"(: devices[0].containerEdits.env[0]: invalid environment variable "NOVALUE" (want KEY=VALUE with a non-empty KEY))" "\n" +
            many + R"(: devices[0].containerEdits.deviceNodes[0].path: device node path "dev/nvidia0" is not absolute)" "\n" +
            many + R"(: devices[0].containerEdits.deviceNodes[0].permissions: invalid device node permissions "rwx" (want letters of "rwm"))" "\n" +
            many + R"(: devices[1].containerEdits: no container edits (a device needs at least one of env, deviceNodes, mounts, hooks, intelRdt, additionalGids, netDevices))" "\n" +
            many + R"(: containerEdits.hooks[0].hookName: invalid hook name "preStart" (want one of prestart, createRuntime, createContainer, startContainer, poststart, poststop))" "\n" +
            many + R"(: containerEdits.hooks[0].path: hook path "relative/hook" is not absolute)" "\n" +
            many + R"(: containerEdits.hooks[0].timeout: hook timeout must be greater than 0, not 0)" "\n" +
            unknown + R"(: unknown field "hostpath" in devices[0].containerEdits.deviceNodes[1])" "\n" +
            missing + ": No such file or directory\n" +
            yml + R"(: unsupported file extension ".yml" (CDI reads only .json and .yaml files))" "\n");
}

TEST_F(CliCdiValidateTest, ParseErrorIsOneLine) {
  const std::string file = m_dir.write("broken.yaml", "kind: [\n");
  const auto result = run({file});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, file + ": YAML syntax error at line 2, column 1: end of sequence flow not found\n");
}

TEST_F(CliCdiValidateTest, NoFileIsAUsageError) {
  const auto result = run({});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_NE(result.err.find("files is required"), std::string::npos) << result.err;
}

TEST_F(CliCdiValidateTest, HelpDescribesTheCommand) {
  const auto result = run({"--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("Check CDI spec files against the CDI rules; print every problem"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("FILE: WHERE: WHAT"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("Exit status: 0 all files valid, 1 a file has problems, 2 usage error."), std::string::npos)
      << result.out;
}

}  // namespace
}  // namespace gpuctk
