// `containerd config dump` run for --config-source command (src/engine/containerd_dump.cpp): the program
// found, its output, and every way it can fail, bounded. The "containerd" here is a shell script.
#include "engine/containerd_dump.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "engine/configure.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk {
namespace {

class EngineContainerdDump : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(m_dir.path().empty()); }

  // A "containerd" whose body is `body`.
  std::string program(std::string_view body) {
    const std::string path = m_dir.write("containerd", "#!/bin/sh\n" + std::string(body) + "\n");
    EXPECT_EQ(::chmod(path.c_str(), 0755), 0);
    return path;
  }

  std::string dump(const std::string& executable,
                   std::chrono::milliseconds timeout = engine::k_dump_timeout) {
    auto out = engine::containerd_config_dump(executable, "/etc/containerd/config.toml", timeout);
    return out ? *out : "(error) " + out.error().message;
  }

  test::TempDir m_dir;
};

TEST_F(EngineContainerdDump, PrintsWhatItGotAsItsArguments) {
  EXPECT_EQ(dump(program("echo \"$# $*\"")), "4 --config /etc/containerd/config.toml config dump\n");
}

TEST_F(EngineContainerdDump, FailuresNameTheCommand) {
  const std::string exe = program("echo half; exit 1");
  EXPECT_EQ(dump(exe), "(error) " + exe +
                           " --config /etc/containerd/config.toml config dump: exited 1 (its "
                           "messages are above)");
  program("kill -SEGV $$");
  EXPECT_EQ(dump(exe),
            "(error) " + exe + " --config /etc/containerd/config.toml config dump: killed by SIGSEGV");
  program("exec sleep 60");
  EXPECT_EQ(dump(exe, std::chrono::milliseconds(1000)),
            "(error) " + exe +
                " --config /etc/containerd/config.toml config dump: still running after 1 s: killed");
  program("exec head -c " + std::to_string(engine::k_max_config_file + 10) + " /dev/zero");
  EXPECT_EQ(dump(exe), "(error) " + exe +
                           " --config /etc/containerd/config.toml config dump: printed more than " +
                           std::to_string(engine::k_max_config_file) + " bytes");
  const std::string missing = m_dir.path() + "/no-containerd";
  EXPECT_EQ(dump(missing),
            "(error) " + missing +
                " --config /etc/containerd/config.toml config dump: exec: No such file or directory");
}

TEST_F(EngineContainerdDump, ResolvesOnPathOrAbsoluteOnly) {
  EXPECT_EQ(engine::resolve_executable("bin/containerd").error().message,
            "executable path \"bin/containerd\": not an absolute path");
  EXPECT_EQ(engine::resolve_executable("/opt/containerd").value_or(""), "/opt/containerd");
  EXPECT_EQ(engine::resolve_executable("sh").value_or("(none)").ends_with("/sh"), true);
  auto missing = engine::resolve_executable("no-such-gpuctk-containerd");
  ASSERT_FALSE(missing);
  EXPECT_TRUE(missing.error().message.starts_with("no-such-gpuctk-containerd: not found in PATH ("))
      << missing.error().message;
}

}  // namespace
}  // namespace gpuctk
