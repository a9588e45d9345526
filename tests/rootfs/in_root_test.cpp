#include "rootfs/in_root.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "rootfs/rootfs_test_support.hpp"
#include "rootfs/sandbox.hpp"
#include "support/syscall_filter.hpp"
#include "util/fd.hpp"

namespace gpuctk::rootfs {
namespace {

using test::host_kind;
using test::host_listing;
using test::host_readlink;
using test::make_host_dirs;
using test::make_host_link;
using test::write_host_file;

// Everything readable from an fd opened by open_in_root.
std::string read_all(const UniqueFd& fd) {
  return read_fd(fd.get(), "test fd", 1 << 20).value_or("<read failed>");
}

// The umask for the duration of a scope.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : m_old(::umask(mask)) {}
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;
  ~ScopedUmask() { ::umask(m_old); }

 private:
  mode_t m_old;
};

// A container root at <temp>/rootfs, with a host directory <temp>/host beside it whose files have the
// same names as the root's (a resolution that escapes reads or writes those).
class InRootTest : public testing::TestWithParam<Resolver> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_temp.path().empty());
    m_root_path = m_temp.path() + "/rootfs";
    m_host = m_temp.path() + "/host";
    make_host_dirs(m_root_path);
    write_host_file(m_root_path + "/etc/passwd", "container passwd\n");
    write_host_file(m_host + "/etc/passwd", "host passwd\n");
    auto root = Root::open(m_root_path, GetParam());
    ASSERT_TRUE(root) << root.error().message;
    m_root = std::move(*root);
  }

  [[nodiscard]] std::string at(const std::string& container_path) const {
    return m_root_path + container_path;
  }

  // Whether `fd` is the container root's directory (same inode; fails the test when fstat does).
  [[nodiscard]] bool is_the_root(int fd) const {
    struct stat got {};
    struct stat root {};
    EXPECT_EQ(::fstat(fd, &got), 0);
    EXPECT_EQ(::fstat(m_root.fd(), &root), 0);
    return got.st_ino == root.st_ino;
  }

  // Why Root::open refuses `path` with this test's resolver ("(opened)" when it does not).
  [[nodiscard]] std::string open_error(const std::string& path) const {
    auto root = Root::open(path, GetParam());
    return root ? "(opened)" : root.error().message;
  }

  // What create_symlink did: "created", "unchanged", or "error: " and why it refused.
  [[nodiscard]] std::string create_link(std::string_view target, std::string_view container_link) const {
    auto r = create_symlink(m_root, target, container_link);
    if (!r) {
      return "error: " + r.error().message;
    }
    return *r == LinkResult::created ? "created" : "unchanged";
  }

  // The content of `path` opened inside the root (following links), or the error message.
  [[nodiscard]] std::string read_in_root(std::string_view path) const {
    auto fd = open_in_root(m_root, path, O_RDONLY, FollowLast::yes);
    return fd ? read_all(*fd) : "error: " + fd.error().message;
  }

  test::TempDir m_temp;
  std::string m_root_path;
  std::string m_host;
  Root m_root;
};

INSTANTIATE_TEST_SUITE_P(Resolvers, InRootTest, testing::Values(Resolver::automatic, Resolver::walk),
                         test::resolver_name);

// --- Root::open -----------------------------------------------------------------------------------

TEST_P(InRootTest, RootOpenKeepsPathAndResolver) {
  EXPECT_EQ(m_root.path(), m_root_path);
  EXPECT_EQ(m_root.resolver(), GetParam());
  struct stat opened {};
  struct stat expected {};
  ASSERT_EQ(::fstat(m_root.fd(), &opened), 0);
  ASSERT_EQ(::stat(m_root_path.c_str(), &expected), 0);
  EXPECT_EQ(opened.st_ino, expected.st_ino);
  EXPECT_EQ(::fcntl(m_root.fd(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

TEST_P(InRootTest, RootOpenRefusesTheHostRoot) {
  EXPECT_EQ(open_error("/"), "container root \"/\": refusing the host's root");
  // The same directory by another name is still the host's root.
  EXPECT_EQ(open_error("/usr/.."), "container root \"/usr/..\": refusing the host's root");
}

TEST_P(InRootTest, RootOpenRefusesASymlinkToTheHostRoot) {
  const std::string link = m_temp.path() + "/to-slash";
  make_host_link("/", link);
  EXPECT_EQ(open_error(link), "container root \"" + link + "\": refusing the host's root");
}

TEST_P(InRootTest, RootOpenRefusesEmptyAndRelativePaths) {
  EXPECT_EQ(open_error(""), "container root \"\": not an absolute path");
  EXPECT_EQ(open_error("rootfs"), "container root \"rootfs\": not an absolute path");
}

TEST_P(InRootTest, RootOpenNeedsAnExistingDirectory) {
  EXPECT_EQ(open_error(m_temp.path() + "/missing"),
            "container root " + m_temp.path() + "/missing: No such file or directory");
  EXPECT_EQ(open_error(at("/etc/passwd")), "container root " + at("/etc/passwd") + ": Not a directory");
}

// --- split_container_path ---------------------------------------------------------------------------

TEST(SplitContainerPath, SplitsAbsolutePaths) {
  auto parts = split_container_path("/usr/lib/x");
  ASSERT_TRUE(parts) << parts.error().message;
  EXPECT_EQ(*parts, (std::vector<std::string_view>{"usr", "lib", "x"}));
  auto slash = split_container_path("/");
  ASSERT_TRUE(slash);
  EXPECT_TRUE(slash->empty());
  auto doubled = split_container_path("//usr//lib/");
  ASSERT_TRUE(doubled);
  EXPECT_EQ(*doubled, (std::vector<std::string_view>{"usr", "lib"}));
  // Dots inside a name are fine.
  auto dotted = split_container_path("/a/..b/.c/...");
  ASSERT_TRUE(dotted);
  EXPECT_EQ(*dotted, (std::vector<std::string_view>{"a", "..b", ".c", "..."}));
}

TEST(SplitContainerPath, RefusesDotDot) {
  auto r = split_container_path("/usr/../../etc/passwd");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "\"/usr/../../etc/passwd\": \".\" and \"..\" are not allowed in a container path");
  auto end = split_container_path("/usr/..");
  ASSERT_FALSE(end);
  EXPECT_EQ(end.error().message, "\"/usr/..\": \".\" and \"..\" are not allowed in a container path");
}

TEST(SplitContainerPath, RefusesDot) {
  auto r = split_container_path("/usr/./lib");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "\"/usr/./lib\": \".\" and \"..\" are not allowed in a container path");
}

TEST(SplitContainerPath, RefusesRelativeAndEmptyPaths) {
  auto relative = split_container_path("usr/lib");
  ASSERT_FALSE(relative);
  EXPECT_EQ(relative.error().message, "\"usr/lib\": not an absolute path");
  auto dot = split_container_path("./x");
  ASSERT_FALSE(dot);
  EXPECT_EQ(dot.error().message, "\"./x\": not an absolute path");
  auto empty = split_container_path("");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().message, "\"\": not an absolute path");
}

TEST(SplitContainerPath, RefusesNulAndOverlongPaths) {
  auto nul = split_container_path(std::string_view("/a\0b", 4));
  ASSERT_FALSE(nul);
  EXPECT_EQ(nul.error().message, "\"/a\\x00b\": contains a NUL byte");
  const std::string long_path = "/" + std::string(PATH_MAX, 'a');
  auto overlong = split_container_path(long_path);
  ASSERT_FALSE(overlong);
  EXPECT_EQ(overlong.error().message, "\"/" + std::string(63, 'a') + "\"...: longer than PATH_MAX");
}

// --- open_in_root -----------------------------------------------------------------------------------

TEST_P(InRootTest, OpensPlainPaths) {
  EXPECT_EQ(read_in_root("/etc/passwd"), "container passwd\n");
  EXPECT_EQ(read_in_root("//etc//passwd"), "container passwd\n");
}

TEST_P(InRootTest, AbsoluteSymlinksResolveInsideTheRoot) {
  make_host_link("/etc/passwd", at("/abs-file"));
  make_host_link("/etc", at("/abs-dir"));
  // A link naming the host directory beside the root: inside the root, that path does not exist.
  make_host_link(m_host + "/etc/passwd", at("/host-file"));
  EXPECT_EQ(read_in_root("/abs-file"), "container passwd\n");
  EXPECT_EQ(read_in_root("/abs-dir/passwd"), "container passwd\n");
  EXPECT_EQ(read_in_root("/host-file"),
            "error: /host-file in container root " + m_root_path + ": No such file or directory");
}

// A seccomp profile that does not know openat2 answers EPERM or EINVAL instead of ENOSYS (container
// engines' default profiles did): the automatic resolver then walks, with the same answers, links still
// resolved inside the root. A path's own EPERM stays its error (below: checked without a filter).
TEST(InRootOpenat2, AFilterRefusingOpenat2MakesTheResolverWalk) {
  test::TempDir temp;
  const std::string root_path = temp.path() + "/rootfs";
  write_host_file(root_path + "/etc/passwd", "container passwd\n");
  write_host_file(temp.path() + "/etc/passwd", "host passwd\n");
  make_host_link("/etc/passwd", root_path + "/abs-file");
  make_host_link("../../../etc/passwd", root_path + "/up-file");
  make_host_link(temp.path() + "/etc/passwd", root_path + "/host-file");
  for (const int err : {ENOSYS, EPERM, EINVAL}) {
    const auto outcome = test::run_under_filter(
        {.killed = {}, .kill_sync_opens = false, .failing = {{SYS_openat2, err}}}, [&] {
          auto root = Root::open(root_path, Resolver::automatic);
          if (!root) {
            return 1;
          }
          for (const char* path : {"/abs-file", "/up-file"}) {
            auto fd = open_in_root(*root, path, O_RDONLY, FollowLast::yes);
            if (!fd || read_all(*fd) != "container passwd\n") {
              return 2;
            }
          }
          auto escape = open_in_root(*root, "/host-file", O_RDONLY, FollowLast::yes);
          return escape ? 3 : 0;
        });
    if (outcome == test::FilterOutcome::unavailable) {
      GTEST_SKIP() << "seccomp is not available here";
    }
    EXPECT_EQ(outcome, test::FilterOutcome::clean) << "openat2 failing with " << ::strerrordesc_np(err);
  }
}

// On a busy node every mount and rename anywhere makes openat2 retry a lookup through ".." (EAGAIN); a
// long walk (an image's link chain full of "..") can lose every retry to a node starting containers. The
// automatic resolver then walks that lookup, with the same answers and links still inside the root.
// Here openat2 answers EAGAIN every time (a seccomp filter), as it would under endless mount churn.
TEST(InRootOpenat2, ALookupOpenat2KeepsRetryingIsWalked) {
  test::TempDir temp;
  const std::string root_path = temp.path() + "/rootfs";
  write_host_file(root_path + "/etc/passwd", "container passwd\n");
  write_host_file(temp.path() + "/etc/passwd", "host passwd\n");
  make_host_link("../../../etc/passwd", root_path + "/up-file");
  make_host_link(temp.path() + "/etc/passwd", root_path + "/host-file");
  const auto outcome = test::run_under_filter(
      {.killed = {}, .kill_sync_opens = false, .failing = {{SYS_openat2, EAGAIN}}}, [&] {
        auto root = Root::open(root_path, Resolver::automatic);
        if (!root) {
          return 1;
        }
        for (const char* path : {"/etc/passwd", "/up-file"}) {
          auto fd = open_in_root(*root, path, O_RDONLY, FollowLast::yes);
          if (!fd || read_all(*fd) != "container passwd\n") {
            return 2;
          }
        }
        auto escape = open_in_root(*root, "/host-file", O_RDONLY, FollowLast::yes);
        return escape ? 3 : 0;
      });
  if (outcome == test::FilterOutcome::unavailable) {
    GTEST_SKIP() << "seccomp is not available here";
  }
  EXPECT_EQ(outcome, test::FilterOutcome::clean);
}

TEST_P(InRootTest, RelativeSymlinksResolveInsideTheRoot) {
  write_host_file(at("/usr/lib/x86_64-linux-gnu/libfoo.so.1"), "foo");
  make_host_link("usr/lib", at("/lib"));
  make_host_link("../lib/x86_64-linux-gnu/libfoo.so.1", at("/usr/lib64/libfoo.so"));
  make_host_link("libfoo.so.1", at("/usr/lib/x86_64-linux-gnu/libfoo.so"));
  EXPECT_EQ(read_in_root("/lib/x86_64-linux-gnu/libfoo.so.1"), "foo");
  EXPECT_EQ(read_in_root("/usr/lib64/libfoo.so"), "foo");
  EXPECT_EQ(read_in_root("/lib/x86_64-linux-gnu/libfoo.so"), "foo");
}

TEST_P(InRootTest, DotDotInLinkTextsIsClampedAtTheRoot) {
  make_host_link("../../../../../../../../etc/passwd", at("/usr/up"));
  make_host_link("../../../../../..", at("/usr/lib/top"));
  make_host_link("/..", at("/slash-dotdot"));
  EXPECT_EQ(read_in_root("/usr/up"), "container passwd\n");
  EXPECT_EQ(read_in_root("/usr/lib/top/etc/passwd"), "container passwd\n");
  EXPECT_EQ(read_in_root("/slash-dotdot/etc/passwd"), "container passwd\n");
  // The host directory beside the root has an etc/passwd too: ../host from the root is not it.
  make_host_link("../host/etc/passwd", at("/beside"));
  EXPECT_EQ(read_in_root("/beside"),
            "error: /beside in container root " + m_root_path + ": No such file or directory");
}

TEST_P(InRootTest, ASymlinkToSlashIsTheContainerRoot) {
  make_host_link("/", at("/usr/lib/x86_64-linux-gnu"));
  EXPECT_EQ(read_in_root("/usr/lib/x86_64-linux-gnu/etc/passwd"), "container passwd\n");
  auto fd = open_in_root(m_root, "/usr/lib/x86_64-linux-gnu", O_PATH | O_DIRECTORY, FollowLast::yes);
  ASSERT_TRUE(fd) << fd.error().message;
  EXPECT_TRUE(is_the_root(fd->get()));
}

TEST_P(InRootTest, ALinkLoopIsELOOP) {
  make_host_link("loop2", at("/loop1"));
  make_host_link("/loop1", at("/loop2"));
  make_host_link("self", at("/self"));
  EXPECT_EQ(read_in_root("/loop1"),
            "error: /loop1 in container root " + m_root_path + ": Too many levels of symbolic links");
  EXPECT_EQ(read_in_root("/self/x"),
            "error: /self/x in container root " + m_root_path + ": Too many levels of symbolic links");
}

TEST_P(InRootTest, FollowLastNoOpensTheLinkItself) {
  make_host_link("/etc/passwd", at("/link"));
  auto link = open_in_root(m_root, "/link", O_PATH, FollowLast::no);
  ASSERT_TRUE(link) << link.error().message;
  struct stat st {};
  ASSERT_EQ(::fstat(link->get(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  auto read = open_in_root(m_root, "/link", O_RDONLY, FollowLast::no);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().message,
            "/link in container root " + m_root_path + ": Too many levels of symbolic links");
  // Links before the last component are still followed.
  make_host_link("etc", at("/etc-link"));
  auto through = open_in_root(m_root, "/etc-link/passwd", O_RDONLY, FollowLast::no);
  ASSERT_TRUE(through) << through.error().message;
  EXPECT_EQ(read_all(*through), "container passwd\n");
}

TEST_P(InRootTest, OpenInRootErrorsNameTheContainerPath) {
  EXPECT_EQ(read_in_root("/etc/missing"),
            "error: /etc/missing in container root " + m_root_path + ": No such file or directory");
  EXPECT_EQ(read_in_root("/etc/passwd/x"),
            "error: /etc/passwd/x in container root " + m_root_path + ": Not a directory");
  auto relative = open_in_root(m_root, "etc/passwd", O_RDONLY, FollowLast::yes);
  ASSERT_FALSE(relative);
  EXPECT_EQ(relative.error().message, "\"etc/passwd\": not an absolute path");
  auto dotdot = open_in_root(m_root, "/etc/../etc/passwd", O_RDONLY, FollowLast::yes);
  ASSERT_FALSE(dotdot);
  EXPECT_EQ(dotdot.error().message,
            "\"/etc/../etc/passwd\": \".\" and \"..\" are not allowed in a container path");
}

TEST_P(InRootTest, OpenInRootOfSlashIsTheRoot) {
  auto fd = open_in_root(m_root, "/", O_PATH | O_DIRECTORY, FollowLast::yes);
  ASSERT_TRUE(fd) << fd.error().message;
  EXPECT_TRUE(is_the_root(fd->get()));
  EXPECT_EQ(::fcntl(fd->get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

// --- make_dirs / open_parent ------------------------------------------------------------------------

TEST_P(InRootTest, MakeDirsCreatesMissingParents) {
  const ScopedUmask mask(022);
  auto fd = make_dirs(m_root, "/a/b/c", 0750);
  ASSERT_TRUE(fd) << fd.error().message;
  for (const char* dir : {"/a", "/a/b", "/a/b/c"}) {
    struct stat st {};
    ASSERT_EQ(::lstat(at(dir).c_str(), &st), 0) << dir;
    EXPECT_TRUE(S_ISDIR(st.st_mode)) << dir;
    EXPECT_EQ(st.st_mode & 07777, 0750U) << dir;
  }
  struct stat got {};
  struct stat want {};
  ASSERT_EQ(::fstat(fd->get(), &got), 0);
  ASSERT_EQ(::stat(at("/a/b/c").c_str(), &want), 0);
  EXPECT_EQ(got.st_ino, want.st_ino);
  // Existing directories are fine.
  auto again = make_dirs(m_root, "/a/b", 0700);
  ASSERT_TRUE(again) << again.error().message;
  struct stat kept {};
  ASSERT_EQ(::stat(at("/a/b").c_str(), &kept), 0);
  EXPECT_EQ(kept.st_mode & 07777, 0750U);
}

TEST_P(InRootTest, MakeDirsFollowsLinksInsideTheRoot) {
  make_host_dirs(at("/usr/lib"));
  make_host_link("usr/lib", at("/lib"));
  make_host_link("/", at("/slash"));
  ASSERT_TRUE(make_dirs(m_root, "/lib/x86_64-linux-gnu", 0755));
  EXPECT_EQ(host_kind(at("/usr/lib/x86_64-linux-gnu")), "dir");
  EXPECT_EQ(host_kind(at("/lib")), "link");
  ASSERT_TRUE(make_dirs(m_root, "/slash/new", 0755));
  EXPECT_EQ(host_kind(at("/new")), "dir");
}

TEST_P(InRootTest, MakeDirsRefusesADanglingLink) {
  make_host_link("/nonexistent/dir", at("/dangling"));
  auto fd = make_dirs(m_root, "/dangling/x", 0755);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().message, "/dangling in container root " + m_root_path + ": Not a directory");
  EXPECT_EQ(host_kind(at("/nonexistent")), "missing");
  EXPECT_EQ(host_readlink(at("/dangling")), "/nonexistent/dir");
}

TEST_P(InRootTest, MakeDirsRefusesAFile) {
  auto fd = make_dirs(m_root, "/etc/passwd/x", 0755);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().message, "/etc/passwd in container root " + m_root_path + ": Not a directory");
  auto last = make_dirs(m_root, "/etc/passwd", 0755);
  ASSERT_FALSE(last);
  EXPECT_EQ(last.error().message, "/etc/passwd in container root " + m_root_path + ": Not a directory");
  EXPECT_EQ(read_file(at("/etc/passwd")).value_or(""), "container passwd\n");
}

TEST_P(InRootTest, MakeDirsRefusesDotDot) {
  auto fd = make_dirs(m_root, "/a/../../b", 0755);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().message, "\"/a/../../b\": \".\" and \"..\" are not allowed in a container path");
  EXPECT_EQ(host_kind(at("/a")), "missing");
}

TEST_P(InRootTest, OpenParentGivesTheDirectoryAndName) {
  auto parent = open_parent(m_root, "/x/y/file.conf", 0755);
  ASSERT_TRUE(parent) << parent.error().message;
  EXPECT_EQ(parent->name, "file.conf");
  EXPECT_EQ(host_kind(at("/x/y")), "dir");
  EXPECT_EQ(host_kind(at("/x/y/file.conf")), "missing");
  struct stat got {};
  struct stat want {};
  ASSERT_EQ(::fstat(parent->dir.get(), &got), 0);
  ASSERT_EQ(::stat(at("/x/y").c_str(), &want), 0);
  EXPECT_EQ(got.st_ino, want.st_ino);
  auto top = open_parent(m_root, "/top", 0755);
  ASSERT_TRUE(top) << top.error().message;
  EXPECT_EQ(top->name, "top");
}

TEST_P(InRootTest, OpenParentRefusesTheRootAndDotDot) {
  auto root = open_parent(m_root, "/", 0755);
  ASSERT_FALSE(root);
  EXPECT_EQ(root.error().message, "/ in container root " + m_root_path + ": is the root itself");
  auto dotdot = open_parent(m_root, "/etc/..", 0755);
  ASSERT_FALSE(dotdot);
  EXPECT_EQ(dotdot.error().message, "\"/etc/..\": \".\" and \"..\" are not allowed in a container path");
}

// --- write_file -------------------------------------------------------------------------------------

TEST_P(InRootTest, WriteFileCreatesAFileWithItsModeDespiteTheUmask) {
  const ScopedUmask mask(077);
  ASSERT_TRUE(write_file(m_root, "/etc/ld.so.conf.d/a.conf", "/usr/lib/a\n", 0644));
  EXPECT_EQ(read_file(at("/etc/ld.so.conf.d/a.conf")).value_or(""), "/usr/lib/a\n");
  struct stat st {};
  ASSERT_EQ(::lstat(at("/etc/ld.so.conf.d/a.conf").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0644U);
  // The missing parent was created with 0755 (less the umask: it is mkdir's mode).
  EXPECT_EQ(host_kind(at("/etc/ld.so.conf.d")), "dir");
  EXPECT_EQ(host_listing(at("/etc/ld.so.conf.d")), (std::vector<std::string>{"a.conf"}));
}

TEST_P(InRootTest, WriteFileReplacesAtomically) {
  write_host_file(at("/etc/x.conf"), "old content that is longer\n", 0600);
  struct stat before {};
  ASSERT_EQ(::stat(at("/etc/x.conf").c_str(), &before), 0);
  // A reader holding the old file keeps the old content: the new one is a new inode renamed in.
  const int old_fd = ::open(at("/etc/x.conf").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(old_fd, 0);
  const UniqueFd old_file(old_fd);
  ASSERT_TRUE(write_file(m_root, "/etc/x.conf", "new\n", 0644));
  EXPECT_EQ(read_file(at("/etc/x.conf")).value_or(""), "new\n");
  struct stat after {};
  ASSERT_EQ(::stat(at("/etc/x.conf").c_str(), &after), 0);
  EXPECT_NE(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mode & 07777, 0644U);
  EXPECT_EQ(read_all(old_file), "old content that is longer\n");
  EXPECT_EQ(host_listing(at("/etc")), (std::vector<std::string>{"passwd", "x.conf"}));
}

TEST_P(InRootTest, WriteFileReplacesASymlinkInsteadOfFollowingIt) {
  // A link to a host file by its host path, and one to a file inside the root.
  const std::string host_file = m_host + "/target";
  write_host_file(host_file, "host file\n");
  make_host_link(host_file, at("/etc/host-link"));
  make_host_link("passwd", at("/etc/inner-link"));
  ASSERT_TRUE(write_file(m_root, "/etc/host-link", "one\n", 0644));
  ASSERT_TRUE(write_file(m_root, "/etc/inner-link", "two\n", 0644));
  EXPECT_EQ(host_kind(at("/etc/host-link")), "file");
  EXPECT_EQ(host_kind(at("/etc/inner-link")), "file");
  EXPECT_EQ(read_file(at("/etc/host-link")).value_or(""), "one\n");
  EXPECT_EQ(read_file(at("/etc/inner-link")).value_or(""), "two\n");
  EXPECT_EQ(read_file(host_file).value_or(""), "host file\n");
  EXPECT_EQ(read_file(at("/etc/passwd")).value_or(""), "container passwd\n");
}

TEST_P(InRootTest, WriteFileOnADirectoryIsAnErrorAndLeavesNothing) {
  make_host_dirs(at("/etc/ld.so.cache"));
  write_host_file(at("/etc/ld.so.cache/inside"), "x");
  const auto before = host_listing(at("/etc"));
  auto r = write_file(m_root, "/etc/ld.so.cache", "cache", 0644);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "write /etc/ld.so.cache in container root " + m_root_path + ": Is a directory");
  EXPECT_EQ(host_listing(at("/etc")), before);
  EXPECT_EQ(host_listing(at("/etc/ld.so.cache")), (std::vector<std::string>{"inside"}));
}

TEST_P(InRootTest, WriteFileThroughParentLinksStaysInTheRoot) {
  // The parent is a link to the host directory by its host path: inside the root that is a new path.
  make_host_dirs(m_host + "/conf");
  make_host_link(m_host + "/conf", at("/etc/conf.d"));
  auto r = write_file(m_root, "/etc/conf.d/x.conf", "x\n", 0644);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "/etc/conf.d in container root " + m_root_path + ": Not a directory");
  EXPECT_EQ(host_listing(m_host + "/conf"), std::vector<std::string>{});
  // The parent is a link to "/": the file lands at the top of the root.
  make_host_link("/", at("/etc/top"));
  ASSERT_TRUE(write_file(m_root, "/etc/top/x.conf", "top\n", 0644));
  EXPECT_EQ(read_file(at("/x.conf")).value_or(""), "top\n");
}

TEST_P(InRootTest, WriteFileRefusesDotDotAndTheRoot) {
  auto dotdot = write_file(m_root, "/etc/../../x", "x", 0644);
  ASSERT_FALSE(dotdot);
  EXPECT_EQ(dotdot.error().message, "\"/etc/../../x\": \".\" and \"..\" are not allowed in a container path");
  auto root = write_file(m_root, "/", "x", 0644);
  ASSERT_FALSE(root);
  EXPECT_EQ(root.error().message, "/ in container root " + m_root_path + ": is the root itself");
}

// --- create_symlink ---------------------------------------------------------------------------------

TEST_P(InRootTest, CreateSymlinkCreatesItAndItsParents) {
  EXPECT_EQ(create_link("libcuda.so.550.54.15", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"), "created");
  EXPECT_EQ(host_readlink(at("/usr/lib/x86_64-linux-gnu/libcuda.so.1")), "libcuda.so.550.54.15");
  EXPECT_EQ(host_listing(at("/usr/lib/x86_64-linux-gnu")), (std::vector<std::string>{"libcuda.so.1"}));
}

TEST_P(InRootTest, CreateSymlinkLeavesTheSameLinkAlone) {
  make_host_link("target", at("/l"));
  struct stat before {};
  ASSERT_EQ(::lstat(at("/l").c_str(), &before), 0);
  EXPECT_EQ(create_link("target", "/l"), "unchanged");
  struct stat after {};
  ASSERT_EQ(::lstat(at("/l").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
}

TEST_P(InRootTest, CreateSymlinkReplacesARegularFile) {
  write_host_file(at("/usr/lib/libcuda.so"), "a file in the image");
  EXPECT_EQ(create_link("libcuda.so.1", "/usr/lib/libcuda.so"), "created");
  EXPECT_EQ(host_readlink(at("/usr/lib/libcuda.so")), "libcuda.so.1");
  EXPECT_EQ(host_listing(at("/usr/lib")), (std::vector<std::string>{"libcuda.so"}));
}

TEST_P(InRootTest, CreateSymlinkReplacesALinkWithAnotherTarget) {
  const std::string host_file = m_host + "/victim";
  write_host_file(host_file, "host\n");
  make_host_link(host_file, at("/l"));
  EXPECT_EQ(create_link("new-target", "/l"), "created");
  EXPECT_EQ(host_readlink(at("/l")), "new-target");
  EXPECT_EQ(read_file(host_file).value_or(""), "host\n");
  EXPECT_EQ(host_kind(host_file), "file");
}

TEST_P(InRootTest, CreateSymlinkRefusesADirectory) {
  make_host_dirs(at("/dev/dri/by-path"));
  EXPECT_EQ(create_link("../card0", "/dev/dri/by-path"),
            "error: create link /dev/dri/by-path in container root " + m_root_path + ": Is a directory");
  EXPECT_EQ(host_kind(at("/dev/dri/by-path")), "dir");
  EXPECT_EQ(host_listing(at("/dev/dri")), (std::vector<std::string>{"by-path"}));
}

TEST_P(InRootTest, CreateSymlinkStoresTheTargetVerbatim) {
  for (const std::string target : {"../x", "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                   "../../../../../../etc/shadow", "/proc/self/root", "a//b/./c"}) {
    EXPECT_EQ(create_link(target, "/links/l"), "created") << target;
    EXPECT_EQ(host_readlink(at("/links/l")), target);
  }
  EXPECT_EQ(host_listing(at("/links")), (std::vector<std::string>{"l"}));
}

TEST_P(InRootTest, CreateSymlinkRefusesBadTargetsAndLinks) {
  EXPECT_EQ(create_link("", "/l"), "error: link \"/l\": bad target \"\"");
  EXPECT_EQ(create_link(std::string_view("a\0b", 3), "/l"), "error: link \"/l\": bad target \"a\\x00b\"");
  EXPECT_EQ(create_link("x", "/usr/../../etc/passwd"),
            "error: \"/usr/../../etc/passwd\": \".\" and \"..\" are not allowed in a container path");
  EXPECT_EQ(create_link("x", "etc/l"), "error: \"etc/l\": not an absolute path");
  EXPECT_EQ(host_listing(m_root_path), (std::vector<std::string>{"etc"}));
}

TEST_P(InRootTest, CreateSymlinkThroughALinkedParentStaysInTheRoot) {
  make_host_dirs(at("/usr/lib"));
  make_host_link("usr/lib", at("/lib"));
  ASSERT_EQ(create_link("t", "/lib/x"), "created");
  EXPECT_EQ(host_readlink(at("/usr/lib/x")), "t");
  make_host_link("../../../..", at("/up"));
  ASSERT_EQ(create_link("t", "/up/y"), "created");
  EXPECT_EQ(host_readlink(at("/y")), "t");
  EXPECT_EQ(host_listing(m_temp.path()), (std::vector<std::string>{"host", "rootfs"}));
}

// --- temporary_name ---------------------------------------------------------------------------------

TEST(TemporaryName, IsHiddenBesideTheNameWithRandomHex) {
  const std::string a = temporary_name("ld.so.cache");
  const std::string b = temporary_name("ld.so.cache");
  EXPECT_TRUE(std::regex_match(a, std::regex(R"(\.ld\.so\.cache\.gpuctk-[0-9a-f]{12})"))) << a;
  EXPECT_NE(a, b);
  // Long names are cut so the temporary name stays within NAME_MAX.
  const std::string long_name(255, 'n');
  EXPECT_LE(temporary_name(long_name).size(), 255U);
}

// --- remove_file ------------------------------------------------------------------------------------

TEST_P(InRootTest, RemoveFileRemovesFilesAndLinksButNeverFollowsThem) {
  const std::string host_file = m_temp.write("host/victim", "host\n");
  write_host_file(at("/x/a.conf"), "a");
  make_host_link(host_file, at("/x/link.conf"));
  make_host_link("a.conf", at("/x/inner.conf"));
  const Root& root = m_root;
  ASSERT_TRUE(remove_file(root, "/x/link.conf"));
  ASSERT_TRUE(remove_file(root, "/x/inner.conf"));
  EXPECT_EQ(host_listing(at("/x")), std::vector<std::string>{"a.conf"});
  EXPECT_EQ(read_file(host_file).value_or(""), "host\n");
  ASSERT_TRUE(remove_file(root, "/x/a.conf"));
  EXPECT_EQ(host_listing(at("/x")), std::vector<std::string>{});
}

TEST_P(InRootTest, RemoveFileOfSomethingMissingIsFine) {
  const Root& root = m_root;
  EXPECT_TRUE(remove_file(root, "/x/missing"));
  make_host_dirs(at("/x"));
  EXPECT_TRUE(remove_file(root, "/x/missing"));
  EXPECT_EQ(host_listing(m_root_path), (std::vector<std::string>{"etc", "x"}));
}

TEST_P(InRootTest, RemoveFileRefusesTheRootDirectoriesAndDotDot) {
  make_host_dirs(at("/x/d"));
  const Root& root = m_root;
  auto slash = remove_file(root, "/");
  ASSERT_FALSE(slash);
  EXPECT_EQ(slash.error().message, "remove /: is the root");
  auto dir = remove_file(root, "/x/d");
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().message, "remove /x/d in container root " + m_root_path + ": Is a directory");
  auto dotdot = remove_file(root, "/x/../x/d");
  ASSERT_FALSE(dotdot);
  EXPECT_EQ(dotdot.error().message, "\"/x/../x/d\": \".\" and \"..\" are not allowed in a container path");
  EXPECT_EQ(host_kind(at("/x/d")), "dir");
}

TEST_P(InRootTest, RemoveFileThroughAParentLinkStaysInTheRoot) {
  const std::string host_file = m_temp.write("host/etc/x.conf", "host\n");
  make_host_link(m_temp.path() + "/host/etc", at("/x"));
  make_host_link("../../../../..", at("/up"));
  const Root& root = m_root;
  EXPECT_TRUE(remove_file(root, "/x/x.conf"));
  EXPECT_TRUE(remove_file(root, "/up/host/etc/x.conf"));
  EXPECT_EQ(read_file(host_file).value_or(""), "host\n");
}

// --- read_image_file ------------------------------------------------------------------------------

TEST_P(InRootTest, ReadImageFileTellsMissingDirectoryAndRegularApart) {
  const Root& root = m_root;
  ImageBudget budget(k_sandbox_deadline);
  write_host_file(at("/etc/file"), "text");
  make_host_link("file", at("/etc/link"));
  make_host_link("/missing", at("/etc/dangling"));
  make_host_link("loop", at("/etc/loop"));
  auto file = read_image_file(root, "/etc/link", 100, budget);
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->kind, FileKind::regular);
  EXPECT_EQ(file->text, "text");
  for (const char* missing : {"/etc/none", "/etc/dangling", "/etc/loop", "/etc/file/x"}) {
    auto r = read_image_file(root, missing, 100, budget);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->kind, FileKind::missing) << missing;
  }
  auto dir = read_image_file(root, "/etc", 100, budget);
  ASSERT_TRUE(dir) << dir.error().message;
  EXPECT_EQ(dir->kind, FileKind::directory);
  auto large = read_image_file(root, "/etc/file", 3, budget);
  ASSERT_FALSE(large);
  EXPECT_EQ(large.error().message,
            "read /etc/file in container root " + m_root_path + ": larger than 3 bytes");
}

}  // namespace
}  // namespace gpuctk::rootfs
