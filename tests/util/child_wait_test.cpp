#include "util/child_wait.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

#include "util/fd.hpp"

namespace gpuctk {
namespace {

// A child of this process exec'ing `argv` (a full path first), its stdout on a pipe, exec's errno on its
// close-on-exec report pipe: as engine/containerd_dump.cpp and plugin/mps_daemon_host.cpp start theirs.
struct Started {
  pid_t pid = -1;
  UniqueFd output;
  UniqueFd report;
};

Started start(std::vector<const char*> argv) {
  argv.push_back(nullptr);
  int out[2] = {-1, -1};
  int report[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(report, O_CLOEXEC) != 0) {
    return {};
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::execv(argv[0], const_cast<char* const*>(argv.data()));
    const int err = errno;
    (void)!::write(report[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(report[1]);
  return {.pid = pid, .output = UniqueFd(out[0]), .report = UniqueFd(report[0])};
}

Deadline in_seconds(int seconds) {
  return std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
}

TEST(FinishChild, ReadsTheOutputAndTheExitStatus) {
  const auto child = start({"/bin/sh", "-c", "echo out; exit 3"});
  ASSERT_GT(child.pid, 0);
  std::string text;
  const auto end =
      finish_child("sh", child.pid, child.report.get(), in_seconds(30), child.output.get(), &text, 1024);
  ASSERT_TRUE(end) << end.error().message;
  EXPECT_EQ(text, "out\n");
  EXPECT_FALSE(end->killed_at_deadline);
  ASSERT_TRUE(WIFEXITED(end->status));
  EXPECT_EQ(WEXITSTATUS(end->status), 3);
}

TEST(FinishChild, AFailedExecIsTheError) {
  const auto child = start({"/nonexistent/program"});
  ASSERT_GT(child.pid, 0);
  std::string text;
  const auto end =
      finish_child("program", child.pid, child.report.get(), in_seconds(30), child.output.get(), &text, 1024);
  ASSERT_FALSE(end);
  EXPECT_EQ(end.error().message, "program: exec: No such file or directory");
}

TEST(FinishChild, AChildPastItsDeadlineIsKilledAndReaped) {
  const auto child = start({"/bin/sleep", "60"});
  ASSERT_GT(child.pid, 0);
  const auto began = std::chrono::steady_clock::now();
  const auto end = finish_child("sleep", child.pid, child.report.get(),
                                began + std::chrono::milliseconds(200), child.output.get(), nullptr, 0);
  ASSERT_TRUE(end) << end.error().message;
  EXPECT_TRUE(end->killed_at_deadline);
  EXPECT_TRUE(WIFSIGNALED(end->status));
  EXPECT_EQ(::waitpid(child.pid, nullptr, WNOHANG), -1) << "reaped already";
}

}  // namespace
}  // namespace gpuctk
