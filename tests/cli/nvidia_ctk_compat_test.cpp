// nvidia-ctk's spellings (src/cli/cdi_generate.cpp, runtime_configure.cpp, install.cpp, labels.cpp,
// app.cpp): the aliases of the options whose meaning is gpuctk's, comma lists, runtime configure's default
// engine, the global --debug and --quiet, and the GPUCTK_* environment variables of the commands a
// DaemonSet runs. Each alias gives exactly what gpuctk's own spelling gives.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "cli/fixture_host_test.hpp"
#include "cli/run_gpuctk.hpp"
#include "fixtures/builder/hosts.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk {
namespace {

namespace fs = std::filesystem;

class CliNvidiaCtkGenerateTest : public test::CliFixtureHostTest {
 protected:
  CliNvidiaCtkGenerateTest() : CliFixtureHostTest("dgx-a100") {}
  // `cdi generate` on the fixture in proc mode, the spec on stdout.
  test::RunResult generate(std::vector<std::string> extra, std::vector<std::string> env = {}) {
    std::vector<std::string> args{"cdi",           "generate",
                                  "--driver-root", m_fixture->host.driver_root,
                                  "--dev-root",    m_fixture->host.dev_root,
                                  "--output",      "-"};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_gpuctk(args, m_scratch, {.env = std::move(env)});
  }
};

TEST_F(CliNvidiaCtkGenerateTest, AliasesAndCommaListsGiveTheSameSpec) {
  const auto canonical =
      generate({"--mode", "proc", "--device-ids", "0,4:1", "--device-name-strategy", "index",
                "--device-name-strategy", "uuid", "--vendor", "example.com", "--class", "gpu", "--hook-path",
                "/opt/gpuctk", "--disable-hook", "update-ldcache"});
  ASSERT_EQ(canonical.exit_code, 0) << canonical.err;
  ASSERT_NE(canonical.out.find("kind: \"example.com/gpu\""), std::string::npos) << canonical.out;
  ASSERT_EQ(canonical.out.find("name: \"1\""), std::string::npos) << "only the devices asked for";
  for (const std::string ids : {"--device-id", "--device", "--devices"}) {
    const auto alias =
        generate({"--discovery-mode", "proc", ids, "0", ids, "4:1", "--device-name-strategy", "index,uuid",
                  "--cdi-vendor", "example.com", "--cdi-class", "gpu", "--nvidia-cdi-hook-path",
                  "/opt/gpuctk", "--disable-hooks", "update-ldcache"});
    EXPECT_EQ(alias.exit_code, 0) << ids << ": " << alias.err;
    EXPECT_EQ(alias.out, canonical.out) << ids;
  }
  const auto ctk_path =
      generate({"--mode", "proc", "--device-ids", "0,4:1", "--device-name-strategy", "index,uuid", "--vendor",
                "example.com", "--nvidia-ctk-path", "/opt/gpuctk", "--disable-hook", "update-ldcache"});
  EXPECT_EQ(ctk_path.out, canonical.out);
}

// Every option of `cdi generate` has GPUCTK_CDI_GENERATE_<NAME>; the command line wins over it.
TEST_F(CliNvidiaCtkGenerateTest, EnvironmentVariablesSetEveryOption) {
  const auto canonical = generate({"--mode", "proc", "--device-ids", "0", "--device-name-strategy", "uuid",
                                   "--format", "json", "--no-all-device"});
  ASSERT_EQ(canonical.exit_code, 0) << canonical.err;
  const auto from_env =
      generate({}, {"GPUCTK_CDI_GENERATE_MODE=proc", "GPUCTK_CDI_GENERATE_DEVICE_IDS=0",
                    "GPUCTK_CDI_GENERATE_DEVICE_NAME_STRATEGY=uuid", "GPUCTK_CDI_GENERATE_FORMAT=json",
                    "GPUCTK_CDI_GENERATE_NO_ALL_DEVICE=true"});
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  EXPECT_EQ(from_env.out, canonical.out);
  const auto overridden =
      generate({"--format", "yaml"}, {"GPUCTK_CDI_GENERATE_MODE=proc", "GPUCTK_CDI_GENERATE_FORMAT=json"});
  EXPECT_EQ(overridden.exit_code, 0) << overridden.err;
  EXPECT_TRUE(overridden.out.starts_with("---\ncdiVersion:")) << overridden.out.substr(0, 40);
  const auto bad = generate({}, {"GPUCTK_CDI_GENERATE_MODE=magic"});
  EXPECT_EQ(test::usage_error(bad),
            "gpuctk: error: --mode: unknown mode \"magic\" (want auto, nvml, proc, management, imex, gds, "
            "mofed, gdrcopy or nvswitch) (see gpuctk cdi generate --help)\n");
  const auto help = test::run_gpuctk({"cdi", "generate", "--help"}, m_scratch);
  EXPECT_NE(help.out.find("(Env:GPUCTK_CDI_GENERATE_DEVICE_IDS)"), std::string::npos) << help.out;
}

// nvidia-ctk's modes gpuctk lacks are refused with the reason, not as unknown words.
TEST_F(CliNvidiaCtkGenerateTest, NvidiaCtksModesWithoutAnEquivalentSayWhy) {
  const auto csv = generate({"--mode", "csv"});
  EXPECT_EQ(
      test::usage_error(csv),
      "gpuctk: error: --mode: mode \"csv\" is nvidia-ctk's for Tegra (Jetson) systems, whose driver CSV "
      "files describe; gpuctk discovers discrete GPUs only (see gpuctk cdi generate --help)\n");
  const auto wsl = generate({"--discovery-mode", "wsl"});
  EXPECT_EQ(
      test::usage_error(wsl),
      "gpuctk: error: --mode: mode \"wsl\" is nvidia-ctk's for WSL2 (/dev/dxg and the driver store); gpuctk "
      "does not discover WSL2's GPUs (see gpuctk cdi generate --help)\n");
  EXPECT_TRUE(csv.out.empty() && wsl.out.empty());
}

class CliNvidiaCtkConfigureTest : public ::testing::Test {
 protected:
  test::RunResult run(std::vector<std::string> args, std::vector<std::string> env = {}) {
    return test::run_gpuctk(args, m_dir.path(), {.env = std::move(env)});
  }
  // What `runtime configure` printed about `file`, with the file's path as FILE.
  static std::string with_file(std::string text, const std::string& file) {
    for (size_t at = text.find(file); at != std::string::npos; at = text.find(file, at)) {
      text.replace(at, file.size(), "FILE");
    }
    return text;
  }
  test::TempDir m_dir;
};

TEST_F(CliNvidiaCtkConfigureTest, RuntimeConfigureAliasesGiveTheSameFile) {
  const std::string a = m_dir.path() + "/a.json";
  const std::string b = m_dir.path() + "/b.json";
  const auto canonical = run({"runtime", "configure", "--runtime", "docker", "--config", a, "--runtime-name",
                              "gpu", "--runtime-path", GPUCTK_BINARY, "--set-as-default", "--cdi"});
  ASSERT_EQ(canonical.exit_code, 0) << canonical.err;
  EXPECT_EQ(canonical.out, "docker: runtime \"gpu\" (" GPUCTK_BINARY
                           ") added, default runtime set to \"gpu\", CDI enabled; " +
                               a + " written; restart docker\n");
  for (const std::string cdi : {"--cdi.enabled", "--cdi.enable", "--enable-cdi"}) {
    fs::remove(b);
    const auto alias =
        run({"runtime", "configure", "--runtime", "docker", "--config", b, "--nvidia-runtime-name", "gpu",
             "--nvidia-runtime-path", GPUCTK_BINARY, "--nvidia-set-as-default", cdi});
    EXPECT_EQ(alias.exit_code, 0) << cdi << ": " << alias.err;
    EXPECT_EQ(with_file(alias.out, b), with_file(canonical.out, a)) << cdi;
    EXPECT_EQ(read_file(b).value_or(""), read_file(a).value()) << cdi;
  }
}

// nvidia-ctk configures docker when no --runtime is given; gpuctk does too, and says so.
TEST_F(CliNvidiaCtkConfigureTest, NoRuntimeMeansDockerAndSaysSo) {
  const std::string file = m_dir.path() + "/daemon.json";
  const auto r = run({"runtime", "configure", "--config", file, "--runtime-path", GPUCTK_BINARY});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "gpuctk: note: no --runtime given: configuring docker (as nvidia-ctk does)\n");
  EXPECT_EQ(r.out,
            "docker: runtime \"nvidia\" (" GPUCTK_BINARY ") added; " + file + " written; restart docker\n");
}

// --quiet: stderr has the error line and nothing else; --debug (and -d) changes nothing. GPUCTK_QUIET too.
TEST_F(CliNvidiaCtkConfigureTest, GlobalQuietAndDebug) {
  const std::string file = m_dir.path() + "/daemon.json";
  auto r = run({"--quiet", "runtime", "configure", "--config", file, "--runtime-path", "/nonexistent/shim"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "neither the note nor the missing shim's warning";
  EXPECT_EQ(r.out,
            "docker: runtime \"nvidia\" (/nonexistent/shim) added; " + file + " written; restart docker\n");
  r = run({"--quiet", "runtime", "configure", "--config", m_dir.path() + "/none/x/daemon.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.starts_with("gpuctk: error: ")) << r.err;
  EXPECT_EQ(std::ranges::count(r.err, '\n'), 1) << r.err;
  r = run({"runtime", "configure", "--config", file, "--runtime-path", "/nonexistent/shim"},
          {"GPUCTK_QUIET=true"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
  for (const std::string debug : {"--debug", "-d"}) {
    r = run({debug, "runtime", "configure", "--config", file, "--runtime", "docker", "--runtime-path",
             "/nonexistent/shim"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(
        r.err,
        "gpuctk: warning: runtime path /nonexistent/shim: No such file or directory (the engine cannot run "
        "runtime \"nvidia\" until it is there)\n");
  }
}

// docker --gpus: runtime configure links nvidia-container-runtime-hook to the gpuctk beside the shim in a
// directory on dockerd's PATH (--docker-hook-dir), once; leaves a file that is not gpuctk's alone; --remove
// takes only its own link away.
TEST_F(CliNvidiaCtkConfigureTest, DockerHookLinkOnPath) {
  const std::string file = m_dir.path() + "/daemon.json";
  const std::string dir = m_dir.path() + "/path-dir";
  const std::string link = dir + "/nvidia-container-runtime-hook";
  const std::string shim = m_dir.path() + "/bin/gpuctk-runtime";
  const std::string gpuctk = m_dir.path() + "/bin/gpuctk";
  fs::create_directories(m_dir.path() + "/bin");
  fs::copy_file(GPUCTK_BINARY, gpuctk);
  fs::create_symlink("gpuctk", shim);
  const std::vector<std::string> args{"runtime",           "configure", "--runtime",      "docker",
                                      "--config",          file,        "--runtime-path", shim,
                                      "--docker-hook-dir", dir};
  auto r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "docker: runtime \"nvidia\" (" + shim + ") added; " + file + " written; restart docker\n" +
                       "docker: linked " + link + " -> " + gpuctk +
                       " (docker run --gpus, once dockerd restarts)\n");
  EXPECT_EQ(fs::read_symlink(link), gpuctk);
  r = run(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.ends_with("\ndocker: " + link + " -> " + gpuctk + " unchanged\n")) << r.out;

  r = run({"runtime", "configure", "--runtime", "docker", "--config", file, "--runtime-path", shim,
           "--remove", "--docker-hook-dir", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.ends_with("; restart docker\ndocker: removed " + link + "\n")) << r.out;
  EXPECT_FALSE(fs::exists(fs::symlink_status(link)));

  // NVIDIA's hook (or anyone's) at that name stays, and the line says docker runs it.
  fs::create_symlink("/usr/bin/nvidia-container-toolkit", link);
  r = run(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      r.out.ends_with("\ndocker: " + link +
                      " left alone: it is not gpuctk's (a link to /usr/bin/nvidia-container-toolkit); docker "
                      "run --gpus runs it\n"))
      << r.out;
  EXPECT_EQ(fs::read_symlink(link), "/usr/bin/nvidia-container-toolkit");
  r = run({"runtime", "configure", "--runtime", "docker", "--config", file, "--runtime-path", shim,
           "--remove", "--docker-hook-dir", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("docker: removed"), std::string::npos) << r.out;
  EXPECT_EQ(fs::read_symlink(link), "/usr/bin/nvidia-container-toolkit");

  // Another --config is a dockerd of its own: no link unless --docker-hook-dir says where.
  fs::remove(link);
  r = run({"runtime", "configure", "--runtime", "docker", "--config", m_dir.path() + "/other.json",
           "--runtime-path", shim});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("nvidia-container-runtime-hook"), std::string::npos) << r.out;
  r = run({"runtime", "configure", "--runtime", "containerd", "--config", m_dir.path() + "/c.toml",
           "--docker-hook-dir", dir});
  EXPECT_EQ(test::usage_error(r),
            "gpuctk: error: --docker-hook-dir is for --runtime docker only (see gpuctk runtime configure "
            "--help)\n");
  r = run({"runtime", "configure", "--runtime", "docker", "--config", file, "--docker-hook-dir", "bin"});
  EXPECT_EQ(test::usage_error(r),
            "gpuctk: error: --docker-hook-dir: \"bin\" is not an absolute path (or none) (see gpuctk runtime "
            "configure --help)\n");
}

}  // namespace
}  // namespace gpuctk
