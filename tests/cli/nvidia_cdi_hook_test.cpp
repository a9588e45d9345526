// gpuctk as nvidia-cdi-hook (src/cli/nvidia_cdi_hook.cpp): NVIDIA v1.20.0's command line read as its
// urfave/cli v3 parser reads it, mapped onto `gpuctk hook <name>`; and the built binary run through a link
// of that name.
#include "cli/nvidia_cdi_hook.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "cli/run_gpuctk.hpp"
#include "rootfs/rootfs_test_support.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk::cli {
namespace {

using Kind = CdiHookCall::Kind;
using Args = std::vector<std::string>;

CdiHookCall parse(const Args& args, const std::map<std::string, std::string>& env = {}) {
  return parse_nvidia_cdi_hook(args, [&env](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

// The gpuctk command line `args` become; "" and a failure's message when they do not run a hook.
Args gpuctk(const Args& args, const std::map<std::string, std::string>& env = {}) {
  const auto call = parse(args, env);
  EXPECT_EQ(call.kind, Kind::run) << call.message;
  return call.argv;
}

// The hook lines of nvidia-ctk v1.20.0's specs (tests/data/nvidia-v1.20-specs) and what they become.
TEST(NvidiaCdiHook, TheSpecLinesOfV120BecomeGpuctksHooks) {
  EXPECT_EQ(
      gpuctk({"create-symlinks", "--link", "libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so", "--link",
              "../card1::/h/dev/dri/by-path/pci-0000:07:00.0-card"}),
      (Args{"gpuctk", "hook", "create-symlinks", "--link=libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so",
            "--link=../card1::/h/dev/dri/by-path/pci-0000:07:00.0-card"}));
  EXPECT_EQ(gpuctk({"enable-cuda-compat", "--host-driver-version=550.54.15"}),
            (Args{"gpuctk", "hook", "enable-cuda-compat", "--host-driver-version=550.54.15"}));
  EXPECT_EQ(gpuctk({"update-ldcache", "--folder", "/usr/lib/x86_64-linux-gnu", "--folder",
                    "/usr/lib/x86_64-linux-gnu/vdpau"}),
            (Args{"gpuctk", "hook", "update-ldcache", "--folder=/usr/lib/x86_64-linux-gnu",
                  "--folder=/usr/lib/x86_64-linux-gnu/vdpau"}));
  EXPECT_EQ(gpuctk({"disable-device-node-modification"}),
            (Args{"gpuctk", "hook", "disable-device-node-modification"}));
  EXPECT_EQ(gpuctk({"update-application-profile"}), (Args{"gpuctk", "hook", "update-application-profile"}));
}

// Every flag of every v1.20.0 hook, hidden ones included, with the names gpuctk's hooks give them.
TEST(NvidiaCdiHook, EveryFlagOfEveryHook) {
  EXPECT_EQ(gpuctk({"create-symlinks", "--link=a::/b", "--container-spec", "/s.json"}),
            (Args{"gpuctk", "hook", "create-symlinks", "--link=a::/b", "--container-spec=/s.json"}));
  EXPECT_EQ(gpuctk({"update-ldcache", "--folder", "/l", "--ldconfig-path", "/sbin/ldconfig.real",
                    "--container-spec", "-"}),
            (Args{"gpuctk", "hook", "update-ldcache", "--folder=/l", "--ldconfig-path=/sbin/ldconfig.real",
                  "--container-spec=-"}));
  EXPECT_EQ(gpuctk({"chmod", "--mode", "755", "--path", "/dev/dri", "--container-spec", "/s.json"}),
            (Args{"gpuctk", "hook", "chmod", "--path=/dev/dri", "--mode=755", "--container-spec=/s.json"}));
  EXPECT_EQ(
      gpuctk({"enable-cuda-compat", "--host-driver-version", "570.1", "--host-cuda-version", "12.8",
              "--cuda-compat-container-root", "/opt/compat", "--container-spec", "/s.json"}),
      (Args{"gpuctk", "hook", "enable-cuda-compat", "--host-driver-version=570.1", "--host-cuda-version=12.8",
            "--cuda-compat-container-root=/opt/compat", "--container-spec=/s.json"}));
  EXPECT_EQ(gpuctk({"disable-device-node-modification", "--container-spec", "/s.json"}),
            (Args{"gpuctk", "hook", "disable-device-node-modification", "--container-spec=/s.json"}));
  EXPECT_EQ(gpuctk({"update-application-profile", "--container-spec", "/s.json"}),
            (Args{"gpuctk", "hook", "update-application-profile", "--container-spec=/s.json"}));
  const auto noop = parse({"noop"});
  EXPECT_EQ(noop.kind, Kind::skip);
  EXPECT_EQ(noop.message, "");
}

// urfave/cli v3's grammar: -name as --name, =VALUE or the next argument (even one starting with "-"), list
// values split at commas, the last value of a single one, the global flags after the hook's name, other
// arguments ignored, "--" ending the flags.
TEST(NvidiaCdiHook, NvidiasGrammar) {
  EXPECT_EQ(gpuctk({"create-symlinks", "-link", "a::/b,c::/d", "-link=e::/f", "extra", "--link", "-g::/h"}),
            (Args{"gpuctk", "hook", "create-symlinks", "--link=a::/b", "--link=c::/d", "--link=e::/f",
                  "--link=-g::/h"}));
  EXPECT_EQ(gpuctk({"enable-cuda-compat", "--host-driver-version", "1.0", "--host-driver-version=2.0"}),
            (Args{"gpuctk", "hook", "enable-cuda-compat", "--host-driver-version=2.0"}));
  EXPECT_EQ(gpuctk({"--debug", "create-symlinks", "-d", "--quiet", "--link", "a::/b"}),
            (Args{"gpuctk", "--quiet", "hook", "create-symlinks", "--link=a::/b"}));
  EXPECT_EQ(gpuctk({"--quiet", "create-symlinks", "--quiet=false", "--link", "a::/b"}),
            (Args{"gpuctk", "hook", "create-symlinks", "--link=a::/b"}));
  EXPECT_EQ(gpuctk({"create-symlinks", "--link", "a::/b", "--", "--link", "c::/d"}),
            (Args{"gpuctk", "hook", "create-symlinks", "--link=a::/b"}));
  // chmod's mode as NVIDIA's Go chmod applies it: the permission bits.
  EXPECT_EQ(gpuctk({"chmod", "--mode=04755", "--path", "/x"}),
            (Args{"gpuctk", "hook", "chmod", "--path=/x", "--mode=755"}));
}

TEST(NvidiaCdiHook, NothingToRunWhereNvidiasRunsNothing) {
  // No path, or no host version: NVIDIA's returns before reading the state.
  for (const Args& args : {Args{"chmod", "--mode", "755"}, Args{"enable-cuda-compat"},
                           Args{"enable-cuda-compat", "--cuda-compat-container-root", "/c"}}) {
    const auto call = parse(args);
    EXPECT_EQ(call.kind, Kind::skip) << args[0];
    EXPECT_EQ(call.message, "") << args[0];
  }
}

// ConfigureCDIHookCommand: no hook, a hook it lacks, and a flag it does not know before any hook of its
// own are one warning and success, so that a spec from a newer toolkit starts its container.
TEST(NvidiaCdiHook, AnUnknownHookOrFlagIsOneWarning) {
  const std::map<Args, std::string> cases{
      {{}, "nvidia-cdi-hook: no CDI hook specified"},
      {{"--debug"}, "nvidia-cdi-hook: no CDI hook specified"},
      {{"from-the-future", "--x", "1"},
       "nvidia-cdi-hook: unsupported CDI hook \"from-the-future\" ignored (a spec from a newer NVIDIA "
       "toolkit?)"},
      {{"from-the-future", "create-symlinks", "--link", "a::/b"},
       "nvidia-cdi-hook: unsupported CDI hook \"from-the-future\" ignored (a spec from a newer NVIDIA "
       "toolkit?)"},
      // The flag stops NVIDIA's parser before the hook's name: it sees no hook.
      {{"--new-flag", "create-symlinks", "--link", "a::/b"}, "nvidia-cdi-hook: no CDI hook specified"},
      {{"x", "--new-flag"},
       "nvidia-cdi-hook: unsupported CDI hook \"x\" ignored (a spec from a newer NVIDIA toolkit?)"},
      // Its log level is not set yet there: --quiet leaves the warning.
      {{"--quiet", "--new-flag", "x"}, "nvidia-cdi-hook: no CDI hook specified"},
  };
  for (const auto& [args, warning] : cases) {
    const auto call = parse(args);
    EXPECT_EQ(call.kind, Kind::skip) << testing::PrintToString(args);
    EXPECT_EQ(call.message, warning) << testing::PrintToString(args);
  }
  // Quiet once the parse got to the hook's name.
  EXPECT_EQ(parse({"--quiet", "from-the-future"}).message, "");
  EXPECT_EQ(parse({"from-the-future"}, {{"NVIDIA_CTK_QUIET", "true"}}).message, "");
  EXPECT_EQ(parse({"from-the-future", "--quiet"}).message, "");
}

// A flag the named hook lacks, or one without its value, is a usage error.
TEST(NvidiaCdiHook, AFlagTheHookLacksIsAUsageError) {
  const std::map<Args, std::string> cases{
      {{"create-symlinks", "--folder", "/x"}, "nvidia-cdi-hook create-symlinks: unknown option \"--folder\""},
      {{"update-ldcache", "-ld-cache-entry=1"},
       "nvidia-cdi-hook update-ldcache: unknown option \"-ld-cache-entry\""},
      {{"noop", "--container-spec", "x"}, "nvidia-cdi-hook noop: unknown option \"--container-spec\""},
      {{"chmod", "--version"}, "nvidia-cdi-hook chmod: unknown option \"--version\""},
      {{"create-symlinks", "--link"}, "nvidia-cdi-hook create-symlinks: --link needs a value"},
      {{"create-symlinks", "--quiet=maybe"},
       "nvidia-cdi-hook create-symlinks: --quiet: \"maybe\" is not true or false"},
  };
  for (const auto& [args, error] : cases) {
    const auto call = parse(args);
    EXPECT_EQ(call.kind, Kind::usage_error) << testing::PrintToString(args);
    EXPECT_EQ(call.message, error) << testing::PrintToString(args);
    EXPECT_EQ(call.hook, args[0]);
  }
}

// What NVIDIA's hooks refuse before they run (exit 1), and its environment variables.
TEST(NvidiaCdiHook, ValuesNvidiasRefuses) {
  const std::map<Args, std::string> cases{
      {{"chmod", "--path", "/x"}, "chmod: a non-empty --mode must be given"},
      {{"chmod", "--mode", "u+x", "--path", "/x"}, "chmod: --mode \"u+x\" is not an octal mode"},
      {{"chmod", "--mode", "755", "--path", "/x, "}, "chmod: an empty --path"},
      {{"update-ldcache", "--ldconfig-path="}, "update-ldcache: --ldconfig-path must not be empty"},
      {{"--debug=yes", "noop"}, "nvidia-cdi-hook: --debug: \"yes\" is not true or false"},
  };
  for (const auto& [args, error] : cases) {
    const auto call = parse(args);
    EXPECT_EQ(call.kind, Kind::error) << testing::PrintToString(args);
    EXPECT_EQ(call.message, error) << testing::PrintToString(args);
  }
  // The specs set NVIDIA_CTK_DEBUG=false; the older NVIDIA_CDI_* names count when the newer is unset.
  EXPECT_EQ(parse({"noop"}, {{"NVIDIA_CTK_DEBUG", "false"}}).kind, Kind::skip);
  EXPECT_EQ(gpuctk({"disable-device-node-modification"}, {{"NVIDIA_CDI_QUIET", "1"}}),
            (Args{"gpuctk", "--quiet", "hook", "disable-device-node-modification"}));
  EXPECT_EQ(
      gpuctk({"disable-device-node-modification"}, {{"NVIDIA_CTK_QUIET", ""}, {"NVIDIA_CDI_QUIET", "1"}}),
      (Args{"gpuctk", "hook", "disable-device-node-modification"}));
  EXPECT_EQ(gpuctk({"--quiet=false", "disable-device-node-modification"}, {{"NVIDIA_CTK_QUIET", "true"}}),
            (Args{"gpuctk", "hook", "disable-device-node-modification"}));
  const auto bad = parse({"noop"}, {{"NVIDIA_CTK_DEBUG", "yes"}});
  EXPECT_EQ(bad.kind, Kind::error);
  EXPECT_EQ(bad.message, "nvidia-cdi-hook: NVIDIA_CTK_DEBUG=yes: not true or false");
}

TEST(NvidiaCdiHook, HelpAndVersion) {
  for (const Args& args :
       {Args{"--help"}, Args{"-h"}, Args{"help"}, Args{"h", "nope"}, Args{"-h", "--unknown"}}) {
    const auto call = parse(args);
    EXPECT_EQ(call.kind, Kind::help) << args[0];
    EXPECT_EQ(call.hook, "") << args[0];
  }
  for (const Args& args :
       {Args{"help", "chmod"}, Args{"chmod", "--help"}, Args{"chmod", "h"}, Args{"chmod", "-h", "--bad"}}) {
    const auto call = parse(args);
    EXPECT_EQ(call.kind, Kind::help) << testing::PrintToString(args);
    EXPECT_EQ(call.hook, "chmod") << testing::PrintToString(args);
  }
  EXPECT_EQ(parse({"-v"}).kind, Kind::version);
  EXPECT_EQ(nvidia_cdi_hook_help("chmod"),
            "Usage: nvidia-cdi-hook chmod [OPTIONS]\n\n"
            "set the mode of paths in the container; runs as `gpuctk hook chmod` (see its --help).\n\n"
            "Options (NVIDIA's; each VALUE of a repeated one may be a comma list):\n"
            "  --path VALUE: a container path; none: nothing to do, as in NVIDIA's\n"
            "  --mode VALUE: octal; only the permission bits (0777) are applied, as NVIDIA's Go chmod "
            "applies them\n"
            "  --container-spec VALUE: the OCI state from this file instead of stdin (\"\" or -: stdin)\n"
            "  --debug, --quiet, --help: as before the hook's name\n");
}

// The built binary, run through a link named nvidia-cdi-hook.
class NvidiaCdiHookBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_dir.path().empty());
    m_link = test::link_gpuctk_as(m_dir.path(), "nvidia-cdi-hook");
  }
  test::RunResult run(const Args& args, const std::string& stdin_path = "/dev/null") {
    return test::run_gpuctk(args, m_dir.path(), {.program = m_link, .stdin_path = stdin_path});
  }
  test::TempDir m_dir;
  std::string m_link;
};

TEST_F(NvidiaCdiHookBinaryTest, AnswersAsNvidiasDoes) {
  auto r = run({"from-the-future", "--x"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(
      r.err,
      "gpuctk: warning: nvidia-cdi-hook: unsupported CDI hook \"from-the-future\" ignored (a spec from a "
      "newer NVIDIA toolkit?)\n");
  r = run({"create-symlinks", "--x"});
  EXPECT_EQ(test::usage_error(r),
            "gpuctk: error: nvidia-cdi-hook create-symlinks: unknown option \"--x\" (see nvidia-cdi-hook "
            "create-symlinks --help)\n");
  r = run({"noop"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
  r = run({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.out.starts_with("gpuctk ")) << r.out;
  r = run({"chmod", "--path", "/x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: chmod: a non-empty --mode must be given\n");
  r = run({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, nvidia_cdi_hook_help(""));
}

// --container-spec: the state from a file, stdin left alone (here: a terminal would be refused).
TEST_F(NvidiaCdiHookBinaryTest, ContainerSpecNamesTheStatesFile) {
  const std::string bundle = m_dir.path() + "/bundle";
  std::filesystem::create_directories(bundle + "/rootfs");
  m_dir.write("bundle/config.json", R"({"ociVersion":"1.0.2","root":{"path":"rootfs"}})");
  const std::string state =
      m_dir.write("state.json", R"({"ociVersion":"1.0.2","id":"x","pid":1,"bundle":")" + bundle + R"("})");
  m_dir.write("gpuctk.yaml", "log-file: " + m_dir.path() + "/gpuctk.log\n");
  const auto r = test::run_gpuctk(
      {"create-symlinks", "--link", "libcuda.so.1::/usr/lib/libcuda.so", "-container-spec", state},
      m_dir.path(), {.program = m_link, .env = {"GPUCTK_CONFIG=" + m_dir.path() + "/gpuctk.yaml"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(test::host_readlink(bundle + "/rootfs/usr/lib/libcuda.so"), "libcuda.so.1");
}

}  // namespace
}  // namespace gpuctk::cli
