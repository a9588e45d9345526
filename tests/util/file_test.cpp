#include "util/file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/syscall_filter.hpp"
#include "support/temp_dir_test.hpp"
#include "util/fd.hpp"

namespace gpuctk {
namespace {

namespace fs = std::filesystem;

class FileTest : public test::TempDirTest {
 protected:
  FileTest() : TempDirTest("gpuctk-file") {}

  [[nodiscard]] size_t entries() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(m_dir), fs::directory_iterator{}));
  }
};

TEST_F(FileTest, ReadFileNamesThePathOnError) {
  const auto missing = (fs::path(m_dir) / "nope").string();
  const auto result = read_file(missing);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "read " + missing + ": No such file or directory");
}

TEST_F(FileTest, AtomicWriteCreatesFileWithModeAndNoLeftovers) {
  const auto path = (fs::path(m_dir) / "spec.yaml").string();
  ::umask(022);
  ASSERT_TRUE(write_file_atomic(path, "hello\n", 0644));
  EXPECT_EQ(read_file(path).value(), "hello\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(entries(), 1u);
}

TEST_F(FileTest, AtomicWriteReplacesWholeFileAndSetsModeEvenUnderStrictUmask) {
  const auto path = (fs::path(m_dir) / "config.json").string();
  ASSERT_TRUE(write_file_atomic(path, std::string(100000, 'a'), 0600));
  const mode_t old_mask = ::umask(077);
  ASSERT_TRUE(write_file_atomic(path, "short", 0644));
  ::umask(old_mask);
  EXPECT_EQ(read_file(path).value(), "short");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(entries(), 1u);
}

TEST_F(FileTest, AtomicWriteFailureLeavesOldFileAndNoTemporary) {
  // Renaming a file over a non-empty directory fails after the temporary file was written.
  const auto target = fs::path(m_dir) / "taken";
  fs::create_directory(target);
  std::ofstream(target / "keep") << "x";
  const auto result = write_file_atomic(target.string(), "data", 0644);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("write " + target.string() + ": rename: "), std::string::npos)
      << result.error().message;
  EXPECT_TRUE(fs::is_directory(target));
  EXPECT_EQ(entries(), 1u);
}

TEST_F(FileTest, AtomicWriteIntoMissingDirectoryNamesTheDirectory) {
  const auto path = (fs::path(m_dir) / "missing" / "x.yaml").string();
  const auto result = write_file_atomic(path, "data", 0644);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "write " + path + ": create temporary file in " +
                                        (fs::path(m_dir) / "missing").string() +
                                        ": No such file or directory");
}

TEST_F(FileTest, AtomicOnlyWriteNeverFlushesToDisk) {
  const auto path = (fs::path(m_dir) / "config.json").string();
  ASSERT_TRUE(write_file_atomic(path, "old", 0644));
  const auto outcome = test::run_under_filter(test::forbid_sync(), [&] {
    return write_file_atomic(path, "new", 0640, Durability::atomic_only) ? 0 : 1;
  });
  if (outcome == test::FilterOutcome::unavailable) {
    GTEST_SKIP() << "seccomp is not available here";
  }
  EXPECT_EQ(outcome, test::FilterOutcome::clean) << test::to_string(outcome);
  EXPECT_EQ(read_file(path).value(), "new");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(FileTest, DurableWriteFlushesToDisk) {
  // The other side of the test above: the filter does catch the fsync of a durable write (the default).
  const auto path = (fs::path(m_dir) / "spec.yaml").string();
  const auto outcome =
      test::run_under_filter(test::forbid_sync(), [&] { return write_file_atomic(path, "x", 0644) ? 0 : 1; });
  if (outcome == test::FilterOutcome::unavailable) {
    GTEST_SKIP() << "seccomp is not available here";
  }
  EXPECT_EQ(outcome, test::FilterOutcome::killed) << test::to_string(outcome);
}

TEST_F(FileTest, ContentWriteFlushesTheFile) {
  // Durability::content syncs the new content before the rename (the DRA plugin's checkpoint must never
  // be empty after a power cut), unlike atomic_only above.
  const auto path = (fs::path(m_dir) / "checkpoint.json").string();
  const auto outcome = test::run_under_filter(
      test::forbid_sync(), [&] { return write_file_atomic(path, "x", 0600, Durability::content) ? 0 : 1; });
  if (outcome == test::FilterOutcome::unavailable) {
    GTEST_SKIP() << "seccomp is not available here";
  }
  EXPECT_EQ(outcome, test::FilterOutcome::killed) << test::to_string(outcome);
}

TEST_F(FileTest, AtomicWriteReplacesASymlinkAndNeverWritesItsTarget) {
  const auto outside = (fs::path(m_dir) / "host-file").string();
  ASSERT_TRUE(write_file_atomic(outside, "host", 0600));
  const auto path = (fs::path(m_dir) / "config.json").string();
  ASSERT_EQ(::symlink(outside.c_str(), path.c_str()), 0);
  ASSERT_TRUE(write_file_atomic(path, "new", 0644, Durability::atomic_only));
  EXPECT_EQ(read_file(outside).value(), "host");
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(read_file(path).value(), "new");
}

TEST_F(FileTest, AtomicWriteGivesTheFileItsOwnerOnTheFdNeverByPath) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root to give a file away";
  }
  const auto path = (fs::path(m_dir) / "config.json").string();
  // A set-id bit survives the chown: the mode is set after it.
  const auto outcome = test::run_under_filter(test::forbid_path_chown(), [&] {
    return write_file_atomic(path, "x", 02640, Durability::atomic_only, FileOwner{4321, 8765}) ? 0 : 1;
  });
  if (outcome == test::FilterOutcome::unavailable) {
    GTEST_SKIP() << "seccomp is not available here";
  }
  ASSERT_EQ(outcome, test::FilterOutcome::clean) << test::to_string(outcome);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 4321u);
  EXPECT_EQ(st.st_gid, 8765u);
  EXPECT_EQ(st.st_mode & 07777, 02640u);
}

// A device node is refused without being opened (watched with inotify: before, the open came first and
// the type check after it, so host root opened whatever node a bundle held).
TEST_F(FileTest, ReadNofollowRefusesLinksFifosDevicesAndOversizedFilesWithoutOpeningThem) {
  const auto target = (fs::path(m_dir) / "target").string();
  ASSERT_TRUE(write_file_atomic(target, "0123456789", 0644));
  const auto link = (fs::path(m_dir) / "link").string();
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  const auto linked = read_file_nofollow(link, 100);
  ASSERT_FALSE(linked);
  EXPECT_EQ(linked.error().message, "read " + link + ": Too many levels of symbolic links");
  if (::geteuid() == 0) {
    const auto device = (fs::path(m_dir) / "device").string();
    ASSERT_EQ(::mknod(device.c_str(), S_IFCHR | 0600, ::makedev(1, 3)), 0);
    const UniqueFd watch(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    ASSERT_TRUE(watch);
    ASSERT_GE(::inotify_add_watch(watch.get(), device.c_str(), IN_OPEN), 0);
    const auto node = read_file_nofollow(device, 100);
    ASSERT_FALSE(node);
    EXPECT_EQ(node.error().message, "read " + device + ": not a regular file");
    char events[256];
    EXPECT_EQ(::read(watch.get(), events, sizeof events), -1) << "the device node was opened";
  }
  // A FIFO without a writer would block a plain open forever.
  const auto fifo = (fs::path(m_dir) / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto piped = read_file_nofollow(fifo, 100);
  ASSERT_FALSE(piped);
  EXPECT_EQ(piped.error().message, "read " + fifo + ": not a regular file");
  const auto large = read_file_nofollow(target, 9);
  ASSERT_FALSE(large);
  EXPECT_EQ(large.error().message, "read " + target + ": larger than 9 bytes");
  EXPECT_EQ(read_file_nofollow(target, 10).value(), "0123456789");
}

// open_regular_at opens nothing but a regular file: a link, a FIFO (whose open could block), a device node
// (whose open can have effects; watched with inotify) or a socket is looked up with O_PATH and refused.
TEST_F(FileTest, OpenRegularAtOpensNothingElse) {
  const auto dir_path = m_dir;
  ASSERT_TRUE(write_file_atomic(dir_path + "/file", "bytes", 0600));
  ASSERT_EQ(::symlink("file", (dir_path + "/link").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir_path + "/fifo").c_str(), 0600), 0);
  const bool root = ::geteuid() == 0;
  const UniqueFd watch(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  ASSERT_TRUE(watch);
  if (root) {
    ASSERT_EQ(::mknod((dir_path + "/device").c_str(), S_IFCHR | 0600, ::makedev(1, 3)), 0);
    ASSERT_GE(::inotify_add_watch(watch.get(), (dir_path + "/device").c_str(), IN_OPEN), 0);
  }
  const UniqueFd dir(::open(dir_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir);
  std::string report;
  for (const char* name : {"file", "link", "fifo", "device", "missing"}) {
    if (name == std::string("device") && !root) {
      report += "device: not a regular file\n";  // only root makes device nodes
      continue;
    }
    const auto fd = open_regular_at(dir.get(), name, name);
    report += fd ? std::string(name) + ": " + read_fd(fd->get(), name, 100).value_or("?") + "\n"
                 : fd.error().message + "\n";
  }
  EXPECT_EQ(report,
            "file: bytes\nlink: not a regular file\nfifo: not a regular file\ndevice: not a regular "
            "file\nmissing: No such file or directory\n");
  char events[256];
  EXPECT_EQ(::read(watch.get(), events, sizeof events), -1) << "the device node was opened";
}

// install copies this process's executable and cdi generate writes its path into a spec: once the file
// was replaced (a package upgrade), /proc/self/exe names a file that is gone.
TEST(SelfExe, AReplacedExecutableIsAnError) {
  EXPECT_TRUE(check_self_not_replaced(self_exe_path().value()));
  EXPECT_EQ(check_self_not_replaced("/usr/bin/gpuctk (deleted)").error().message,
            "this gpuctk (/usr/bin/gpuctk (deleted)) was replaced since it started");
}

}  // namespace
}  // namespace gpuctk
