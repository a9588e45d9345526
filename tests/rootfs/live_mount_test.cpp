// Mounting into a running container (rootfs/live_mount.hpp): bind options, the mountinfo table and its
// shared-mount refusal, attaching host trees and making device nodes inside a container root, entering
// another process's mount namespace. Everything that mounts runs in a forked child in its own mount
// namespace with every mount private, so nothing reaches the test process or the host; the children
// report back through a pipe (test::in_child).
#include "rootfs/live_mount.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "rootfs/rootfs_test_support.hpp"
#include "support/process_support.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::rootfs {
namespace {

using test::host_kind;
using test::make_host_dirs;
using test::make_host_link;
using test::WaitingChild;
using test::write_host_file;

// Fails the calling test (not a skip: a skip does not count as passing) when this process cannot mount.
::testing::AssertionResult can_mount() {
  if (::geteuid() != 0) {
    return ::testing::AssertionFailure()
           << "this test needs root (CI runs the suite as root): it unshares a mount namespace, mounts and "
              "makes device nodes; run gpuctk_tests as root";
  }
  if (!test::can_unshare_mounts()) {
    return ::testing::AssertionFailure()
           << "this test needs a private mount namespace (unshare(CLONE_NEWNS) and making / rprivate failed)";
  }
  return ::testing::AssertionSuccess();
}

// The errno text of `fn` failing, or `ok` when it did not fail.
std::string errno_text(int rc, std::string_view ok = "ok") {
  return rc < 0 ? std::strerror(errno) : std::string(ok);
}

// Opening `path` for writing: "writable" or the errno text.
std::string write_access(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::strerror(errno);
  }
  const ssize_t n = ::write(fd, "x", 1);
  const int err = errno;
  ::close(fd);
  return n == 1 ? "writable" : std::string("write: ") + std::strerror(err);
}

// The fields of this process's /proc/self/mountinfo line for the mount at `mount_point` (the last,
// topmost one): "<ro|rw> [nosuid] [nodev] [noexec] <private|shared:N ...>"; "<no mount>" when none.
std::string mount_flags(const std::string& mount_point) {
  const auto text = read_file("/proc/self/mountinfo", 16 << 20);
  if (!text) {
    return "<" + text.error().message + ">";
  }
  std::string found = "<no mount>";
  for (const auto line : split(*text, '\n')) {
    const auto fields = split(line, ' ');
    if (fields.size() < 7 || fields[4] != mount_point) {
      continue;
    }
    std::set<std::string_view> options;
    for (const auto option : split(fields[5], ',')) {
      options.insert(option);
    }
    std::string out = options.contains("ro") ? "ro" : "rw";
    for (const char* flag : {"nosuid", "nodev", "noexec"}) {
      if (options.contains(flag)) {
        out += std::string(" ") + flag;
      }
    }
    std::string propagation;
    for (size_t i = 6; i < fields.size() && fields[i] != "-"; ++i) {
      propagation += " " + std::string(fields[i]);
    }
    found = out + (propagation.empty() ? " private" : propagation);
  }
  return found;
}

// How many mounts of this namespace are at or below `dir`.
size_t mounts_under(const std::string& dir) {
  const auto text = read_file("/proc/self/mountinfo", 16 << 20).value_or("");
  size_t count = 0;
  for (const auto line : split(text, '\n')) {
    const auto fields = split(line, ' ');
    if (fields.size() >= 7 && (fields[4] == dir || fields[4].starts_with(dir + "/"))) {
      ++count;
    }
  }
  return count;
}

// The permission bits of the host path `path` ("0644"), or the errno text.
std::string mode_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return std::strerror(errno);
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return mode;
}

// "c 1:3 0666 1000:1000" for the host path `path`, or the errno text.
std::string node_text(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return std::strerror(errno);
  }
  const char* type = S_ISCHR(st.st_mode) ? "c" : S_ISBLK(st.st_mode) ? "b" : S_ISREG(st.st_mode) ? "f" : "?";
  return std::string(type) + " " + std::to_string(major(st.st_rdev)) + ":" +
         std::to_string(minor(st.st_rdev)) + " " + mode_of(path) + " " + std::to_string(st.st_uid) + ":" +
         std::to_string(st.st_gid);
}

// The mount id of the object `fd` refers to (statx).
uint64_t mount_id_of(int fd) {
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) != 0) {
    return 0;
  }
  return stx.stx_mnt_id;
}

// ---- parse_bind_options ----------------------------------------------------------------------------

// "recursive=<0|1> attributes=<hex>" or the error.
std::string parsed(const std::vector<std::string>& options, std::string_view type = "") {
  const auto result = parse_bind_options(options, type);
  if (!result) {
    return result.error().message;
  }
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(result->attributes));
  return std::string("recursive=") + (result->recursive ? "1" : "0") + " attributes=" + hex;
}

std::string attrs(bool recursive, uint64_t attributes) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(attributes));
  return std::string("recursive=") + (recursive ? "1" : "0") + " attributes=" + hex;
}

TEST(LiveMountOptions, ReadOnlyNosuidNodevBind) {
  EXPECT_EQ(parsed({"ro", "nosuid", "nodev", "bind"}),
            attrs(false, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  EXPECT_EQ(parsed({"bind", "noexec"}, "bind"), attrs(false, MOUNT_ATTR_NOEXEC));
  EXPECT_EQ(parsed({"bind"}, "none"), attrs(false, 0));
  EXPECT_EQ(parsed({"bind"}), attrs(false, 0));
}

TEST(LiveMountOptions, RbindIsRecursive) {
  EXPECT_EQ(parsed({"rbind"}), attrs(true, 0));
  EXPECT_EQ(parsed({"rbind", "ro"}), attrs(true, MOUNT_ATTR_RDONLY));
  // Both words: rbind wins, whatever the order.
  EXPECT_EQ(parsed({"rbind", "bind"}), attrs(true, 0));
  EXPECT_EQ(parsed({"bind", "rbind"}), attrs(true, 0));
}

TEST(LiveMountOptions, ALaterWordUndoesAnEarlierOne) {
  EXPECT_EQ(parsed({"bind", "ro", "rw"}), attrs(false, 0));
  EXPECT_EQ(parsed({"bind", "rw", "ro"}), attrs(false, MOUNT_ATTR_RDONLY));
  EXPECT_EQ(parsed({"bind", "nosuid", "suid"}), attrs(false, 0));
  EXPECT_EQ(parsed({"bind", "nodev", "dev"}), attrs(false, 0));
  EXPECT_EQ(parsed({"bind", "noexec", "exec"}), attrs(false, 0));
  EXPECT_EQ(parsed({"bind", "ro", "nosuid", "nodev", "noexec", "rw"}),
            attrs(false, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC));
}

TEST(LiveMountOptions, AccessTimeWordsReplaceEachOther) {
  EXPECT_EQ(parsed({"bind", "noatime"}), attrs(false, MOUNT_ATTR_NOATIME));
  EXPECT_EQ(parsed({"bind", "strictatime"}), attrs(false, MOUNT_ATTR_STRICTATIME));
  EXPECT_EQ(parsed({"bind", "relatime"}), attrs(false, MOUNT_ATTR_RELATIME));
  EXPECT_EQ(parsed({"bind", "noatime", "strictatime"}), attrs(false, MOUNT_ATTR_STRICTATIME));
  EXPECT_EQ(parsed({"bind", "strictatime", "noatime"}), attrs(false, MOUNT_ATTR_NOATIME));
  EXPECT_EQ(parsed({"bind", "noatime", "relatime"}), attrs(false, MOUNT_ATTR_RELATIME));
  // nodiratime is its own flag, not one of the access-time modes.
  EXPECT_EQ(parsed({"bind", "nodiratime", "noatime"}),
            attrs(false, MOUNT_ATTR_NODIRATIME | MOUNT_ATTR_NOATIME));
  EXPECT_EQ(parsed({"bind", "noatime", "nodiratime"}),
            attrs(false, MOUNT_ATTR_NOATIME | MOUNT_ATTR_NODIRATIME));
}

TEST(LiveMountOptions, PropagationWordsAreAccepted) {
  EXPECT_EQ(parsed({"rbind", "rprivate"}), attrs(true, 0));
  EXPECT_EQ(parsed({"bind", "private"}), attrs(false, 0));
  EXPECT_EQ(parsed({"bind", "slave", "ro"}), attrs(false, MOUNT_ATTR_RDONLY));
  EXPECT_EQ(parsed({"rslave", "rbind"}), attrs(true, 0));
  // A shared copy is never made: asking for one is an error, not silently a private mount.
  EXPECT_EQ(parsed({"bind", "rshared"}), "mount option \"rshared\" is not supported at prestart");
  EXPECT_EQ(parsed({"bind", "shared"}), "mount option \"shared\" is not supported at prestart");
}

TEST(LiveMountOptions, BindOrRbindIsRequired) {
  EXPECT_EQ(parsed({"ro", "nosuid"}),
            "mount options \"ro,nosuid\" name no bind or rbind (only bind mounts can be made at prestart)");
  EXPECT_EQ(parsed({}),
            "mount options \"\" name no bind or rbind (only bind mounts can be made at prestart)");
  EXPECT_EQ(parsed({"rprivate"}, "bind"),
            "mount options \"rprivate\" name no bind or rbind (only bind mounts can be made at prestart)");
}

TEST(LiveMountOptions, UnknownOptionIsNamed) {
  EXPECT_EQ(parsed({"bind", "x-foo"}), "mount option \"x-foo\" is not supported at prestart");
  EXPECT_EQ(parsed({"ro", "bind", "mode=755"}), "mount option \"mode=755\" is not supported at prestart");
  EXPECT_EQ(parsed({"bind", "RO"}), "mount option \"RO\" is not supported at prestart");
  EXPECT_EQ(parsed({"bind", ""}), "mount option \"\" is not supported at prestart");
}

TEST(LiveMountOptions, OnlyBindTypes) {
  EXPECT_EQ(parsed({"bind"}, "tmpfs"),
            "mount type \"tmpfs\" is not supported at prestart (only bind mounts)");
  EXPECT_EQ(parsed({"nosuid"}, "proc"),
            "mount type \"proc\" is not supported at prestart (only bind mounts)");
  EXPECT_EQ(parsed({"rbind"}, "overlay"),
            "mount type \"overlay\" is not supported at prestart (only bind mounts)");
}

// ---- MountTable ------------------------------------------------------------------------------------

// check_private of an fd on "/" against a table where "/"'s mount id has the optional fields
// `optional` and the mount point `point` (mountinfo-escaped).
std::string check_root_with(const std::string& point, const std::string& optional) {
  UniqueFd fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  const uint64_t id = mount_id_of(fd.get());
  if (id == 0) {
    return "<statx failed>";
  }
  const std::string other = std::to_string(id + 1000);
  const std::string text = other + " 1 0:99 / /elsewhere rw,relatime shared:1 - tmpfs tmpfs rw\n" +
                           std::to_string(id) + " 1 254:0 / " + point + " rw,relatime" +
                           (optional.empty() ? "" : " " + optional) + " - ext4 /dev/vda rw\n";
  auto table = MountTable::parse(text);
  if (!table) {
    return "parse: " + table.error().message;
  }
  const auto checked = table->check_private(fd.get(), "mount on x");
  return checked ? "private" : checked.error().message;
}

// check_root_with's refusal of a mount at `point` (as mountinfo escapes it, decoded) in peer group `group`.
std::string refused_as_shared(std::string_view point, int group) {
  return "mount on x: the mount at " + std::string(point) + " is shared (peer group " +
         std::to_string(group) + "): a mount made there would appear in other mount namespaces; refused";
}

TEST(LiveMountTable, SharedPeerGroupIsRefused) {
  EXPECT_EQ(check_root_with("/", "shared:12"), refused_as_shared("/", 12));
}

TEST(LiveMountTable, SlaveOnlyIsPrivateEnough) {
  // A slave receives events from its master but sends none: a mount made there stays here.
  EXPECT_EQ(check_root_with("/", "master:3"), "private");
}

TEST(LiveMountTable, SharedAndSlaveIsShared) {
  EXPECT_EQ(check_root_with("/", "shared:7 master:3"), refused_as_shared("/", 7));
}

TEST(LiveMountTable, NoOptionalFieldsIsPrivate) {
  EXPECT_EQ(check_root_with("/", ""), "private");
  // Other tags (propagate_from, unbindable) are not a peer group.
  EXPECT_EQ(check_root_with("/", "unbindable"), "private");
}

TEST(LiveMountTable, EscapedMountPointIsDecoded) {
  EXPECT_EQ(check_root_with("/mnt/with\\040space", "shared:5"), refused_as_shared("/mnt/with space", 5));
  EXPECT_EQ(check_root_with("/a\\134b\\011c\\040", "shared:5"), refused_as_shared("/a\\b\tc ", 5));
}

TEST(LiveMountTable, FieldsAfterTheSeparatorAreNotPropagation) {
  UniqueFd fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  const std::string id = std::to_string(mount_id_of(fd.get()));
  auto table = MountTable::parse(id + " 1 0:24 / / rw - tmpfs shared:9 rw\n");
  ASSERT_TRUE(table) << table.error().message;
  EXPECT_TRUE(table->check_private(fd.get(), "x"));
}

TEST(LiveMountTable, UnknownMountIdIsAnError) {
  UniqueFd fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  const uint64_t id = mount_id_of(fd.get());
  auto table = MountTable::parse(std::to_string(id + 1) + " 1 0:24 / /other rw - tmpfs tmpfs rw\n");
  ASSERT_TRUE(table) << table.error().message;
  const auto checked = table->check_private(fd.get(), "x");
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().message,
            "x: mount " + std::to_string(id) + " is not in this namespace's mountinfo");
}

TEST(LiveMountTable, MalformedLinesAreErrors) {
  const auto short_line =
      MountTable::parse("22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw\ngarbage\n");
  ASSERT_FALSE(short_line);
  EXPECT_EQ(short_line.error().message, "/proc/self/mountinfo line 2: not a mountinfo line: \"garbage\"");

  const auto bad_id = MountTable::parse("x22 1 0:21 / /proc rw,nosuid - proc proc rw\n");
  ASSERT_FALSE(bad_id);
  EXPECT_EQ(bad_id.error().message,
            "/proc/self/mountinfo line 1: bad mount id in \"x22 1 0:21 / /proc rw,nosuid - proc proc rw\"");

  // Empty lines (the final newline) are fine.
  EXPECT_TRUE(MountTable::parse(""));
  EXPECT_TRUE(MountTable::parse("\n\n22 1 0:21 / /proc rw - proc proc rw\n\n"));
}

TEST(LiveMountTable, ReadsThisNamespace) {
  auto table = MountTable::read();
  ASSERT_TRUE(table) << table.error().message;
  UniqueFd fd(::open("/proc/self", O_PATH | O_CLOEXEC));
  // /proc's mount is in the table: either private or refused as shared, never "not in mountinfo".
  const auto checked = table->check_private(fd.get(), "x");
  if (!checked) {
    EXPECT_NE(checked.error().message.find("is shared (peer group"), std::string::npos)
        << checked.error().message;
  }
}

TEST(LiveMountTable, RealSharedMountIsRefusedAndPrivateAccepted) {
  ASSERT_TRUE(can_mount());
  test::TempDir temp;
  const std::string dir = temp.path() + "/shared";
  make_host_dirs(dir);
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "mode=755") != 0) {
      return std::string("<mount tmpfs: ") + std::strerror(errno) + ">";
    }
    if (::mkdir((dir + "/sub").c_str(), 0755) != 0 ||
        ::mount(nullptr, dir.c_str(), nullptr, MS_SHARED, nullptr) != 0) {
      return std::string("<make shared: ") + std::strerror(errno) + ">";
    }
    UniqueFd fd(::open((dir + "/sub").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    std::string report;
    {
      auto table = MountTable::read();
      if (!table) {
        return table.error().message;
      }
      const auto checked = table->check_private(fd.get(), "target");
      report += checked ? std::string("shared: accepted") : checked.error().message;
    }
    if (::mount(nullptr, dir.c_str(), nullptr, MS_PRIVATE, nullptr) != 0) {
      return std::string("<make private: ") + std::strerror(errno) + ">";
    }
    auto table = MountTable::read();
    if (!table) {
      return table.error().message;
    }
    const auto checked = table->check_private(fd.get(), "target");
    return report + " | private: " + (checked ? std::string("accepted") : checked.error().message);
  });
  const std::string prefix = "target: the mount at " + dir + " is shared (peer group ";
  EXPECT_TRUE(outcome.starts_with(prefix)) << outcome;
  EXPECT_NE(outcome.find("): a mount made there would appear in other mount namespaces; refused | private: "
                         "accepted"),
            std::string::npos)
      << outcome;
}

// ---- attach_tree -----------------------------------------------------------------------------------

// A container root <temp>/rootfs and host files beside it: <temp>/host/libfoo.so.1 ("host") and the
// directory <temp>/hostdir (holding a = "A").
class LiveMountAttach : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(can_mount());
    ASSERT_FALSE(m_temp.path().empty());
    m_root = m_temp.path() + "/rootfs";
    m_host_file = m_temp.path() + "/host/libfoo.so.1";
    m_host_dir = m_temp.path() + "/hostdir";
    make_host_dirs(m_root);
    write_host_file(m_host_file, "host");
    write_host_file(m_host_dir + "/a", "A");
  }

  // In a child with a private mount namespace: clones `source` with `options`, attaches it at `path`
  // in the root, then runs `after` there. Returns "created|existing <after>" or the first error.
  std::string attach(const std::string& source, const std::vector<std::string>& options,
                     const std::string& path, const std::function<std::string()>& after = {}) {
    return test::in_private_mount_ns([&]() -> std::string {
      const auto parsed = parse_bind_options(options, "bind");
      if (!parsed) {
        return parsed.error().message;
      }
      const auto tree = clone_host_path(source, *parsed);
      if (!tree) {
        return tree.error().message;
      }
      const auto root = Root::open(m_root);
      if (!root) {
        return root.error().message;
      }
      auto table = MountTable::read();
      if (!table) {
        return table.error().message;
      }
      const auto attached = attach_tree(*root, path, *tree, *table);
      if (!attached) {
        return attached.error().message + " | mounts under root " + std::to_string(mounts_under(m_root));
      }
      return std::string(*attached == Attached::created_mount_point ? "created" : "existing") +
             (after ? " " + after() : "");
    });
  }

  test::TempDir m_temp;
  std::string m_root;
  std::string m_host_file;
  std::string m_host_dir;
};

TEST_F(LiveMountAttach, FileOntoAMissingPathIsReadOnlyNosuidNodev) {
  const std::string target = m_root + "/usr/lib/x/libfoo.so.1";
  const std::string outcome =
      attach(m_host_file, {"ro", "nosuid", "nodev", "bind"}, "/usr/lib/x/libfoo.so.1", [&] {
        return read_file(target).value_or("<unreadable>") + " | " + write_access(target) + " | " +
               mount_flags(target);
      });
  EXPECT_EQ(outcome, "created host | Read-only file system | ro nosuid nodev private");
  // Outside the child's namespace: the mount point the child made (an empty file, parents 0755), no mount.
  EXPECT_EQ(host_kind(target), "file");
  EXPECT_EQ(read_file(target).value_or("<unreadable>"), "");
  EXPECT_EQ(mode_of(m_root + "/usr/lib") + " " + mode_of(m_root + "/usr/lib/x") + " " + mode_of(target),
            "0755 0755 0644");
  EXPECT_EQ(mount_flags(target), "<no mount>");
  EXPECT_EQ(read_file(m_host_file).value_or(""), "host");
}

TEST_F(LiveMountAttach, WritableBindWhenNotReadOnly) {
  const std::string target = m_root + "/etc/conf";
  const std::string outcome = attach(m_host_file, {"bind", "nosuid"}, "/etc/conf",
                                     [&] { return write_access(target) + " | " + mount_flags(target); });
  EXPECT_EQ(outcome, "created writable | rw nosuid private");
  EXPECT_EQ(read_file(m_host_file).value_or(""), "xost")
      << "the write went through the bind to the host file";
}

TEST_F(LiveMountAttach, DirectoryOntoAMissingDirectory) {
  const std::string target = m_root + "/opt/d";
  const std::string outcome = attach(m_host_dir, {"rbind", "ro", "nodev"}, "/opt/d", [&] {
    return read_file(target + "/a").value_or("<unreadable>") + " | " +
           errno_text(::mkdir((target + "/new").c_str(), 0755)) + " | " + mount_flags(target);
  });
  EXPECT_EQ(outcome, "created A | Read-only file system | ro nodev private");
  EXPECT_EQ(host_kind(target), "dir");
  EXPECT_EQ(test::host_listing(target), std::vector<std::string>{});
  EXPECT_EQ(host_kind(m_host_dir + "/new"), "missing");
}

TEST_F(LiveMountAttach, DirectoryOntoAnExistingDirectory) {
  make_host_dirs(m_root + "/srv/data");
  const std::string outcome = attach(m_host_dir, {"bind"}, "/srv/data", [&] {
    return read_file(m_root + "/srv/data/a").value_or("<unreadable>");
  });
  EXPECT_EQ(outcome, "existing A");
}

TEST_F(LiveMountAttach, SymlinkTargetIsFollowedInsideTheRoot) {
  make_host_dirs(m_root + "/outside");
  make_host_link("/outside", m_root + "/lib/link");
  const std::string host_outside_before = host_kind("/outside");
  const std::string outcome = attach(m_host_dir, {"bind", "ro"}, "/lib/link", [&] {
    return read_file(m_root + "/outside/a").value_or("<unreadable>") + " | " +
           mount_flags(m_root + "/outside") + " | link " + mount_flags(m_root + "/lib/link");
  });
  EXPECT_EQ(outcome, "existing A | ro private | link <no mount>");
  EXPECT_EQ(test::host_readlink(m_root + "/lib/link"), "/outside");
  EXPECT_EQ(host_kind("/outside"), host_outside_before);
}

TEST_F(LiveMountAttach, FileSymlinkTargetIsFollowedInsideTheRoot) {
  write_host_file(m_root + "/usr/lib/libfoo.so.1.real", "image");
  make_host_link("libfoo.so.1.real", m_root + "/usr/lib/libfoo.so.1");
  const std::string outcome = attach(m_host_file, {"bind", "ro"}, "/usr/lib/libfoo.so.1", [&] {
    return read_file(m_root + "/usr/lib/libfoo.so.1.real").value_or("<unreadable>");
  });
  EXPECT_EQ(outcome, "existing host");
  EXPECT_EQ(read_file(m_root + "/usr/lib/libfoo.so.1.real").value_or(""), "image");
}

TEST_F(LiveMountAttach, DanglingSymlinkTargetIsAnError) {
  make_host_link("/missing-dir", m_root + "/lib/dangling");
  const std::string outcome = attach(m_host_dir, {"bind"}, "/lib/dangling");
  EXPECT_NE(outcome.find("/lib/dangling"), std::string::npos) << outcome;
  EXPECT_NE(outcome.find("No such file or directory"), std::string::npos) << outcome;
  EXPECT_TRUE(outcome.ends_with(" | mounts under root 0")) << outcome;
  EXPECT_EQ(host_kind(m_root + "/missing-dir"), "missing") << "the link's target must not be created";
}

TEST_F(LiveMountAttach, SymlinkOutOfTheRootStaysInside) {
  // A link that climbs out of the root names, inside the root, a path that does not exist: an error,
  // and the host directory of the same name gets no mount.
  const std::string host_side = m_temp.path() + "/hostside";
  make_host_dirs(host_side);
  make_host_link("../../../../../../../../.." + host_side, m_root + "/lib/evil");
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    const auto tree = clone_host_path(m_host_dir, BindOptions{});
    const auto root = Root::open(m_root);
    auto table = MountTable::read();
    if (!tree || !root || !table) {
      return "<setup failed>";
    }
    const auto attached = attach_tree(*root, "/lib/evil", *tree, *table);
    return (attached ? std::string("attached") : std::string("refused")) + " | host side " +
           mount_flags(host_side) + " | " + std::to_string(test::host_listing(host_side).size());
  });
  EXPECT_EQ(outcome, "refused | host side <no mount> | 0");
}

TEST_F(LiveMountAttach, DirectoryMountPointForAFileSourceIsAnError) {
  make_host_dirs(m_root + "/usr/lib/dir");
  const std::string outcome = attach(m_host_file, {"ro", "bind"}, "/usr/lib/dir");
  EXPECT_EQ(outcome,
            "mount " + m_host_file + " on /usr/lib/dir in container root " + m_root +
                ": the mount point is a directory, the source not a directory | mounts under root 0");
}

TEST_F(LiveMountAttach, FileMountPointForADirectorySourceIsAnError) {
  write_host_file(m_root + "/etc/file", "image");
  const std::string outcome = attach(m_host_dir, {"bind"}, "/etc/file");
  EXPECT_EQ(outcome, "mount " + m_host_dir + " on /etc/file in container root " + m_root +
                         ": the mount point is a regular file, the source a directory | mounts under root 0");
}

TEST_F(LiveMountAttach, MissingSourceIsNamed) {
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    const auto tree = clone_host_path(m_temp.path() + "/no-such-file", BindOptions{});
    return tree ? "cloned" : tree.error().message;
  });
  EXPECT_EQ(outcome, "bind source " + m_temp.path() + "/no-such-file: No such file or directory");
}

TEST_F(LiveMountAttach, SharedMountPointIsRefusedAndNothingMounted) {
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    if (::mount("tmpfs", m_root.c_str(), "tmpfs", 0, "mode=755") != 0 ||
        ::mount(nullptr, m_root.c_str(), nullptr, MS_SHARED, nullptr) != 0) {
      return std::string("<shared tmpfs root: ") + std::strerror(errno) + ">";
    }
    const auto parsed = parse_bind_options({"ro", "bind"}, "");
    const auto tree = clone_host_path(m_host_file, *parsed);
    const auto root = Root::open(m_root);
    auto table = MountTable::read();
    if (!tree || !root || !table) {
      return "<setup failed>";
    }
    const auto attached = attach_tree(*root, "/etc/x.conf", *tree, *table);
    return (attached ? std::string("attached") : attached.error().message) + " | mounts below root " +
           std::to_string(mounts_under(m_root + "/etc")) + " | /etc " + host_kind(m_root + "/etc");
  });
  const std::string prefix = "mount " + m_host_file + " on /etc/x.conf in container root " + m_root +
                             ": the mount at " + m_root + " is shared (peer group ";
  EXPECT_TRUE(outcome.starts_with(prefix)) << outcome;
  // Refused before anything was made there: no mount point, no parent directory.
  EXPECT_TRUE(outcome.ends_with(
      "): a mount made there would appear in other mount namespaces; refused | mounts below root 0 | /etc "
      "missing"))
      << outcome;
}

// A volume whose propagation is shared (Kubernetes' Bidirectional): the directory behind it is a host
// directory. A target inside it is refused before its parents or its mount point are made there, so the
// host directory is left as it was (before, an empty root-owned file and its directories stayed behind).
TEST_F(LiveMountAttach, ATargetInASharedVolumeLeavesNothingInTheHostDirectory) {
  const std::string volume = m_temp.path() + "/volume";
  make_host_dirs(volume);
  make_host_dirs(m_root + "/data");
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    const std::string data = m_root + "/data";
    if (::mount(volume.c_str(), data.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, data.c_str(), nullptr, MS_SHARED, nullptr) != 0) {
      return std::string("<shared volume: ") + std::strerror(errno) + ">";
    }
    const auto tree = clone_host_path(m_host_file, parse_bind_options({"ro", "bind"}, "").value());
    const auto root = Root::open(m_root);
    auto table = MountTable::read();
    if (!tree || !root || !table) {
      return "<setup failed>";
    }
    std::string out;
    for (const char* target : {"/data/libfoo.so.1", "/data/sub/dir/libfoo.so.1"}) {
      const auto attached = attach_tree(*root, target, *tree, *table);
      out += (attached ? std::string("attached") : attached.error().message) + "\n";
    }
    return out;
  });
  const std::string shared = ": the mount at " + m_root + "/data is shared (peer group ";
  EXPECT_NE(
      outcome.find("mount " + m_host_file + " on /data/libfoo.so.1 in container root " + m_root + shared),
      std::string::npos)
      << outcome;
  EXPECT_NE(outcome.find("mount " + m_host_file + " on /data/sub/dir/libfoo.so.1 in container root " +
                         m_root + shared),
            std::string::npos)
      << outcome;
  EXPECT_EQ(outcome.find("attached"), std::string::npos) << outcome;
  EXPECT_EQ(test::host_listing(volume), std::vector<std::string>{});
}

// A mount point made for an attach that then fails is removed: nothing is left in the image.
TEST_F(LiveMountAttach, AFailedAttachRemovesTheMountPointItMade) {
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    // Not a detached mount: the mount calls refuse it.
    HostTree tree{UniqueFd(::open(m_host_file.c_str(), O_PATH | O_CLOEXEC)), false, {}, m_host_file};
    const auto root = Root::open(m_root);
    auto table = MountTable::read();
    if (!tree.fd || !root || !table) {
      return "<setup failed>";
    }
    const auto attached = attach_tree(*root, "/opt/libfoo.so.1", tree, *table);
    return (attached ? std::string("attached") : attached.error().message) + " | " +
           host_kind(m_root + "/opt/libfoo.so.1");
  });
  EXPECT_EQ(outcome, "mount " + m_host_file + " on /opt/libfoo.so.1 in container root " + m_root +
                         ": mount_setattr: Invalid argument | missing");
}

// A plan whose mounts nest (a directory, then a file inside it) attaches them in order with one table
// read before the first: the second target is on the mount the first one made, which the table has
// not seen. That mount is private (attach_detached makes every copy private), so the second must work.
TEST_F(LiveMountAttach, ANestedTargetOnAnEarlierMountOfTheSameTable) {
  write_host_file(m_host_dir + "/lib.so", "dir copy");
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    const auto dir_tree = clone_host_path(m_host_dir, parse_bind_options({"bind"}, "").value());
    const auto file_tree = clone_host_path(m_host_file, parse_bind_options({"bind", "ro"}, "").value());
    const auto root = Root::open(m_root);
    auto table = MountTable::read();
    if (!dir_tree || !file_tree || !root || !table) {
      return "<setup failed>";
    }
    const auto first = attach_tree(*root, "/opt/vendor", *dir_tree, *table);
    if (!first) {
      return "first: " + first.error().message;
    }
    const auto second = attach_tree(*root, "/opt/vendor/lib.so", *file_tree, *table);
    if (!second) {
      return "second: " + second.error().message;
    }
    return read_file(m_root + "/opt/vendor/lib.so").value_or("<unreadable>");
  });
  EXPECT_EQ(outcome, "host");
}

// "parents 0755", "directory 0755, or an empty file 0644" (live_mount.hpp): the hook's umask (a runtime's,
// inherited) must not narrow them, or a non-root process in the container cannot reach its libraries.
TEST_F(LiveMountAttach, MountPointModesDoNotDependOnTheUmask) {
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    ::umask(077);
    const auto file_tree = clone_host_path(m_host_file, parse_bind_options({"bind", "ro"}, "").value());
    const auto dir_tree = clone_host_path(m_host_dir, parse_bind_options({"bind", "ro"}, "").value());
    const auto root = Root::open(m_root);
    auto table = MountTable::read();
    if (!file_tree || !dir_tree || !root || !table) {
      return "<setup failed>";
    }
    const auto file = attach_tree(*root, "/usr/lib/y/libbar.so", *file_tree, *table);
    const auto dir = attach_tree(*root, "/srv/a/b", *dir_tree, *table);
    return std::string(file ? "file ok" : file.error().message) + " | " +
           (dir ? "dir ok" : dir.error().message);
  });
  EXPECT_EQ(outcome, "file ok | dir ok");
  // Seen from outside the child, where the mount points are not covered.
  EXPECT_EQ(mode_of(m_root + "/usr") + " " + mode_of(m_root + "/usr/lib") + " " +
                mode_of(m_root + "/usr/lib/y") + " " + mode_of(m_root + "/usr/lib/y/libbar.so"),
            "0755 0755 0755 0644");
  EXPECT_EQ(mode_of(m_root + "/srv") + " " + mode_of(m_root + "/srv/a") + " " + mode_of(m_root + "/srv/a/b"),
            "0755 0755 0755");
}

// An access-time word replaces the source mount's mode on the copy ("Access-time words replace each
// other"): relatime asked for on a noatime host mount gives a relatime mount, as strictatime gives a
// strictatime one.
TEST_F(LiveMountAttach, AnAccessTimeWordReplacesTheSourcesMode) {
  const std::string source = m_temp.path() + "/noatime-src";
  make_host_dirs(source);
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    if (::mount("tmpfs", source.c_str(), "tmpfs", MS_NOATIME, "mode=755") != 0) {
      return std::string("<mount: ") + std::strerror(errno) + ">";
    }
    write_host_file(source + "/f", "x");
    const auto root = Root::open(m_root);
    auto table = MountTable::read();
    if (!root || !table) {
      return "<setup failed>";
    }
    std::string out;
    for (const char* word : {"relatime", "strictatime", "noatime"}) {
      const auto tree = clone_host_path(source, parse_bind_options({"bind", word}, "").value());
      if (!tree) {
        return tree.error().message;
      }
      const std::string path = std::string("/mnt/") + word;
      if (auto r = attach_tree(*root, path, *tree, *table); !r) {
        return r.error().message;
      }
      const std::string line = read_file("/proc/self/mountinfo", 16 << 20).value_or("");
      std::string mode = "?";
      for (const auto entry : split(line, '\n')) {
        const auto fields = split(entry, ' ');
        if (fields.size() > 5 && fields[4] == m_root + path) {
          const std::string options(fields[5]);
          mode = options.find("noatime") != std::string::npos       ? "noatime"
                 : options.find("relatime") != std::string::npos    ? "relatime"
                 : options.find("strictatime") != std::string::npos ? "strictatime"
                                                                    : "strictatime (no word)";
        }
      }
      out += std::string(out.empty() ? "" : " ") + word + "->" + mode;
    }
    return out;
  });
  EXPECT_EQ(outcome, "relatime->relatime strictatime->strictatime (no word) noatime->noatime");
}

TEST_F(LiveMountAttach, RbindCarriesSubmountsWithTheSameFlags) {
  make_host_dirs(m_host_dir + "/sub");
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    if (::mount("tmpfs", (m_host_dir + "/sub").c_str(), "tmpfs", 0, "mode=755") != 0) {
      return std::string("<mount: ") + std::strerror(errno) + ">";
    }
    write_host_file(m_host_dir + "/sub/s", "S");
    const auto root = Root::open(m_root);
    auto table = MountTable::read();
    const auto recursive =
        clone_host_path(m_host_dir, parse_bind_options({"rbind", "ro", "nosuid"}, "").value());
    const auto flat = clone_host_path(m_host_dir, parse_bind_options({"bind", "ro"}, "").value());
    if (!root || !table || !recursive || !flat) {
      return "<setup failed>";
    }
    if (auto r = attach_tree(*root, "/r", *recursive, *table); !r) {
      return r.error().message;
    }
    if (auto r = attach_tree(*root, "/f", *flat, *table); !r) {
      return r.error().message;
    }
    return "rbind " + mount_flags(m_root + "/r") + ", sub " + mount_flags(m_root + "/r/sub") + " " +
           read_file(m_root + "/r/sub/s").value_or("<unreadable>") + " | bind " + mount_flags(m_root + "/f") +
           ", sub " + mount_flags(m_root + "/f/sub") + " " + host_kind(m_root + "/f/sub/s");
  });
  EXPECT_EQ(outcome,
            "rbind ro nosuid private, sub ro nosuid private S | bind ro private, sub <no mount> missing");
}

TEST(LiveMountAttachDetached, ErrorsNameWhat) {
  const auto result = attach_detached(-1, -1, BindOptions{.attributes = MOUNT_ATTR_RDONLY}, "mount x on y");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "mount x on y: mount_setattr: Bad file descriptor");
}

// ---- make_device_node ------------------------------------------------------------------------------

// A container root on a tmpfs that exists only in the child's mount namespace.
class LiveMountDeviceNode : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(can_mount());
    ASSERT_FALSE(m_temp.path().empty());
    m_root = m_temp.path() + "/rootfs";
    make_host_dirs(m_root);
  }

  // Runs `body` in a child with a private mount namespace, a fresh tmpfs on the root (device nodes
  // allowed) and umask 022, with the root opened and the mount table read.
  std::string on_tmpfs_root(const std::function<std::string(const Root&, MountTable&)>& body) {
    return test::in_private_mount_ns([&]() -> std::string {
      if (::mount("tmpfs", m_root.c_str(), "tmpfs", 0, "mode=755") != 0) {
        return std::string("<mount tmpfs: ") + std::strerror(errno) + ">";
      }
      ::umask(022);
      const auto root = Root::open(m_root);
      if (!root) {
        return root.error().message;
      }
      auto table = MountTable::read();
      if (!table) {
        return table.error().message;
      }
      return body(*root, *table);
    });
  }

  test::TempDir m_temp;
  std::string m_root;
};

std::string node_result(const Result<NodeResult>& result) {
  if (!result) {
    return result.error().message;
  }
  switch (*result) {
    case NodeResult::created:
      return "created";
    case NodeResult::existed:
      return "existed";
    case NodeResult::bound:
      return "bound";
  }
  return "?";
}

TEST_F(LiveMountDeviceNode, CreatesExactModeAndOwner) {
  const std::string outcome = on_tmpfs_root([&](const Root& root, MountTable& table) {
    const NodeSpec null_node{"/dev/null", 'c', 1, 3, 0666, 1000, 1000};
    const NodeSpec tty_node{"/dev/sub/tty9", 'c', 4, 9, 0620, 0, 5};
    std::string out = node_result(make_device_node(root, null_node, nullptr, table));
    out += " " + node_text(m_root + "/dev/null");
    const mode_t mask_after = ::umask(022);
    out += " umask " + std::to_string(mask_after);
    out += " | " + node_result(make_device_node(root, tty_node, nullptr, table));
    out += " " + node_text(m_root + "/dev/sub/tty9") + " parent " + mode_of(m_root + "/dev/sub");
    out += " | again " + node_result(make_device_node(root, null_node, nullptr, table));
    out += " " + node_text(m_root + "/dev/null");
    return out;
  });
  EXPECT_EQ(outcome,
            "created c 1:3 0666 1000:1000 umask 18 | created c 4:9 0620 0:5 parent 0755 | again existed c "
            "1:3 0666 1000:1000");
}

TEST_F(LiveMountDeviceNode, AnExistingNodeIsLeftAsItIs) {
  const std::string outcome = on_tmpfs_root([&](const Root& root, MountTable& table) {
    ::mkdir((m_root + "/dev").c_str(), 0755);
    if (::mknod((m_root + "/dev/nvidia0").c_str(), S_IFCHR | 0600, makedev(195, 0)) != 0) {
      return std::string("<mknod: ") + std::strerror(errno) + ">";
    }
    const NodeSpec node{"/dev/nvidia0", 'c', 195, 0, 0666, 1000, 1000};
    return node_result(make_device_node(root, node, nullptr, table)) + " " +
           node_text(m_root + "/dev/nvidia0");
  });
  EXPECT_EQ(outcome, "existed c 195:0 0600 0:0");
}

TEST_F(LiveMountDeviceNode, AnythingElseThereIsAnError) {
  const std::string outcome = on_tmpfs_root([&](const Root& root, MountTable& table) {
    write_host_file(m_root + "/dev/nvidia0", "not a device");
    ::mknod((m_root + "/dev/nvidia1").c_str(), S_IFCHR | 0666, makedev(195, 7));
    ::mknod((m_root + "/dev/sda").c_str(), S_IFCHR | 0666, makedev(8, 0));
    return node_result(make_device_node(root, {"/dev/nvidia0", 'c', 195, 0}, nullptr, table)) + "\n" +
           node_result(make_device_node(root, {"/dev/nvidia1", 'c', 195, 1}, nullptr, table)) + "\n" +
           node_result(make_device_node(root, {"/dev/sda", 'b', 8, 0}, nullptr, table)) + "\n" +
           read_file(m_root + "/dev/nvidia0").value_or("<unreadable>");
  });
  EXPECT_EQ(outcome, "device node /dev/nvidia0 in container root " + m_root +
                         ": exists and is a regular file, not c 195:0\n"
                         "device node /dev/nvidia1 in container root " +
                         m_root +
                         ": exists and is a character device 195:7, not c 195:1\n"
                         "device node /dev/sda in container root " +
                         m_root + ": exists and is a character device 8:0, not b 8:0\nnot a device");
}

TEST_F(LiveMountDeviceNode, HostNodeIsBoundOverAnEmptyFile) {
  const std::string outcome = on_tmpfs_root([&](const Root& root, MountTable& table) {
    const auto host = clone_host_path("/dev/null", BindOptions{false, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC});
    if (!host) {
      return host.error().message;
    }
    const std::string target = m_root + "/dev/nvidia-null";
    std::string out =
        node_result(make_device_node(root, {"/dev/nvidia-null", 'c', 1, 3, 0666, 1000, 1000}, &*host, table));
    struct stat st {};
    ::stat(target.c_str(), &st);
    out += std::string(" ") + (S_ISCHR(st.st_mode) ? "chr " : "not chr ") +
           std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));
    out += " | " + write_access(target) + " | " + mount_flags(target);
    return out;
  });
  EXPECT_EQ(outcome, "bound chr 1:3 | writable | rw nosuid noexec private");
}

TEST_F(LiveMountDeviceNode, HostNodeOfOtherNumbersIsAnError) {
  const std::string outcome = on_tmpfs_root([&](const Root& root, MountTable& table) {
    const auto host = clone_host_path("/dev/null", BindOptions{false, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC});
    if (!host) {
      return host.error().message;
    }
    return node_result(make_device_node(root, {"/dev/zero", 'c', 1, 5}, &*host, table)) + " | " +
           host_kind(m_root + "/dev/zero") + "\n" +
           node_result(make_device_node(root, {"/dev/blk", 'b', 1, 3}, &*host, table)) + " | " +
           host_kind(m_root + "/dev/blk");
  });
  EXPECT_EQ(outcome, "device node /dev/zero in container root " + m_root +
                         ": host node /dev/null is a character device 1:3 | missing\n"
                         "device node /dev/blk in container root " +
                         m_root + ": host node /dev/null is a character device 1:3 | missing");
}

TEST_F(LiveMountDeviceNode, HostNodeOnASharedMountIsRefused) {
  const std::string outcome = on_tmpfs_root([&](const Root& root, MountTable&) -> std::string {
    if (::mount(nullptr, m_root.c_str(), nullptr, MS_SHARED, nullptr) != 0) {
      return std::string("<make shared: ") + std::strerror(errno) + ">";
    }
    auto table = MountTable::read();
    const auto host = clone_host_path("/dev/null", BindOptions{false, MOUNT_ATTR_NOSUID});
    if (!table || !host) {
      return "<setup failed>";
    }
    // (In this order: the operands of + are evaluated in any order.)
    const std::string made = node_result(make_device_node(root, {"/dev/null", 'c', 1, 3}, &*host, *table));
    return made + " | " + std::to_string(mounts_under(m_root + "/dev")) + " | /dev " +
           host_kind(m_root + "/dev");
  });
  EXPECT_NE(outcome.find("device node /dev/null in container root " + m_root + ": the mount at " + m_root +
                         " is shared (peer group "),
            std::string::npos)
      << outcome;
  // Refused before the file to bind over (or its directory) was made.
  EXPECT_TRUE(outcome.ends_with("refused | 0 | /dev missing")) << outcome;
}

// "parents 0755" (live_mount.hpp), whatever the umask.
TEST_F(LiveMountDeviceNode, ParentsAre0755WhateverTheUmask) {
  const std::string outcome = on_tmpfs_root([&](const Root& root, MountTable& table) {
    ::umask(077);
    const std::string made =
        node_result(make_device_node(root, {"/dev/dri/card0", 'c', 226, 0, 0666, 0, 44}, nullptr, table));
    return made + " " + node_text(m_root + "/dev/dri/card0") + " | " + mode_of(m_root + "/dev") + " " +
           mode_of(m_root + "/dev/dri");
  });
  EXPECT_EQ(outcome, "created c 226:0 0666 0:44 | 0755 0755");
}

// With a ParentDirCache, a node's directory is resolved once: two nodes in one directory go into it even when
// the container swaps it for a symlink out of the root between them (the second node goes where the first
// went, never outside; without the cache it would be resolved again, through the new link); a node in
// another directory is resolved as usual, and the root itself is refused as open_parent refuses it.
TEST_F(LiveMountDeviceNode, ACachedParentIsTheDirectoryResolvedFirst) {
  const std::string outside = m_temp.path() + "/outside";
  ASSERT_EQ(::mkdir(outside.c_str(), 0755), 0);
  const std::string outcome = on_tmpfs_root([&](const Root& root, MountTable& table) {
    ParentDirCache parents;
    std::string out = node_result(make_device_node(root, {"/dev/a", 'c', 1, 3}, nullptr, table, &parents));
    // The same path inside the root exists too: resolved again, the link would lead there.
    std::filesystem::create_directories(m_root + outside);
    if (::rename((m_root + "/dev").c_str(), (m_root + "/dev-was").c_str()) != 0 ||
        ::symlink(outside.c_str(), (m_root + "/dev").c_str()) != 0) {
      return std::string("<swap: ") + std::strerror(errno) + ">";
    }
    out += " " + node_result(make_device_node(root, {"/dev/b", 'c', 1, 3}, nullptr, table, &parents));
    out += " | dev-was/b " + node_text(m_root + "/dev-was/b") + ", in-root outside/b " +
           host_kind(m_root + outside + "/b") + ", host outside/b " + host_kind(outside + "/b");
    // (Made before it is looked at: the operands of + are evaluated in any order.)
    out += " | " + node_result(make_device_node(root, {"/dri/c", 'c', 1, 3}, nullptr, table, &parents));
    out += " " + node_text(m_root + "/dri/c");
    out += " | " + node_result(make_device_node(root, {"/", 'c', 1, 3}, nullptr, table, &parents));
    return out;
  });
  EXPECT_EQ(outcome,
            "created created | dev-was/b c 1:3 0666 0:0, in-root outside/b missing, host outside/b "
            "missing | created c 1:3 0666 0:0 | / in container root " +
                m_root + ": is the root itself");
}

// ---- enter_mount_namespace, in_other_user_namespace -----------------------------------------------

TEST(LiveMountNamespace, EntersAnotherProcesssMountNamespace) {
  ASSERT_TRUE(can_mount());
  test::TempDir temp;
  const std::string dir = temp.path() + "/ns-dir";
  make_host_dirs(dir);
  const WaitingChild container([&]() -> std::string {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", dir.c_str(), "tmpfs", 0, "mode=755") != 0) {
      return std::string("<setup: ") + std::strerror(errno) + ">";
    }
    write_host_file(dir + "/marker", "in the namespace");
    return "ready";
  });
  ASSERT_EQ(container.report(), "ready");
  const std::string entered = test::in_child([&]() -> std::string {
    const auto process = Process::open(container.pid());
    const auto host = this_root();
    if (!process || !host) {
      return "<setup failed>";
    }
    if (auto r = enter_mount_namespace(*process, *host); !r) {
      return r.error().message;
    }
    struct statfs fs {};
    if (::statfs(dir.c_str(), &fs) != 0) {
      return std::string("<statfs: ") + std::strerror(errno) + ">";
    }
    char cwd[4096] = {};
    return std::string(fs.f_type == TMPFS_MAGIC ? "tmpfs" : "not tmpfs") + " | " +
           read_file(dir + "/marker").value_or("<no marker>") + " | cwd " +
           (::getcwd(cwd, sizeof cwd) != nullptr ? cwd : "?");
  });
  EXPECT_EQ(entered, "tmpfs | in the namespace | cwd /");
  // The test process's own namespace has no such mount.
  EXPECT_EQ(host_kind(dir + "/marker"), "missing");
  EXPECT_EQ(mount_flags(dir), "<no mount>");
}

// A process held (util/process.hpp) that has gone since: never entered, whoever has its pid now.
TEST(LiveMountNamespace, AProcessThatWentAwayIsNotEntered) {
  const auto gone = test::gone_process();
  ASSERT_TRUE(gone.held) << gone.held.error().message;
  const std::string outcome = test::in_child([&]() -> std::string {
    const auto r = enter_mount_namespace(*gone.held, this_root().value());
    return r ? "entered" : r.error().message;
  });
  EXPECT_EQ(outcome,
            "enter the mount namespace of process " + std::to_string(gone.pid) + ": No such process");
}

// A namespace whose root is a container's own, past pivot_root: the process itself is refused when its
// root is not the host's (check_process_root), and the namespace once entered when its root is not
// (enter_mount_namespace), even for a process that went back into the host's root (chroot).
TEST(LiveMountNamespace, ARootPastPivotRootIsRefused) {
  ASSERT_TRUE(can_mount());
  test::TempDir temp;
  const std::string new_root = temp.path() + "/new-root";
  make_host_dirs(new_root + "/oldroot");
  const auto host = this_root();
  ASSERT_TRUE(host) << host.error().message;
  const std::string why =
      "its container has already pivoted into its own root (a prestart hook runs before pivot_root); refused";
  const auto outcome = [&](pid_t pid) {
    const auto process = Process::open(pid);
    if (!process) {
      return process.error().message;
    }
    const auto checked = check_process_root(*process, *host);
    return (checked ? std::string("root ok") : checked.error().message) + " | " +
           test::in_child([&]() -> std::string {
             const auto entered = enter_mount_namespace(*process, *host);
             return entered ? "entered" : entered.error().message;
           });
  };
  const WaitingChild before(
      [] { return ::unshare(CLONE_NEWNS) == 0 ? std::string("ready") : std::string("<unshare failed>"); });
  ASSERT_EQ(before.report(), "ready");
  EXPECT_EQ(outcome(before.pid()), "root ok | entered");
  const test::PivotedChild done(new_root, test::Pivot::done);
  ASSERT_EQ(done.report(), "ready");
  const std::string done_pid = std::to_string(done.pid());
  EXPECT_EQ(outcome(done.pid()), "the root directory of process " + done_pid + " is not the host's: " + why +
                                     " | enter the mount namespace of process " + done_pid +
                                     ": its root is not the host's: " + why);
  const test::PivotedChild back(new_root, test::Pivot::back_into_host);
  ASSERT_EQ(back.report(), "ready");
  const std::string back_pid = std::to_string(back.pid());
  EXPECT_EQ(outcome(back.pid()), "root ok | enter the mount namespace of process " + back_pid +
                                     ": its root is not the host's: " + why);
}

// The mount table is read through a /proc opened before: in a namespace whose /proc is something else
// (a container's), "/proc/self/mountinfo" is not what is read.
TEST(LiveMountTable, ReadsThroughTheProcItIsGiven) {
  ASSERT_TRUE(can_mount());
  const std::string outcome = test::in_private_mount_ns([]() -> std::string {
    UniqueFd proc(::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!proc || ::mount("tmpfs", "/proc", "tmpfs", 0, "mode=755") != 0) {
      return std::string("<setup: ") + std::strerror(errno) + ">";
    }
    auto by_path = MountTable::read();
    auto through = MountTable::read(proc.get());
    UniqueFd tmpfs_proc(::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC));
    // The tmpfs over /proc is in the table read through the fd, and private.
    const auto checked = through ? through->check_private(tmpfs_proc.get(), "x") : Result<void>();
    return (by_path ? std::string("by path: read") : by_path.error().message) + " | " +
           (through ? std::string("through the fd: read") : through.error().message) + " | " +
           (checked ? std::string("private") : checked.error().message);
  });
  EXPECT_EQ(outcome, "read /proc/self/mountinfo: No such file or directory | through the fd: read | private");
}

TEST(LiveMountNamespace, OwnUserNamespaceIsNotAnother) {
  const auto self = in_other_user_namespace(Process::open(::getpid()).value());
  ASSERT_TRUE(self) << self.error().message;
  EXPECT_FALSE(*self);
  const WaitingChild same([] { return std::string("ready"); });
  ASSERT_EQ(same.report(), "ready");
  const auto child = in_other_user_namespace(Process::open(same.pid()).value());
  ASSERT_TRUE(child) << child.error().message;
  EXPECT_FALSE(*child);
}

TEST(LiveMountNamespace, AChildInANewUserNamespaceIsInAnother) {
  ASSERT_EQ(::geteuid(), 0U) << "this test needs root (CI runs the suite as root) to create a user namespace";
  const WaitingChild child([] {
    return ::unshare(CLONE_NEWUSER) == 0
               ? std::string("ready")
               : std::string("<unshare(CLONE_NEWUSER): ") + std::strerror(errno) + ">";
  });
  ASSERT_EQ(child.report(), "ready");
  const auto other = in_other_user_namespace(Process::open(child.pid()).value());
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_TRUE(*other);
}

TEST(LiveMountNamespace, UserNamespaceOfAProcessThatWentAwayIsAnError) {
  const auto gone = test::gone_process();
  ASSERT_TRUE(gone.held) << gone.held.error().message;
  const auto other = in_other_user_namespace(*gone.held);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().message, "stat /proc/" + std::to_string(gone.pid) + "/ns/user: No such process");
}

}  // namespace
}  // namespace gpuctk::rootfs
