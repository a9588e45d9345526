// util::Process: a pid held as a pidfd and its /proc directory, so that what is read about it is about
// that one process, never another that got the same pid after it was reaped.
#include "util/process.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "support/process_support.hpp"
#include "util/file.hpp"

namespace gpuctk {
namespace {

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
  const pid_t pid = test::gone_process().pid;
  EXPECT_EQ(Process::open(pid).error().message, "process " + std::to_string(pid) + ": No such process");
  EXPECT_EQ(Process::open(0).error().message, "process 0: No such process");
  EXPECT_EQ(Process::open(-1).error().message, "process -1: No such process");
}

// Once the process is gone (reaped: its pid free for another), what was held reads nothing: never the
// files of whichever process gets the pid next.
TEST(Process, AHeldProcessThatIsGoneReadsNothing) {
  const auto gone = test::gone_process();
  ASSERT_TRUE(gone.held) << gone.held.error().message;
  EXPECT_EQ(gone.held->read("cgroup", 1 << 20).error().message,
            "read /proc/" + std::to_string(gone.pid) + "/cgroup: No such process");
}

}  // namespace
}  // namespace gpuctk
