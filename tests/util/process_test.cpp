// util::Process: a pid held as a pidfd and its /proc directory, so that what is read about it is about
// that one process, never another that got the same pid after it was reaped.
#include "util/process.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "util/file.hpp"

namespace gpuctk {
namespace {

// A pid that no process has: a child's, after it was reaped.
pid_t gone_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

TEST(Process, ReadsTheFilesOfALiveProcess) {
  const auto self = Process::open(::getpid());
  ASSERT_TRUE(self) << self.error().message;
  EXPECT_EQ(self->pid(), ::getpid());
  EXPECT_GE(self->pidfd(), 0);
  EXPECT_GE(self->proc_dir(), 0);
  EXPECT_EQ(self->proc_path("cgroup"), "/proc/" + std::to_string(::getpid()) + "/cgroup");
  EXPECT_EQ(self->read("cgroup", 1 << 20).value_or("<error>"), read_file("/proc/self/cgroup").value_or("?"));
  EXPECT_EQ(self->read("cgroup", 1).error().message,
            "read /proc/" + std::to_string(::getpid()) + "/cgroup: larger than 1 bytes");
}

TEST(Process, NoSuchProcessIsNamed) {
  const pid_t pid = gone_pid();
  EXPECT_EQ(Process::open(pid).error().message, "process " + std::to_string(pid) + ": No such process");
  EXPECT_EQ(Process::open(0).error().message, "process 0: No such process");
  EXPECT_EQ(Process::open(-1).error().message, "process -1: No such process");
}

// Once the process is gone (reaped: its pid free for another), what was held reads nothing: never the
// files of whichever process gets the pid next.
TEST(Process, AHeldProcessThatIsGoneReadsNothing) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(pid, 0);
  const auto held = Process::open(pid);
  ASSERT_TRUE(held) << held.error().message;
  ASSERT_TRUE(held->read("cgroup", 1 << 20));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(held->read("cgroup", 1 << 20).error().message,
            "read /proc/" + std::to_string(pid) + "/cgroup: No such process");
}

}  // namespace
}  // namespace gpuctk
