// What every injection point reads first (inject/entry.hpp): the config read leniently, its log
// opened, and the gate that lets a container without a GPU through a broken config.
#include "inject/entry.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::inject {
namespace {

using nlohmann::ordered_json;

class HookStartTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(m_dir.path().empty()); }

  // A warning sink that keeps what it was given.
  Warn collect() {
    return [this](std::string_view warning) { m_warned.emplace_back(warning); };
  }

  static ordered_json container(const std::vector<std::string>& env) {
    return ordered_json{{"process", {{"env", env}}}};
  }

  test::TempDir m_dir{"gpuctk-hook-start"};
  std::vector<std::string> m_warned;
};

TEST_F(HookStartTest, ABrokenFileKeepsItsValidKeysAndNamesItsFirstError) {
  const std::string path = m_dir.write("c.yaml",
                                       "runtimes: [/bin/echo]\nlog-file: \"\"\n"
                                       "accept-volume-mounts: ture\n");
  const HookStart start = start_hook(path);
  ASSERT_TRUE(start.problem);
  EXPECT_EQ(start.problem->message, path + ":3: accept-volume-mounts: expected true or false, got \"ture\"");
  EXPECT_EQ(start.config.runtimes, std::vector<std::string>{"/bin/echo"});
  EXPECT_TRUE(start.warnings.empty());
}

TEST_F(HookStartTest, AnUnknownKeyIsAWarningAndTheFileStaysUsable) {
  const std::string path = m_dir.write("c.yaml", "log-file: \"\"\nlog_level: debug\n");
  const HookStart start = start_hook(path);
  EXPECT_FALSE(start.problem);
  EXPECT_EQ(
      start.warnings,
      std::vector<std::string>{path + ":2: unknown key \"log_level\" ignored (did you mean \"log-level\"?)"});
}

// The configured log-file is the config's to get right: a container asking for a GPU must not start
// without the log the operator asked for.
TEST_F(HookStartTest, ALogFileThatCannotBeOpenedIsTheProblem) {
  const std::string log = m_dir.path() + "/no-such-dir/gpuctk.log";
  const std::string path = m_dir.write("c.yaml", "log-file: " + log + "\n");
  const HookStart start = start_hook(path);
  ASSERT_TRUE(start.problem);
  EXPECT_EQ(start.problem->message, "open log file " + log + ": No such file or directory");
}

TEST_F(HookStartTest, AnnounceGivesEachWarningToTheSinkAndTheLog) {
  HookStart start;
  auto log = config::Log::open(m_dir.path() + "/gpuctk.log", config::LogLevel::info);
  ASSERT_TRUE(log) << log.error().message;
  start.log = std::move(*log);
  start.warnings = {"first", "second"};
  announce_warnings(start, collect());
  EXPECT_EQ(m_warned, (std::vector<std::string>{"first", "second"}));
  const std::string text = read_file(m_dir.path() + "/gpuctk.log").value();
  EXPECT_NE(text.find(" warning: first\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" warning: second\n"), std::string::npos) << text;
}

TEST_F(HookStartTest, AUsableConfigInjectsWithoutAWord) {
  const HookStart start;
  const auto gated = gate(start, container({"NVIDIA_VISIBLE_DEVICES=0"}), "the container", collect());
  ASSERT_TRUE(gated) << gated.error().message;
  EXPECT_EQ(*gated, Gate::inject);
  EXPECT_TRUE(m_warned.empty());
}

TEST_F(HookStartTest, ABrokenConfigPassesAContainerThatAsksForNoGpu) {
  HookStart start;
  start.problem = Error{"c.yaml:3: broken"};
  const auto gated = gate(start, container({"PATH=/bin"}), "/b/config.json", collect());
  ASSERT_TRUE(gated) << gated.error().message;
  EXPECT_EQ(*gated, Gate::pass_through);
  EXPECT_EQ(m_warned,
            std::vector<std::string>{"c.yaml:3: broken; /b/config.json asks for no GPU: left as it is"});
}

TEST_F(HookStartTest, ABrokenConfigFailsAContainerThatMayAskForAGpu) {
  HookStart start;
  start.problem = Error{"c.yaml:3: broken"};
  const auto gated = gate(start, container({"NVIDIA_VISIBLE_DEVICES=0"}), "the container", collect());
  ASSERT_FALSE(gated);
  EXPECT_EQ(gated.error().message, "c.yaml:3: broken");
  EXPECT_TRUE(m_warned.empty());
}

}  // namespace
}  // namespace gpuctk::inject
