// The hook's log and the hook's error on stderr: the two places where container-controlled text leaves
// gpuctk. Whatever a message holds, one call is one line (escaped, cut at k_max_log_message bytes).
#include "hook/log.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "cli/commands.hpp"
#include "fixtures/builder/hosts.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::hook {
namespace {

// A key a container could put into an annotation: it ends the line and starts a forged one.
const std::string k_forging_key =
    "cdi.k8s.io/x\n2026-11-22T06:19:32Z gpuctk[1] info: injected nothing\x1b[2K";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  for (const auto line : split(text, '\n')) {
    lines.emplace_back(line);
  }
  EXPECT_EQ(lines.back(), "") << "the file ends with a newline";
  lines.pop_back();
  return lines;
}

TEST(HookLog, OneCallIsOneLineWhateverTheMessageHolds) {
  auto temp = fixture::TempRoot::create();
  ASSERT_TRUE(temp) << temp.error().message;
  const std::string path = temp->path() + "/hook.log";
  auto log = Log::open(path, LogLevel::info);
  ASSERT_TRUE(log) << log.error().message;
  log->info("request from annotation " + k_forging_key + ": nvidia.com/gpu=0");
  log->warning(std::string(10000, 'x'));
  log->error(
      "invalid UTF-8 \xff and a C1 CSI \xc2\x9b"
      "31m");

  const auto lines = lines_of(read_file(path).value());
  ASSERT_EQ(lines.size(), 3u);
  const std::string pid = " gpuctk[" + std::to_string(::getpid()) + "] ";
  for (const auto& line : lines) {
    EXPECT_NE(line.find(pid), std::string::npos) << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  }
  EXPECT_TRUE(lines[0].ends_with(
      R"(info: request from annotation cdi.k8s.io/x\n2026-11-22T06:19:32Z gpuctk[1] info: injected nothing\x1b[2K: )"
      "nvidia.com/gpu=0"))
      << lines[0];
  EXPECT_TRUE(lines[1].ends_with("warning: " + std::string(4096, 'x') + "\u2026(5904 bytes cut)"))
      << lines[1];
  EXPECT_TRUE(lines[2].ends_with(R"(error: invalid UTF-8 \xff and a C1 CSI \xc2\x9b31m)")) << lines[2];
}

// A link planted where the log goes (the log's directory may be one others can write, such as /tmp) must
// not make the hook append to, or create, whatever it points at: refused in one line, followed never.
TEST(HookLog, ASymbolicLinkAtTheLogPathIsRefused) {
  auto temp = fixture::TempRoot::create();
  ASSERT_TRUE(temp) << temp.error().message;
  const std::string victim = temp->path() + "/victim";
  ASSERT_TRUE(write_file_atomic(victim, "root's file\n", 0600));
  const std::string link = temp->path() + "/hook.log";
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  const std::string dangling = temp->path() + "/dangling.log";
  const std::string created = temp->path() + "/would-be-created";
  ASSERT_EQ(::symlink(created.c_str(), dangling.c_str()), 0);

  for (const auto& path : {link, dangling}) {
    auto log = Log::open(path, LogLevel::info);
    ASSERT_FALSE(log) << path;
    EXPECT_EQ(log.error().message,
              "open log file " + path + ": is a symbolic link; refused (name the file itself)");
  }
  EXPECT_EQ(read_file(victim).value_or("<missing>"), "root's file\n");
  EXPECT_FALSE(read_file(created)) << "the dangling link's target was created";
}

// run_with_log (src/cli/hook_precreate.cpp) reports a hook's error in the log and, through cli::report
// (src/cli/app.cpp), on stderr, which the engine keeps as its text log: one line in each.
TEST(HookLog, AHookErrorIsOneLineInTheLogAndOnStderr) {
  auto temp = fixture::TempRoot::create();
  ASSERT_TRUE(temp) << temp.error().message;
  const std::string log_path = temp->path() + "/hook.log";
  const std::string config_path = temp->path() + "/config.yaml";
  ASSERT_TRUE(write_file_atomic(config_path, "log-file: " + log_path + "\n", 0644));
  const std::string err_path = temp->path() + "/stderr";

  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(err_fd, 0);
  ::dup2(err_fd, STDERR_FILENO);
  ::close(err_fd);
  const int rc = cli::run_with_log(config_path, [](const Config&, const Log&) -> Result<void> {
    return fail("annotation " + k_forging_key + ": invalid device name \"x\"");
  });
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);

  EXPECT_EQ(rc, 1);
  const std::string escaped =
      R"(annotation cdi.k8s.io/x\n2026-11-22T06:19:32Z gpuctk[1] info: injected nothing\x1b[2K: invalid device name "x")";
  EXPECT_EQ(read_file(err_path).value(), "gpuctk: error: " + escaped + "\n");
  const auto lines = lines_of(read_file(log_path).value());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].ends_with("error: " + escaped)) << lines[0];
}

// Which container a line is about goes before the message, escaped like it (it comes from config.json).
TEST(HookLog, TheContextPrefixesEveryLine) {
  auto temp = fixture::TempRoot::create();
  ASSERT_TRUE(temp) << temp.error().message;
  const std::string path = temp->path() + "/hook.log";
  auto log = Log::open(path, LogLevel::info);
  ASSERT_TRUE(log) << log.error().message;
  log->info("before");
  log->set_context("container with hostname a\nb");
  log->info("request");
  log->error("refused");
  const auto lines = lines_of(read_file(path).value());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(lines[0].ends_with("] info: before")) << lines[0];
  EXPECT_TRUE(lines[1].ends_with(R"(] info: container with hostname a\nb: request)")) << lines[1];
  EXPECT_TRUE(lines[2].ends_with(R"(] error: container with hostname a\nb: refused)")) << lines[2];
}

// The log never grows without bound: a hook that opens a full file moves it to "<path>.1" (replacing the
// one before) and starts a new one, created 0640 like the first.
TEST(HookLog, AFullLogIsRotatedOnce) {
  auto temp = fixture::TempRoot::create();
  ASSERT_TRUE(temp) << temp.error().message;
  const std::string path = temp->path() + "/hook.log";
  const off_t max = 100;
  ASSERT_TRUE(write_file_atomic(path + ".1", "the oldest lines\n", 0640));
  auto first = Log::open(path, LogLevel::info, max);
  ASSERT_TRUE(first) << first.error().message;
  first->info(std::string(120, 'a'));                 // now over the limit
  auto early = Log::open(path, LogLevel::info, max);  // rotates: hook.log -> hook.log.1
  ASSERT_TRUE(early) << early.error().message;
  early->info("after the rotation");
  const auto rotated = lines_of(read_file(path + ".1").value());
  ASSERT_EQ(rotated.size(), 1u);
  EXPECT_TRUE(rotated[0].ends_with(std::string(120, 'a'))) << rotated[0];
  auto current = lines_of(read_file(path).value());
  ASSERT_EQ(current.size(), 1u);
  EXPECT_TRUE(current[0].ends_with("info: after the rotation")) << current[0];
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  // Below the limit nothing moves.
  auto again = Log::open(path, LogLevel::info, max);
  ASSERT_TRUE(again);
  again->info("one more");
  EXPECT_EQ(lines_of(read_file(path).value()).size(), 2u);
  EXPECT_EQ(lines_of(read_file(path + ".1").value()).size(), 1u);
}

}  // namespace
}  // namespace gpuctk::hook
