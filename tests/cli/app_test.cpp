// The command line as a whole (src/cli/app.cpp): every mistake, on every command, is one line
// "gpuctk: error: <what> (see <command> --help)" on stderr and exit status 2; --help and --version print
// on stdout and exit 0; an unknown hook name is a warning and success (specs from newer versions).
#include <gtest/gtest.h>

#include "cli/run_gpuctk.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk {
namespace {

struct Mistake {
  std::vector<std::string> args;
  std::string what;     // the part between "gpuctk: error: " and " (see "
  std::string command;  // whose --help the hint names
};

// One row per kind of mistake, spread over the commands (none of them gets to read stdin or a host).
const Mistake k_mistakes[] = {
    // no command, unknown command
    {{}, "missing command: cdi, hook, system, runtime, install, info, labels or config", "gpuctk"},
    {{"system"}, "missing command: create-device-nodes", "gpuctk system"},
    {{"system", "bogus"}, "unknown command \"system bogus\"", "gpuctk system"},
    {{"bogus"}, "unknown command \"bogus\"", "gpuctk"},
    {{"bogus", "--driver-root", "/"}, "unknown command \"bogus\"", "gpuctk"},
    {{"cdi"}, "missing command: generate, validate, list or inject", "gpuctk cdi"},
    {{"cdi", "bogus"}, "unknown command \"cdi bogus\"", "gpuctk cdi"},
    {{"hook"},
     "missing command: precreate, prestart, create-symlinks, update-ldcache, enable-cuda-compat, "
     "disable-device-node-modification, update-application-profile, chmod or container-start",
     "gpuctk hook"},
    // unknown option, on every level and on the hooks
    {{"--bogus"}, "unknown option \"--bogus\"", "gpuctk"},
    {{"cdi", "--bogus"}, "unknown option \"--bogus\"", "gpuctk cdi"},
    {{"hook", "--bogus"}, "unknown option \"--bogus\"", "gpuctk hook"},
    {{"cdi", "generate", "--bogus"}, "unknown option \"--bogus\"", "gpuctk cdi generate"},
    {{"cdi", "generate", "--bogus=1"}, "unknown option \"--bogus\"", "gpuctk cdi generate"},
    {{"cdi", "list", "-x"}, "unknown option \"-x\"", "gpuctk cdi list"},
    {{"cdi", "validate", "a.yaml", "--strict"}, "unknown option \"--strict\"", "gpuctk cdi validate"},
    {{"info", "--verbose"}, "unknown option \"--verbose\"", "gpuctk info"},
    {{"hook", "create-symlinks", "--bogus"}, "unknown option \"--bogus\"", "gpuctk hook create-symlinks"},
    {{"hook", "update-ldcache", "--bogus"}, "unknown option \"--bogus\"", "gpuctk hook update-ldcache"},
    {{"hook", "enable-cuda-compat", "--bogus"},
     "unknown option \"--bogus\"",
     "gpuctk hook enable-cuda-compat"},
    {{"hook", "disable-device-node-modification", "--bogus"},
     "unknown option \"--bogus\"",
     "gpuctk hook disable-device-node-modification"},
    {{"hook", "precreate", "--bogus"}, "unknown option \"--bogus\"", "gpuctk hook precreate"},
    {{"hook", "container-start", "--bogus"}, "unknown option \"--bogus\"", "gpuctk hook container-start"},
    // an unknown option wins over the required option it probably misspells
    {{"cdi", "inject", "--devcie", "nvidia.com/gpu=0"}, "unknown option \"--devcie\"", "gpuctk cdi inject"},
    {{"hook", "chmod", "--mdoe", "755", "--path", "/x"}, "unknown option \"--mdoe\"", "gpuctk hook chmod"},
    // missing argument: a required option, a positional, an option's value
    {{"cdi", "inject"}, "missing option --device", "gpuctk cdi inject"},
    {{"hook", "chmod", "--path", "/x"}, "missing option --mode", "gpuctk hook chmod"},
    {{"cdi", "validate"}, "missing FILE argument", "gpuctk cdi validate"},
    {{"cdi", "generate", "--output"}, "--output needs a value", "gpuctk cdi generate"},
    {{"cdi", "generate", "-o"}, "--output needs a value", "gpuctk cdi generate"},
    {{"cdi", "list", "--spec-dir"}, "--spec-dir needs a value", "gpuctk cdi list"},
    {{"hook", "update-ldcache", "--folder"}, "--folder needs a value", "gpuctk hook update-ldcache"},
    {{"hook", "create-symlinks", "--config"}, "--config needs a value", "gpuctk hook create-symlinks"},
    // extra positional
    {{"info", "extra"}, "unexpected argument \"extra\"", "gpuctk info"},
    {{"cdi", "generate", "extra"}, "unexpected argument \"extra\"", "gpuctk cdi generate"},
    {{"cdi", "list", "extra"}, "unexpected argument \"extra\"", "gpuctk cdi list"},
    {{"hook", "precreate", "extra"}, "unexpected argument \"extra\"", "gpuctk hook precreate"},
    {{"hook", "disable-device-node-modification", "extra"},
     "unexpected argument \"extra\"",
     "gpuctk hook disable-device-node-modification"},
    // bad value
    {{"info", "--mode", "magic"},
     "--mode: unknown mode \"magic\" (want auto, nvml, proc or management)",
     "gpuctk info"},
    {{"cdi", "generate", "--format", "toml"},
     "--format: unknown format \"toml\" (want yaml or json)",
     "gpuctk cdi generate"},
    {{"cdi", "generate", "--output", "spec.txt"},
     "--output spec.txt: unsupported file extension \".txt\" (CDI reads only .json and .yaml files)",
     "gpuctk cdi generate"},
    {{"hook", "chmod", "--mode", "999", "--path", "/x"},
     "--mode: \"999\" is not an octal mode such as 755",
     "gpuctk hook chmod"},
    // untrusted text stays on its line
    {{"cdi", "bo\ngus"}, "unknown command \"cdi bo\\ngus\"", "gpuctk cdi"},
};

class CliAppTest : public ::testing::Test {
 protected:
  test::RunResult run(const std::vector<std::string>& args) { return test::run_gpuctk(args, m_dir.path()); }
  test::TempDir m_dir;
};

TEST_F(CliAppTest, EveryMistakeIsOneErrorLineAndExitTwo) {
  for (const auto& mistake : k_mistakes) {
    std::string typed = "gpuctk";
    for (const auto& arg : mistake.args) {
      typed += " " + arg;
    }
    const auto r = run(mistake.args);
    EXPECT_EQ(r.exit_code, 2) << typed;
    EXPECT_EQ(r.out, "") << typed;
    EXPECT_EQ(r.err, "gpuctk: error: " + mistake.what + " (see " + mistake.command + " --help)\n") << typed;
  }
}

TEST_F(CliAppTest, HelpAndVersionPrintOnStdoutAndSucceed) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--help"},
                                               {"-h"},
                                               {"cdi", "--help"},
                                               {"cdi", "generate", "--help"},
                                               {"hook", "chmod", "--help"},
                                               {"info", "--help"},
                                               {"bogus", "--help"},
                                               {"cdi", "generate", "--bogus", "--help"}}) {
    const auto r = run(args);
    EXPECT_EQ(r.exit_code, 0) << args.back();
    EXPECT_EQ(r.err, "") << args.back();
    EXPECT_NE(r.out.find("Usage: "), std::string::npos) << r.out;
  }
  const auto version = run({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_TRUE(version.out.starts_with("gpuctk ")) << version.out;
  EXPECT_EQ(version.err, "");
}

// Runtimes run the hooks a spec names; a spec written by a newer gpuctk may name one this binary lacks.
TEST_F(CliAppTest, UnknownHookIsAWarningAndSuccess) {
  const auto r = run({"hook", "from-the-future", "--with", "flags"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "gpuctk: warning: unknown hook \"from-the-future\" ignored (a spec from a newer gpuctk?)\n");
}

}  // namespace
}  // namespace gpuctk
