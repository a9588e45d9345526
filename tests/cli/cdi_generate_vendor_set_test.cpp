// gpuctk cdi generate --vendor-set as a user runs it: one spec file per kind into a directory, one note line
// per vendor without GPUs, the output rules, and the default (no --vendor-set) unchanged.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "cdi/codec.hpp"
#include "cdi/validate.hpp"
#include "cli/run_gpuctk.hpp"
#include "fixtures/builder/hosts.hpp"
#include "support/fixture_host.hpp"
#include "util/file.hpp"

namespace gpuctk {
namespace {

namespace fs = std::filesystem;

class CliVendorSet : public test::FixtureHostTest {
 protected:
  void SetUpHost() override {
    m_scratch = m_fixture->temp.path() + "/scratch";
    m_out = m_fixture->temp.path() + "/cdi";
    fs::create_directories(m_scratch);
    fs::create_directories(m_out);
  }
  test::RunResult generate(std::vector<std::string> extra) {
    std::vector<std::string> args{"cdi",           "generate",
                                  "--driver-root", m_fixture->host.driver_root,
                                  "--dev-root",    m_fixture->host.dev_root};
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = test::run_gpuctk(args, m_scratch);
    result.err = test::without_hook_path_warnings(result.err);  // the hooks run this build tree's gpuctk
    return result;
  }
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(m_out)) {
      names.push_back(entry.path().filename());
    }
    std::ranges::sort(names);
    return names;
  }
  std::string m_scratch;
  std::string m_out;
};

TEST_F(CliVendorSet, MixedHostGetsOneValidSpecPerVendorWithGpus) {
  use_host("mixed-nvidia-intel");
  if (IsSkipped() || HasFatalFailure()) {
    return;
  }
  const auto r = generate({"--vendor-set", "nvidia,amd,intel", "--mode", "proc", "--output", m_out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  // Exactly one line says that there is no AMD GPU.
  EXPECT_EQ(r.err, "gpuctk: note: no AMD GPU in " + m_fixture->host.dev_root +
                       "/sys/class/drm: no amd.com/gpu spec\n");
  ASSERT_EQ(files(), (std::vector<std::string>{"intel.com-gpu.yaml", "nvidia.com-gpu.yaml"}));
  for (const auto& name : files()) {
    const std::string path = m_out + "/" + name;
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644U) << name;
    const auto v = test::run_gpuctk({"cdi", "validate", path}, m_scratch);
    EXPECT_EQ(v.exit_code, 0) << name << ": " << v.out << v.err;
  }
  // The NVIDIA spec is what the default invocation writes, byte for byte.
  const auto single = generate({"--mode", "proc", "--output", m_scratch + "/nvidia.yaml"});
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_EQ(read_file(m_out + "/nvidia.com-gpu.yaml").value(), read_file(m_scratch + "/nvidia.yaml").value());
  const auto intel = cdi::parse_spec(read_file(m_out + "/intel.com-gpu.yaml").value(), cdi::Format::yaml);
  ASSERT_TRUE(intel) << intel.error().message;
  EXPECT_EQ(intel->kind, "intel.com/gpu");
  // JSON: the extension follows --format.
  fs::remove_all(m_out);
  fs::create_directories(m_out);
  const auto json = generate({"--vendor-set", "intel", "--format", "json", "--output", m_out + "/"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.err, "");
  EXPECT_EQ(files(), std::vector<std::string>{"intel.com-gpu.json"});
}

TEST_F(CliVendorSet, AmdHostWritesOnlyTheAmdSpec) {
  use_host("mi300x-amd");
  if (IsSkipped() || HasFatalFailure()) {
    return;
  }
  const auto r = generate({"--vendor-set", "nvidia,amd,intel", "--output", m_out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string root = m_fixture->host.dev_root;
  EXPECT_EQ(r.err, "gpuctk: note: no NVIDIA driver (" + root +
                       "/proc/driver/nvidia missing): no nvidia.com/gpu spec\n" +
                       "gpuctk: note: no Intel GPU in " + root + "/sys/class/drm: no intel.com/gpu spec\n");
  EXPECT_EQ(files(), std::vector<std::string>{"amd.com-gpu.yaml"});
  // One vendor may go to stdout.
  const auto stdout_run = generate({"--vendor-set", "amd", "--output", "-"});
  ASSERT_EQ(stdout_run.exit_code, 0) << stdout_run.err;
  EXPECT_EQ(stdout_run.out, read_file(m_out + "/amd.com-gpu.yaml").value());
}

TEST_F(CliVendorSet, OutputRulesAndErrors) {
  use_host("flex170-intel");
  if (IsSkipped() || HasFatalFailure()) {
    return;
  }
  // Several vendors need a directory.
  auto r = generate({"--vendor-set", "amd,intel", "--output", "-"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(
      r.err,
      "gpuctk: error: --output \"-\": --vendor-set with several vendors writes one spec per kind into a "
      "directory; name an existing directory\n");
  // No GPU of any vendor in the set: one note per vendor, then the error; nothing written.
  r = generate({"--vendor-set", "nvidia,amd", "--output", m_out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("gpuctk: note: no AMD GPU in "), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.ends_with("gpuctk: error: no GPU of nvidia, amd on this host: no spec written\n"))
      << r.err;
  EXPECT_EQ(files(), std::vector<std::string>{});
  // A bad set is a usage error; --device-ids is NVIDIA's only.
  r = generate({"--vendor-set", "nvidia,ati", "--output", m_out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown GPU vendor \"ati\" (want nvidia, amd or intel)"), std::string::npos) << r.err;
  r = generate({"--vendor-set", "intel", "--device-ids", "0", "--output", m_out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(
      r.err,
      "gpuctk: error: --device-ids selects NVIDIA devices only; it cannot be combined with amd or intel in "
      "--vendor-set\n");
  // Without --vendor-set nothing changes: NVIDIA only, and a host without its driver is an error.
  r = generate({"--output", m_out + "/nvidia.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(files(), std::vector<std::string>{});
  // --help documents the flag.
  r = test::run_gpuctk({"cdi", "generate", "--help"}, m_scratch);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--vendor-set"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gpuctk
