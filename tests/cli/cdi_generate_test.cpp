// gpuctk cdi generate and gpuctk info as a user runs them: output files, formats, and one clear error
// line with no partial file for every failure.
#include <sys/stat.h>

#include <filesystem>
#include <gtest/gtest.h>

#include "cli/run_gpuctk.hpp"
#include "fixtures/builder/hosts.hpp"
#include "util/file.hpp"

namespace gpuctk {
namespace {

class CliCdiGenerateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto f = fixture::materialise_temp("t4-debian");
    ASSERT_TRUE(f) << f.error().message;
    m_fixture = std::make_unique<fixture::Fixture>(std::move(*f));
    if (!m_fixture->host.nodes_are_real) {
      GTEST_SKIP() << "device nodes need root to mknod";
    }
    m_scratch = m_fixture->temp.path() + "/scratch";
    std::filesystem::create_directories(m_scratch);
  }
  test::RunResult generate(std::vector<std::string> extra) {
    std::vector<std::string> args{"cdi", "generate", "--driver-root", m_fixture->host.driver_root,
                                  "--dev-root", m_fixture->host.dev_root};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_gpuctk(args, m_scratch);
  }
  std::unique_ptr<fixture::Fixture> m_fixture;
  std::string m_scratch;
};

TEST_F(CliCdiGenerateTest, WritesYamlToStdoutByDefault) {
  const auto r = generate({"--hook-path", "/usr/bin/gpuctk"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("---\ncdiVersion: \"0.5.0\"\nkind: \"nvidia.com/gpu\"\n")) << r.out.substr(0, 80);
  EXPECT_NE(r.out.find("  - name: \"all\"\n"), std::string::npos);
}

TEST_F(CliCdiGenerateTest, OutputFileIsAtomicMode0644AndFormatFollowsTheExtension) {
  const std::string path = m_scratch + "/nvidia.json";
  const auto r = generate({"--output", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  const auto text = read_file(path).value();
  EXPECT_TRUE(text.starts_with("{\n  \"cdiVersion\": \"0.5.0\",\n")) << text.substr(0, 60);
  // The hooks run this very binary unless --hook-path says otherwise.
  EXPECT_NE(text.find("\"path\": \"" + std::filesystem::canonical(GPUCTK_BINARY).string() + "\""), std::string::npos);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(m_scratch), {}), 1) << "no temporary file left";
}

TEST_F(CliCdiGenerateTest, UnknownDeviceIdIsOneErrorLineAndNoFile) {
  const std::string path = m_scratch + "/nvidia.yaml";
  const auto r = generate({"--device-ids", "0,GPU-nonexistent", "--output", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: unknown device id \"GPU-nonexistent\" (devices: 0, their UUIDs, or all)\n");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(CliCdiGenerateTest, UnwritableOutputNamesThePath) {
  const std::string path = m_scratch + "/no/such/dir/nvidia.yaml";
  const auto r = generate({"--output", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: write " + path + ": create temporary file in " + m_scratch +
                       "/no/such/dir: No such file or directory\n");
}

TEST_F(CliCdiGenerateTest, OutputExtensionRuntimesIgnoreIsRefused) {
  const auto r = generate({"--output", m_scratch + "/nvidia.yml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: --output " + m_scratch +
                       "/nvidia.yml: unsupported file extension \".yml\" (CDI reads only .json and .yaml files)\n");
}

TEST_F(CliCdiGenerateTest, BadArgumentsAreUsageErrorsOrNamedErrors) {
  EXPECT_EQ(generate({"--no-such-flag"}).exit_code, 2);
  auto r = generate({"--mode", "magic"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: --mode: unknown mode \"magic\" (want auto, nvml, proc or management)\n");
  r = generate({"--hook-path", "gpuctk"});
  EXPECT_EQ(r.err, "gpuctk: error: --hook-path: \"gpuctk\" is not an absolute path\n");
  r = generate({"--vendor", "x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.err.starts_with("gpuctk: error: --vendor: ")) << r.err;
}

TEST_F(CliCdiGenerateTest, NoDriverUnderTheRootIsOneLine) {
  const std::string empty = m_scratch + "/empty";
  std::filesystem::create_directories(empty);
  const auto r = test::run_gpuctk({"cdi", "generate", "--driver-root", empty, "--dev-root", empty}, m_scratch);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: no NVIDIA driver version: tried NVML, " + empty + "/proc/driver/nvidia/version and "
                   "libcuda.so.<version> in " + empty + "/etc/ld.so.cache\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(CliCdiGenerateTest, InfoPrintsTheInventory) {
  const auto r = test::run_gpuctk({"info", "--driver-root", m_fixture->host.driver_root, "--dev-root",
                                   m_fixture->host.dev_root},
                                  m_scratch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Driver:      535.183.01 (proprietary kernel module)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CUDA:        12.2\n"), std::string::npos);
  EXPECT_NE(r.out.find("  GPU 0  Tesla T4  0000:00:1e.0  /dev/nvidia0  GPU-"), std::string::npos);
  const auto json = test::run_gpuctk({"info", "--json", "--driver-root", m_fixture->host.driver_root, "--dev-root",
                                      m_fixture->host.dev_root},
                                     m_scratch);
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_TRUE(json.out.starts_with("{\n  \"driverVersion\": \"535.183.01\",\n")) << json.out.substr(0, 60);
}

}  // namespace
}  // namespace gpuctk
