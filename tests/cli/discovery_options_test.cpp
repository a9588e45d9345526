// --driver-root, --dev-root and --mode (cli/discovery_options.hpp): one declaration for cdi generate,
// info, labels and install, so each option has the same help and refuses the same values everywhere.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "cli/run_gpuctk.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk {
namespace {

// What --help says of `option`: its line and, when the description went to the next line, that one, without
// the environment variable (it names the command) and with blanks squeezed.
std::string help_of(const std::string& help, const std::string& option) {
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find(option);
    if (at == std::string::npos || line.find_first_not_of(' ') != at) {
      continue;
    }
    std::string next;
    if (std::getline(lines, next) && next.starts_with("          ")) {
      line += " " + next;
    }
    line = std::regex_replace(line.substr(at), std::regex(R"( \(Env:[A-Z_]+\))"), "");
    return std::regex_replace(line, std::regex(" +"), " ");
  }
  return "(no " + option + ")";
}

class CliDiscoveryOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(m_dir.path().empty()); }
  test::RunResult run(const std::vector<std::string>& args) const {
    return test::run_gpuctk(args, m_dir.path());
  }

  test::TempDir m_dir;
};

TEST_F(CliDiscoveryOptionsTest, TheRootsHaveOneHelpInEveryCommand) {
  const std::vector<std::vector<std::string>> commands = {
      {"cdi", "generate"}, {"info"}, {"labels"}, {"install"}};
  for (const std::string option : {"--driver-root", "--dev-root"}) {
    std::string first;
    for (auto command : commands) {
      command.push_back("--help");
      const auto r = run(command);
      ASSERT_EQ(r.exit_code, 0) << command[0];
      const std::string line = help_of(r.out, option);
      SCOPED_TRACE(command[0] + " " + option + ": " + line);
      EXPECT_NE(line.find(option), std::string::npos);
      if (first.empty()) {
        first = line;
      }
      EXPECT_EQ(line, first);
    }
  }
}

TEST_F(CliDiscoveryOptionsTest, ARelativeRootIsAUsageErrorInEveryCommand) {
  const std::vector<std::vector<std::string>> commands = {
      {"cdi", "generate"}, {"info"}, {"labels"}, {"install", "--no-runtime-config"}};
  for (const std::string option : {"--driver-root", "--dev-root"}) {
    for (auto command : commands) {
      const std::string path = command[0] == "cdi" ? "gpuctk cdi generate" : "gpuctk " + command[0];
      command.insert(command.end(), {option, "run/nvidia/driver"});
      const auto r = run(command);
      EXPECT_EQ(r.exit_code, 2) << path << " " << option;
      EXPECT_EQ(r.err, "gpuctk: error: " + option + ": \"run/nvidia/driver\" is not an absolute path (see " +
                           path + " --help)\n");
    }
  }
}

TEST_F(CliDiscoveryOptionsTest, ModeTakesASpecsModesOrANodesAndItsNvidiaCtkName) {
  auto r = run({"labels", "--discovery-mode", "management", "-o", "-"});
  EXPECT_EQ(test::usage_error(r),
            "gpuctk: error: --mode: \"management\" is a spec's mode, not a discovery one (want auto, nvml or "
            "proc) (see gpuctk labels --help)\n");
  r = run({"info", "--discovery-mode", "magic"});
  EXPECT_EQ(test::usage_error(r),
            "gpuctk: error: --mode: unknown mode \"magic\" (want auto, nvml, proc or management) (see gpuctk "
            "info --help)\n");
}

}  // namespace
}  // namespace gpuctk
