// gpuctk labels as a user runs it: the NFD file (atomic, 0644), stdout, JSON, the config file and the
// MIG strategy options, and one error line for every failure.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "cli/fixture_host_test.hpp"
#include "cli/run_gpuctk.hpp"
#include "fixtures/builder/hosts.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk {
namespace {

class CliLabelsTest : public test::CliFixtureHostTest {
 protected:
  CliLabelsTest() : CliFixtureHostTest("dgx-a100") {}
  test::RunResult labels(std::vector<std::string> extra) {
    std::vector<std::string> args{"labels", "--driver-root", m_fixture->host.driver_root, "--dev-root",
                                  m_fixture->host.dev_root};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_gpuctk(args, m_scratch);
  }
  static std::string data(std::string_view name) {
    return std::string(GPUCTK_SOURCE_DIR) + "/tests/data/labels/" + std::string(name);
  }
  static std::string golden(std::string_view name) {
    return read_file(std::string(GPUCTK_SOURCE_DIR) + "/tests/golden/labels/" + std::string(name))
        .value_or("?");
  }
};

TEST_F(CliLabelsTest, WritesTheNfdFileAtomicallyWithMode0644) {
  const std::string path = m_scratch + "/gpuctk";
  const auto r = labels({"--output", path, "--mode", "nvml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  const auto text = read_file(path).value();
  EXPECT_NE(text.find("nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB\n"), std::string::npos) << text;
  EXPECT_NE(text.find("nvidia.com/gpu.count=8\n"), std::string::npos);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(m_scratch), {}), 1) << "no temporary file left";
}

TEST_F(CliLabelsTest, ConfigFileGivesTheMigStrategyAndSharingAndTheOptionOverridesIt) {
  auto r = labels({"-o", "-", "--mode", "nvml", "--config-file", data("mixed-time-slicing.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The golden file has the machine label, which this host has not been given.
  std::string expected = golden("dgx-a100.mixed-time-slicing.labels");
  const auto machine = expected.find("nvidia.com/gpu.machine=");
  ASSERT_NE(machine, std::string::npos);
  expected.erase(machine, expected.find('\n', machine) + 1 - machine);
  EXPECT_EQ(r.out, expected);

  r = labels({"-o", "-", "--mode", "nvml", "--config-file", data("mixed-time-slicing.yaml"), "--mig-strategy",
              "none"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("nvidia.com/mig"), r.out.find("nvidia.com/mig.capable"));
  EXPECT_NE(r.out.find("nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB-SHARED\n"), std::string::npos) << r.out;
}

TEST_F(CliLabelsTest, JsonIsAnObjectOfTheSameLabels) {
  const auto r = labels({"-o", "-", "--format", "json", "--mode", "nvml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("{\n  \"nvidia.com/cuda.driver-version.full\": \"550.54.15\",\n")) << r.out;
  EXPECT_NE(r.out.find("  \"nvidia.com/gpu.count\": \"8\",\n"), std::string::npos);
  EXPECT_TRUE(r.out.ends_with("\"\n}\n"));
}

TEST_F(CliLabelsTest, WarningsGoToStderrAfterSuccess) {
  const auto r = labels({"-o", "-", "--mode", "nvml", "--mig-strategy", "single"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      r.err,
      "gpuctk: warning: mig-strategy single: GPUs with MIG enabled and disabled: nvidia.com/gpu.product is "
      "NVIDIA-A100-SXM4-40GB-MIG-INVALID\n");
}

TEST_F(CliLabelsTest, MpsOnAMigHostIsOneErrorLineAndNoFile) {
  const std::string path = m_scratch + "/gpuctk";
  const auto r = labels({"-o", path, "--mode", "nvml", "--config-file", data("mps.yaml")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "gpuctk: error: MPS sharing is not supported with MIG: GPU 4 (0000:87:00.0) is in MIG mode\n");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(CliLabelsTest, BadConfigFileNamesTheFileAndTheKey) {
  const std::string config = m_scratch + "/config.yaml";
  ASSERT_TRUE(write_file_atomic(config,
                                "sharing:\n  timeSlicing:\n    resources: [{name: gpu, replicas: 1}]\n", 0644,
                                Durability::atomic_only));
  auto r = labels({"-o", "-", "--config-file", config});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: " + config +
                       ": sharing.timeSlicing.resources[0].replicas: must be at least 2, got 1\n");
  EXPECT_EQ(r.out, "");

  r = labels({"-o", "-", "--config-file", m_scratch + "/missing.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: read " + m_scratch + "/missing.yaml: No such file or directory\n");
}

TEST_F(CliLabelsTest, UsageErrorsAreOneLineAndExit2) {
  auto r = labels({"--format", "yaml"});
  EXPECT_EQ(
      test::usage_error(r),
      "gpuctk: error: --format: unknown format \"yaml\" (want nfd or json) (see gpuctk labels --help)\n");
  r = labels({"--mig-strategy", "all"});
  EXPECT_EQ(
      test::usage_error(r),
      "gpuctk: error: --mig-strategy: unknown MIG strategy \"all\" (want none, single or mixed) (see gpuctk "
      "labels --help)\n");
  r = labels({"--mode", "management"});
  EXPECT_EQ(
      test::usage_error(r),
      "gpuctk: error: --mode: \"management\" is a spec's mode, not a discovery one (want auto, nvml or proc) "
      "(see gpuctk labels --help)\n");
  r = labels({"--mode", "fast"});
  EXPECT_EQ(
      test::usage_error(r),
      "gpuctk: error: --mode: unknown mode \"fast\" (want auto, nvml or proc) (see gpuctk labels --help)\n");
}

// A node without NFD yet has no features.d: it is made (0755) as GPU Feature Discovery makes it.
TEST_F(CliLabelsTest, AMissingFeaturesDirectoryIsMade) {
  const std::string dir = m_scratch + "/etc/kubernetes/node-feature-discovery/features.d";
  const auto r = labels({"--output", dir + "/gpuctk"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_NE(read_file(dir + "/gpuctk").value_or(""), "");
}

TEST_F(CliLabelsTest, UnwritableOutputNamesThePath) {
  ASSERT_TRUE(write_file_atomic(m_scratch + "/file", "x", 0644));
  const std::string path = m_scratch + "/file/features.d/gpuctk";
  const auto r = labels({"--output", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: mkdir " + m_scratch + "/file: exists and is not a directory\n");
}

TEST(CliLabels, AHostWithoutGpusGetsAnEmptyFileAndSaysWhy) {
  const test::TempDir tmp{"gpuctk-labels-empty"};
  ASSERT_FALSE(tmp.path().empty());
  const std::string& root = tmp.path();
  const auto r =
      test::run_gpuctk({"labels", "--driver-root", root, "--dev-root", root, "-o", root + "/out"}, root);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(root + "/out").value_or("?"), "");
  EXPECT_EQ(
      r.err,
      "gpuctk: warning: no NVIDIA driver (" + root +
          "/proc/driver/nvidia missing): no nvidia.com labels\ngpuctk: warning: no GPU found: no labels\n");
}

// `gpuctk labels --watch` in the background (stdout and stderr to `out`), its options from the
// environment (GPUCTK_LABELS_<NAME>) as a DaemonSet gives them.
pid_t spawn_watch(const std::vector<std::string>& args, std::vector<std::string> env,
                  const std::string& out) {
  std::vector<std::string> full{"labels"};
  full.insert(full.end(), args.begin(), args.end());
  for (char** e = environ; *e != nullptr; ++e) {
    env.emplace_back(*e);
  }
  const pid_t pid = test::spawn_logged(GPUCTK_BINARY, full, std::move(env), out);
  EXPECT_GT(pid, 0) << "posix_spawn of " << GPUCTK_BINARY;
  return pid;
}

// Whether `done()` holds within 30 s (polled every 100 ms): a deadline for a hung test, not a timing.
template <class Done>
bool eventually(Done done) {
  for (int i = 0; i < 300 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

// Stops the watch with SIGTERM: its exit status.
int stop_watch(pid_t pid) {
  EXPECT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool has_line(const std::string& path, const std::string& line) {
  return read_file(path).value_or("").find(line + "\n") != std::string::npos;
}

// --watch: the labels are written again when they change (here the machine's DMI name appears), and the
// file stays when SIGTERM stops the watch; every option also comes from GPUCTK_LABELS_<NAME>.
TEST_F(CliLabelsTest, WatchRewritesChangedLabelsAndKeepsTheFileOnSigterm) {
  const std::string path = m_scratch + "/features.d/gpuctk";
  const std::string product = m_fixture->host.dev_root + "/sys/class/dmi/id/product_name";
  std::filesystem::remove(product);
  const std::string out = m_scratch + "/watch.out";
  const pid_t pid = spawn_watch({"--watch", "1"},
                                {"GPUCTK_LABELS_OUTPUT=" + path, "GPUCTK_LABELS_MODE=proc",
                                 "GPUCTK_LABELS_DRIVER_ROOT=" + m_fixture->host.driver_root,
                                 "GPUCTK_LABELS_DEV_ROOT=" + m_fixture->host.dev_root},
                                out);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(eventually([&] { return has_line(path, "nvidia.com/gpu.count=8"); }))
      << read_file(out).value_or("");
  EXPECT_EQ(read_file(path).value().find("nvidia.com/gpu.machine="), std::string::npos);
  std::filesystem::create_directories(std::filesystem::path(product).parent_path());
  const auto written_product = write_file_atomic(product, "DGX A100\n", 0444);
  ASSERT_TRUE(written_product) << written_product.error().message;
  EXPECT_TRUE(eventually([&] { return has_line(path, "nvidia.com/gpu.machine=DGX-A100"); }))
      << read_file(out).value_or("");
  const auto written = read_file(path).value();
  EXPECT_EQ(stop_watch(pid), 0) << read_file(out).value_or("");
  EXPECT_EQ(read_file(path).value_or(""), written) << "the labels stay";
  EXPECT_EQ(read_file(out).value_or("?"), "") << "nothing to say on a host that has it all";
}

// --watch with --config-file: a change of the config wakes the watch at once (its timer here is an hour),
// whether the file is replaced by a rename (the device plugin's per-node config, write_file_atomic) or a
// mounted ConfigMap swaps its "..data" link; a removed config is one error line and the labels stay.
TEST_F(CliLabelsTest, WatchFollowsTheConfigFileAtOnce) {
  const std::string path = m_scratch + "/gpuctk";
  const std::string dir = m_scratch + "/config";
  std::filesystem::create_directories(dir + "/..v1");
  ASSERT_TRUE(write_file_atomic(dir + "/..v1/config.yaml", "", 0644));
  std::filesystem::create_directory_symlink("..v1", dir + "/..data");
  std::filesystem::create_symlink("..data/config.yaml", dir + "/config.yaml");
  const std::string out = m_scratch + "/watch.out";
  const pid_t pid = spawn_watch({"--watch", "3600", "--config-file", dir + "/config.yaml"},
                                {"GPUCTK_LABELS_OUTPUT=" + path, "GPUCTK_LABELS_MODE=proc",
                                 "GPUCTK_LABELS_DRIVER_ROOT=" + m_fixture->host.driver_root,
                                 "GPUCTK_LABELS_DEV_ROOT=" + m_fixture->host.dev_root},
                                out);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(eventually([&] { return has_line(path, "nvidia.com/gpu.sharing-strategy=none"); }))
      << read_file(out).value_or("");
  // The kubelet's swap: a new data folder, a new link renamed over "..data".
  std::filesystem::create_directories(dir + "/..v2");
  ASSERT_TRUE(
      write_file_atomic(dir + "/..v2/config.yaml", read_file(data("time-slicing.yaml")).value(), 0644));
  std::filesystem::create_directory_symlink("..v2", dir + "/..data_tmp");
  std::filesystem::rename(dir + "/..data_tmp", dir + "/..data");
  EXPECT_TRUE(eventually([&] { return has_line(path, "nvidia.com/gpu.replicas=4"); }))
      << read_file(out).value_or("");
  EXPECT_TRUE(has_line(path, "nvidia.com/gpu.sharing-strategy=time-slicing"));
  // The device plugin's write: the link replaced by a regular file, renamed into place.
  ASSERT_TRUE(write_file_atomic(dir + "/config.yaml",
                                "sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2}]}}\n", 0644));
  EXPECT_TRUE(eventually([&] { return has_line(path, "nvidia.com/gpu.replicas=2"); }))
      << read_file(out).value_or("");
  // Removed: one error line (the round failed), the labels as they were.
  const auto written = read_file(path).value();
  std::filesystem::remove(dir + "/config.yaml");
  EXPECT_TRUE(eventually([&] { return read_file(out).value_or("").find("error") != std::string::npos; }));
  EXPECT_EQ(read_file(out).value_or("?"),
            "gpuctk: error: read " + dir + "/config.yaml: No such file or directory\n");
  EXPECT_EQ(stop_watch(pid), 0) << read_file(out).value_or("");
  EXPECT_EQ(read_file(path).value_or(""), written);
}

// The config's folder removed, then made again: watched again, its new config read at once.
TEST_F(CliLabelsTest, WatchFindsTheConfigsFolderAgain) {
  const std::string path = m_scratch + "/gpuctk";
  const std::string dir = m_scratch + "/config";
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(write_file_atomic(dir + "/config.yaml", "", 0644));
  const std::string out = m_scratch + "/watch.out";
  const pid_t pid =
      spawn_watch({"--watch", "3600", "--config-file", dir + "/config.yaml", "-o", path, "--mode", "proc",
                   "--driver-root", m_fixture->host.driver_root, "--dev-root", m_fixture->host.dev_root},
                  {}, out);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(eventually([&] { return has_line(path, "nvidia.com/gpu.sharing-strategy=none"); }))
      << read_file(out).value_or("");
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(eventually([&] { return read_file(out).value_or("").find("error") != std::string::npos; }));
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(write_file_atomic(dir + "/config.yaml", read_file(data("time-slicing.yaml")).value(), 0644));
  EXPECT_TRUE(eventually([&] { return has_line(path, "nvidia.com/gpu.replicas=4"); }))
      << read_file(out).value_or("");
  EXPECT_EQ(stop_watch(pid), 0) << read_file(out).value_or("");
}

// A node whose NVIDIA GPUs have no driver yet gets the GPU Operator's nvidia.com/gpu.present (what
// schedules the driver and the DaemonSets of NVIDIA's stack) and nothing else of NVIDIA's.
TEST_F(CliLabelsTest, GpuPresentWithoutADriver) {
  std::filesystem::remove_all(m_fixture->host.dev_root + "/proc/driver/nvidia");
  const auto r = labels({"-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "nvidia.com/gpu.present=true\n");
  EXPECT_EQ(r.err, "");
}

TEST(CliLabels, HelpNamesTheDefaultOutputAndEveryOption) {
  const std::string scratch = std::filesystem::temp_directory_path();
  const auto r = test::run_gpuctk({"labels", "--help"}, scratch);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"/etc/kubernetes/node-feature-discovery/features.d/gpuctk", "--format",
                           "--config-file", "--mig-strategy", "--driver-root", "--dev-root", "--mode"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
}

}  // namespace
}  // namespace gpuctk
