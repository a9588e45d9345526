#include "rootfs/sandbox.hpp"

#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rootfs/rootfs_test_support.hpp"
#include "rootfs/sandbox_probe.hpp"
#include "util/strings.hpp"

namespace gpuctk::rootfs {
namespace {

using test::host_listing;
using test::in_child;
using test::make_host_dirs;
using test::make_host_link;
using test::write_host_file;

// "EPERM" for a failed call, "ok" for one that succeeded, the errno name otherwise.
std::string outcome(long rc) {
  if (rc >= 0) {
    return "ok";
  }
  const int err = errno;
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : std::to_string(err);
}

// The value of `key` ("CapEff") in /proc/self/status, trimmed.
std::string status_field(const std::string& status, std::string_view key) {
  for (const auto line : split(status, '\n')) {
    if (line.starts_with(key) && line.size() > key.size() && line[key.size()] == ':') {
      return std::string(trim(line.substr(key.size() + 1)));
    }
  }
  return "<missing>";
}

bool is_root() {
  return ::geteuid() == 0;
}

// A keep list for restrict_self (what the sandbox itself keeps is nothing).
constexpr cap_value_t k_some_caps[] = {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER};

// --- restrict_self ----------------------------------------------------------------------------------

TEST(RestrictSelf, ForbiddenSystemCallsFailWithEPERM) {
  if (!is_root()) {
    GTEST_SKIP() << "restrict_self drops capabilities only a root process has";
  }
  const std::string report = in_child([]() -> std::string {
    if (auto r = restrict_self(k_some_caps); !r) {
      return "restrict_self: " + r.error().message;
    }
    std::string out;
    const auto add = [&](const char* name, long rc) {
      out.append(name).append("=").append(outcome(rc)).append("\n");
    };
    add("mount", ::mount("none", "/tmp", "tmpfs", 0, nullptr));
    add("umount2", ::umount2("/proc", MNT_DETACH));
    add("ptrace", ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr));
    add("bpf", ::syscall(SYS_bpf, 0, nullptr, 0));
    add("keyctl", ::syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
    add("kexec_load", ::syscall(SYS_kexec_load, 0, 0, nullptr, 0));
    add("init_module", ::syscall(SYS_init_module, nullptr, 0, ""));
    add("finit_module", ::syscall(SYS_finit_module, -1, "", 0));
    add("socket_inet", ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    add("socket_unix", ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    add("unshare", ::unshare(CLONE_NEWNS));
    add("setns", ::setns(-1, 0));
    add("chroot", ::chroot("/"));
    add("mknod", ::mknod("/tmp/gpuctk-never", S_IFCHR | 0600, 0));
    return out;
  });
  EXPECT_EQ(report,
            "mount=EPERM\n"
            "umount2=EPERM\n"
            "ptrace=EPERM\n"
            "bpf=EPERM\n"
            "keyctl=EPERM\n"
            "kexec_load=EPERM\n"
            "init_module=EPERM\n"
            "finit_module=EPERM\n"
            "socket_inet=EPERM\n"
            "socket_unix=EPERM\n"
            "unshare=EPERM\n"
            "setns=EPERM\n"
            "chroot=EPERM\n"
            "mknod=EPERM\n");
}

TEST(RestrictSelf, ControlTheSameCallsWorkOrFailOtherwiseWithoutIt) {
  // Without restrict_self the same calls do not all give EPERM: the test above can fail.
  if (!is_root()) {
    GTEST_SKIP() << "needs root for the unrestricted outcomes";
  }
  const std::string report = in_child([]() -> std::string {
    std::string out;
    const auto add = [&](const char* name, long rc) {
      out.append(name).append("=").append(outcome(rc)).append("\n");
    };
    add("socket_unix", ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    add("setns", ::setns(-1, 0));
    return out;
  });
  EXPECT_EQ(report, "socket_unix=ok\nsetns=EBADF\n");
}

TEST(RestrictSelf, PlainFileCallsStillWork) {
  if (!is_root()) {
    GTEST_SKIP() << "restrict_self drops capabilities only a root process has";
  }
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  const std::string dir = temp.path();
  const std::string report = in_child([&]() -> std::string {
    if (auto r = restrict_self(k_some_caps); !r) {
      return "restrict_self: " + r.error().message;
    }
    const std::string a = dir + "/a";
    const std::string b = dir + "/b";
    const int fd = ::open(a.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      return "open for writing: " + outcome(fd);
    }
    const ssize_t written = ::write(fd, "hello", 5);
    ::close(fd);
    if (written != 5) {
      return "write: " + outcome(written);
    }
    if (::rename(a.c_str(), b.c_str()) != 0) {
      return "rename: " + outcome(-1);
    }
    if (::mkdir((dir + "/d").c_str(), 0755) != 0 || ::symlink("b", (dir + "/l").c_str()) != 0) {
      return "mkdir/symlink: " + outcome(-1);
    }
    const int in = ::open((dir + "/l").c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) {
      return "open for reading: " + outcome(in);
    }
    char buffer[16]{};
    const ssize_t n = ::read(in, buffer, sizeof buffer);
    ::close(in);
    return "read " + std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0);
  });
  EXPECT_EQ(report, "read hello");
  EXPECT_EQ(host_listing(dir), (std::vector<std::string>{"b", "d", "l"}));
}

TEST(RestrictSelf, KeepsOnlyTheGivenCapabilitiesAndSetsNoNewPrivs) {
  if (!is_root()) {
    GTEST_SKIP() << "restrict_self drops capabilities only a root process has";
  }
  const std::string report = in_child([]() -> std::string {
    if (auto r = restrict_self(k_some_caps); !r) {
      return "restrict_self: " + r.error().message;
    }
    auto status = read_file("/proc/self/status");
    if (!status) {
      return status.error().message;
    }
    std::string out;
    for (const char* key : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"}) {
      out.append(key).append(" ").append(status_field(*status, key)).append("\n");
    }
    return out;
  });
  // CAP_DAC_OVERRIDE (1), CAP_DAC_READ_SEARCH (2), CAP_FOWNER (3): 0b1110.
  EXPECT_EQ(report,
            "CapInh 0000000000000000\n"
            "CapPrm 000000000000000e\n"
            "CapEff 000000000000000e\n"
            "CapBnd 000000000000000e\n"
            "CapAmb 0000000000000000\n"
            "NoNewPrivs 1\n"
            "Seccomp 2\n");
}

TEST(RestrictSelf, AnEmptyKeepListDropsEverything) {
  if (!is_root()) {
    GTEST_SKIP() << "restrict_self drops capabilities only a root process has";
  }
  const std::string report = in_child([]() -> std::string {
    if (auto r = restrict_self({}); !r) {
      return "restrict_self: " + r.error().message;
    }
    auto status = read_file("/proc/self/status");
    if (!status) {
      return status.error().message;
    }
    return status_field(*status, "CapEff") + " " + status_field(*status, "CapPrm") + " " +
           status_field(*status, "CapBnd");
  });
  EXPECT_EQ(report, "0000000000000000 0000000000000000 0000000000000000");
}

// --- seal_host_program ------------------------------------------------------------------------------

TEST(SealHostProgram, AcceptsTheStaticHostLdconfig) {
  SKIP_WITHOUT_LDCONFIG();
  auto sealed = seal_host_program("/sbin/ldconfig");
  ASSERT_TRUE(sealed) << sealed.error().message;
  EXPECT_EQ(::fcntl(sealed->get(), F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  EXPECT_EQ(::fcntl(sealed->get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  // Execute-only: the unprivileged sandboxed program cannot read its own image (and so is not dumpable).
  struct stat st {};
  ASSERT_EQ(::fstat(sealed->get(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0111U);
  // The copy is the host program, byte for byte, and cannot be changed.
  auto copy = read_file("/proc/self/fd/" + std::to_string(sealed->get()));
  ASSERT_TRUE(copy) << copy.error().message;
  EXPECT_EQ(*copy, read_file("/sbin/ldconfig").value_or("<unreadable>"));
  EXPECT_EQ(::pwrite(sealed->get(), "x", 1, 0), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(::ftruncate(sealed->get(), 0), -1);
  EXPECT_EQ(errno, EPERM);
}

TEST(SealHostProgram, RefusesADynamicallyLinkedProgram) {
  if (::access("/bin/true", R_OK) != 0) {
    GTEST_SKIP() << "no /bin/true on this host";
  }
  auto sealed = seal_host_program("/bin/true");
  ASSERT_FALSE(sealed);
  EXPECT_EQ(sealed.error().message,
            "host program /bin/true: dynamically linked; only a statically linked program can run inside a "
            "container "
            "root without loading the image's dynamic loader");
}

TEST(SealHostProgram, RefusesFilesThatAreNotStaticExecutables) {
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  const std::string script = temp.write("ldconfig", "#!/bin/sh\ntouch /tmp/pwned\n");
  auto not_elf = seal_host_program(script);
  ASSERT_FALSE(not_elf);
  EXPECT_EQ(not_elf.error().message, "host program " + script + ": not an ELF file");

  const std::string truncated = temp.write("truncated", std::string("\x7f"
                                                                    "ELF\x02\x01\x01",
                                                                    7) +
                                                            std::string(10, '\0'));
  auto short_header = seal_host_program(truncated);
  ASSERT_FALSE(short_header);
  EXPECT_EQ(short_header.error().message, "host program " + truncated + ": truncated ELF header");

  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_type = ET_REL;
  const std::string object =
      temp.write("object.o", std::string(reinterpret_cast<const char*>(&header), sizeof header));
  auto relocatable = seal_host_program(object);
  ASSERT_FALSE(relocatable);
  EXPECT_EQ(relocatable.error().message, "host program " + object + ": not an executable");

  header.e_type = ET_EXEC;
  header.e_phentsize = sizeof(Elf64_Phdr);
  header.e_phnum = 100;
  header.e_phoff = sizeof header;
  const std::string bounds =
      temp.write("bounds", std::string(reinterpret_cast<const char*>(&header), sizeof header));
  auto out_of_bounds = seal_host_program(bounds);
  ASSERT_FALSE(out_of_bounds);
  EXPECT_EQ(out_of_bounds.error().message, "host program " + bounds + ": program headers out of bounds");

  const std::string empty = temp.write("empty", "");
  auto empty_file = seal_host_program(empty);
  ASSERT_FALSE(empty_file);
  EXPECT_EQ(empty_file.error().message, "host program " + empty + ": not a regular file of a plausible size");

  const std::string fifo = temp.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0755), 0);
  auto fifo_file = seal_host_program(fifo);  // never blocks in open
  ASSERT_FALSE(fifo_file);
  EXPECT_EQ(fifo_file.error().message, "host program " + fifo + ": not a regular file of a plausible size");

  auto directory = seal_host_program(temp.path());
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().message,
            "host program " + temp.path() + ": not a regular file of a plausible size");

  auto missing = seal_host_program(temp.path() + "/missing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "host program " + temp.path() + "/missing: No such file or directory");
}

// --- Scratch and SandboxCgroup ----------------------------------------------------------------------

TEST(Scratch, PutsAndTakesBackRegularFilesOnly) {
  if (!is_root()) {
    GTEST_SKIP() << "making a tmpfs needs root";
  }
  auto scratch = Scratch::make("/etc/.scratch");
  ASSERT_TRUE(scratch) << scratch.error().message;
  ASSERT_TRUE(scratch->put("in", "text"));
  EXPECT_EQ(scratch->take("in", 16).value_or("<error>"), "text");
  auto again = scratch->put("in", "other");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().message, "write /etc/.scratch/in: File exists");
  ASSERT_EQ(::symlinkat("in", scratch->fd(), "link"), 0);
  ASSERT_EQ(::mkdirat(scratch->fd(), "dir", 0700), 0);
  std::string report;
  for (const char* name : {"link", "dir", "missing"}) {
    auto taken = scratch->take(name, 16);
    report += taken ? "ok\n" : taken.error().message + "\n";
  }
  auto big = scratch->take("in", 3);
  report += big ? "ok\n" : big.error().message + "\n";
  EXPECT_EQ(report,
            "/etc/.scratch/link: Too many levels of symbolic links\n"
            "/etc/.scratch/dir: not a regular file\n"
            "/etc/.scratch/missing: No such file or directory\n"
            "read /etc/.scratch/in: larger than 3 bytes\n");
  // Its root belongs to the sandboxed program's host identity, and only to it.
  struct stat st {};
  ASSERT_EQ(::fstat(scratch->fd(), &st), 0);
  EXPECT_EQ(st.st_uid, k_sandbox_host_id);
  EXPECT_EQ(st.st_gid, k_sandbox_host_id);
  EXPECT_EQ(st.st_mode & 07777, 0700U);
}

TEST(SandboxCgroup, OpenNamesAMissingCgroup) {
  auto cgroup = SandboxCgroup::open("/nonexistent/v2", "");
  ASSERT_FALSE(cgroup);
  EXPECT_EQ(cgroup.error().message, "cgroup /nonexistent/v2: No such file or directory");
  auto v1 = SandboxCgroup::open("", "/nonexistent/v1");
  ASSERT_FALSE(v1);
  EXPECT_EQ(v1.error().message, "cgroup /nonexistent/v1/cgroup.procs: No such file or directory");
  auto none = SandboxCgroup::open("", "");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->v2);
  EXPECT_FALSE(none->v1_procs);
}

// --- run_sandboxed ----------------------------------------------------------------------------------

// A root and the probe (tests/rootfs/sandbox_probe.hpp), sealed.
class RunSandboxed : public testing::Test {
 protected:
  void SetUp() override {
    if (!is_root() || !test::can_unshare_mounts()) {
      GTEST_SKIP() << "the sandbox needs root (namespaces, mounts, pivot_root)";
    }
    ASSERT_FALSE(m_temp.path().empty());
    // A host file only root may read: what an inherited descriptor to the host's "/" would give away.
    m_secret = m_temp.path() + "/host-secret";
    write_host_file(m_secret, "host secret", 0600);
    const std::string probe = test::build_sandbox_probe(m_temp, m_secret.substr(1));
    if (probe.empty()) {
      GTEST_SKIP() << "cannot build a static program here (cc -static)";
    }
    auto program = seal_host_program(probe);
    ASSERT_TRUE(program) << program.error().message;
    m_program = std::move(*program);
    m_root = m_temp.path() + "/rootfs";
    make_host_dirs(m_root + "/etc");
    make_host_dirs(m_root + "/usr/lib");
  }

  // The probe's one line, or how run_sandboxed failed otherwise (the probe always exits with status 3).
  [[nodiscard]] std::string probe(const std::vector<std::string>& args, const SandboxLimits& limits = {},
                                  const Scratch* scratch = nullptr, const std::string& root = "") const {
    auto opened = Root::open(root.empty() ? m_root : root);
    if (!opened) {
      return opened.error().message;
    }
    std::vector<std::string> argv{"probe"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_sandboxed(*opened, m_program, argv, limits, scratch);
    const std::string prefix = "probe exited with status 3: ";
    if (r || !r.error().message.starts_with(prefix)) {
      return r ? "succeeded" : r.error().message;
    }
    return r.error().message.substr(prefix.size());
  }

  test::TempDir m_temp;
  std::string m_secret;
  std::string m_root;
  UniqueFd m_program;
};

TEST_F(RunSandboxed, RunsTheProgramPivotedIntoTheRootAndConfined) {
  EXPECT_EQ(probe({"look", m_secret}),
            "\"root=etc,usr host=hidden socket=EPERM mount=EPERM env=none uid=0 proc=0\"");
  // The sandbox's mounts stayed in its namespace: nothing is mounted on the root here.
  auto mountinfo = read_file("/proc/self/mountinfo");
  ASSERT_TRUE(mountinfo);
  EXPECT_EQ(mountinfo->find(m_root), std::string::npos);
}

// A procfs in the root (the container's; here one of the host's PID namespace) would offer /proc/sys and
// /proc/<pid>/root links out of it: the sandbox covers it with an empty read-only tmpfs, also when the
// root was named through a symlink (mountinfo has canonical paths). Before, a fresh procfs of the
// sandbox's own was mounted there, writable (proc=1: the program itself).
TEST_F(RunSandboxed, CoversEveryProcfsInTheRootWithAnEmptyReadOnlyTmpfs) {
  make_host_dirs(m_root + "/proc");
  make_host_link(m_root, m_temp.path() + "/alias");
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    if (::mount("proc", (m_root + "/proc").c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      return "cannot mount a procfs in the root";
    }
    return probe({"look", "/proc/1/root/etc"}) + "\n" +
           probe({"look", "/proc/1/root/etc"}, {}, nullptr, m_temp.path() + "/alias");
  });
  const std::string line = "\"root=etc,proc,usr host=hidden socket=EPERM mount=EPERM env=none uid=0 proc=0\"";
  EXPECT_EQ(outcome, line + "\n" + line);
}

// Issue 21 item 1: the program (here as an attacker would have it) is root only in its own user
// namespace: no host sysctl, core_pattern or sysrq-trigger can be opened for writing (there is no /proc),
// nothing in the root can be written; it writes in its scratch directory only, whose file the host sees
// owned by k_sandbox_host_id. A file of the image only root may read is read (issue 33 item 6: the root's
// own filesystem is idmapped to the sandbox, as root's ldconfig reads a 0600 drop-in; see below).
TEST_F(RunSandboxed, TheProgramIsUnprivilegedAndCannotWriteTheRootOrAHostSysctl) {
  make_host_dirs(m_root + "/proc");
  make_host_dirs(m_root + "/etc/.scratch");
  write_host_file(m_root + "/etc/secret", "image secret", 0600);
  const std::string before = test::tree_digest(m_root);
  auto scratch = Scratch::make("/etc/.scratch");
  ASSERT_TRUE(scratch) << scratch.error().message;
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    if (::mount("proc", (m_root + "/proc").c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      return "cannot mount a procfs in the root";
    }
    return probe({"attack", "/etc/.scratch"}, {}, &*scratch);
  });
  EXPECT_EQ(outcome,
            "\"printk=ENOENT core_pattern=ENOENT sysrq=ENOENT proc=0 write_root=EROFS secret=ok "
            "device=ENOENT fds=none host_secret=none scratch=ok uid=0\"");
  struct stat st {};
  ASSERT_EQ(::fstatat(scratch->fd(), "owner", &st, AT_SYMLINK_NOFOLLOW), 0);
  EXPECT_EQ(st.st_uid, k_sandbox_host_id);
  EXPECT_EQ(st.st_gid, k_sandbox_host_id);
  EXPECT_EQ(test::tree_digest(m_root), before);
}

// Issue 33 item 6: the root's own filesystem is seen as its owner sees it (its top mount idmapped: the
// owner of the root's top directory is the sandbox's k_sandbox_host_id), so a 0600 file and a 0700 folder
// of the image open, and still nothing of it can be written; a mount below it (here a host folder bound
// into the root, as a volume) keeps its owners: its file only root may read stays unread. Never host root.
TEST_F(RunSandboxed, ReadsTheRootAsItsOwnerButNoMountBelowIt) {
  write_host_file(m_root + "/etc/secret", "image secret", 0600);
  write_host_file(m_root + "/opt/app/lib/libapp.so.1", "", 0600);
  ASSERT_EQ(::chmod((m_root + "/opt/app/lib").c_str(), 0700), 0);
  make_host_dirs(m_root + "/volume");
  write_host_file(m_temp.path() + "/host-volume/secret", "host volume secret", 0600);
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    if (::mount((m_temp.path() + "/host-volume").c_str(), (m_root + "/volume").c_str(), nullptr, MS_BIND,
                nullptr) != 0) {
      return "cannot bind a host folder into the root";
    }
    std::string notes;
    SandboxLimits limits;
    limits.note = [&](SandboxView view, const std::string& m) {
      notes += std::string(view == SandboxView::owner ? "owner: " : "nobody: ") + m + "\n";
    };
    std::string out = probe({"open", "/etc/secret"}, limits) + "\n";
    out += notes;
    for (const char* path : {"/opt/app/lib/libapp.so.1", "/volume/secret"}) {
      out += probe({"open", path}) + "\n";
    }
    return out + probe({"attack"});
  });
  EXPECT_EQ(outcome, "\"open /etc/secret: ok\"\nowner: sandbox: reads " + m_root +
                         " as the owner of its root (idmapped mount)\n\"open /opt/app/lib/libapp.so.1: ok\"\n"
                         "\"open /volume/secret: EACCES\"\n"
                         "\"printk=ENOENT core_pattern=ENOENT sysrq=ENOENT proc=0 write_root=EROFS secret=ok "
                         "device=ENOENT fds=none host_secret=none scratch=none uid=0\"");
}

// Where the root cannot be idmapped (a filesystem or kernel that refuses it; here not asked for), the
// program reads it as nobody: a 0600 file of the image stays unread, and the note says so and why.
TEST_F(RunSandboxed, WithoutIdmappingItReadsAsNobodyAndSaysSo) {
  write_host_file(m_root + "/etc/secret", "image secret", 0600);
  std::string notes;
  SandboxLimits limits;
  limits.idmap = false;
  limits.note = [&](SandboxView view, const std::string& m) {
    notes += std::string(view == SandboxView::nobody ? "nobody: " : "other: ") + m + "\n";
  };
  EXPECT_EQ(probe({"open", "/etc/secret"}, limits), "\"open /etc/secret: EACCES\"");
  EXPECT_EQ(notes, "nobody: sandbox: reads " + m_root +
                       " as nobody (idmapping not asked for); a file or folder only its owner can read is "
                       "skipped\n");
}

// Issue 21 item 5: a descriptor the caller holds without close-on-exec (here one to the host's "/")
// does not reach the program, which would read the host's files through it past pivot_root.
TEST_F(RunSandboxed, NoInheritedDescriptorReachesTheProgram) {
  const UniqueFd host_root(::open("/", O_PATH | O_DIRECTORY));  // inheritable, as a careless caller's
  ASSERT_TRUE(host_root);
  const UniqueFd high(::dup2(host_root.get(), 100));
  ASSERT_EQ(high.get(), 100);
  EXPECT_EQ(probe({"attack"}),
            "\"printk=ENOENT core_pattern=ENOENT sysrq=ENOENT proc=0 write_root=EROFS secret=ENOENT "
            "device=ENOENT fds=none host_secret=none scratch=none uid=0\"");
}

// Issue 21 item 4: an image's FIFO blocks the program in open() for ever; it is killed at its deadline
// and the caller gets one line.
TEST_F(RunSandboxed, KillsTheProgramAtItsDeadline) {
  ASSERT_EQ(::mkfifo((m_root + "/fifo").c_str(), 0666), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(
      probe({"open", "/fifo"}, {.deadline = std::chrono::milliseconds(1000), .cgroup = nullptr, .note = {}}),
      "probe was killed after its deadline of 1 s (a FIFO or a device in the image can block it)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(
      probe({"open", "/etc"}, {.deadline = std::chrono::milliseconds(1500), .cgroup = nullptr, .note = {}}),
      "\"open /etc: ok\"");
}

// Issue 21 items 1 and 3: started in the given cgroups (v2: cloned into it; v1: moved into the devices
// one before exec), the program is, as the host sees it, k_sandbox_host_id with no capability, no
// supplementary group, no_new_privs and the seccomp filter.
TEST_F(RunSandboxed, StartsInTheGivenCgroupsAsAnUnprivilegedUser) {
  const test::TestCgroups cgroups;
  if (cgroups.v2().empty() && cgroups.v1().empty()) {
    GTEST_SKIP() << "no cgroup hierarchy to make a test cgroup in";
  }
  auto opened = SandboxCgroup::open(cgroups.v2(), cgroups.v1());
  ASSERT_TRUE(opened) << opened.error().message;
  const SandboxLimits limits{.deadline = std::chrono::milliseconds(20000),
                             .cgroup = std::make_shared<const SandboxCgroup>(std::move(*opened)),
                             .note = {}};
  std::string outcome;
  std::thread runner([&] { outcome = probe({"sleep", "60"}, limits); });
  // The program's pid, from the cgroup it runs in, once it has exec'ed (seccomp on).
  std::string status;
  std::string seen_in;
  for (int tries = 0; tries < 200 && status.find("Seccomp:\t2") == std::string::npos; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    seen_in.clear();
    std::string pid;
    for (const auto& dir : {cgroups.v2(), cgroups.v1()}) {
      const std::string procs = dir.empty() ? "" : read_file(dir + "/cgroup.procs").value_or("");
      if (!dir.empty() && !trim(procs).empty()) {
        pid = std::string(trim(procs));
        seen_in += dir == cgroups.v2() ? "v2 " : "v1 ";
      }
    }
    status = pid.empty() ? "" : read_file("/proc/" + pid + "/status").value_or("");
  }
  std::string report = "in: " + seen_in + "\n";
  for (const char* key :
       {"Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"}) {
    report.append(key).append(" ").append(status_field(status, key)).append("\n");
  }
  // Done with it: kill it now rather than at its deadline.
  for (const auto& dir : {cgroups.v2(), cgroups.v1()}) {
    if (!dir.empty()) {
      const std::string procs = read_file(dir + "/cgroup.procs").value_or("");
      if (const auto pid = trim(procs); !pid.empty()) {
        ::kill(std::stoi(std::string(pid)), SIGKILL);
      }
    }
  }
  runner.join();
  std::string expected_in =
      (cgroups.v2().empty() ? "" : "v2 ") + std::string(cgroups.v1().empty() ? "" : "v1 ");
  EXPECT_EQ(report, "in: " + expected_in +
                        "\n"
                        "Uid 65534\t65534\t65534\t65534\n"
                        "Gid 65534\t65534\t65534\t65534\n"
                        "Groups \n"
                        "CapInh 0000000000000000\n"
                        "CapPrm 0000000000000000\n"
                        "CapEff 0000000000000000\n"
                        "CapBnd 0000000000000000\n"
                        "CapAmb 0000000000000000\n"
                        "NoNewPrivs 1\n"
                        "Seccomp 2\n");
  EXPECT_EQ(outcome, "probe was killed by signal 9");
}

// Where no user namespace can be made (here a filter refuses unshare(CLONE_NEWUSER) with ENOSPC, as
// user.max_user_namespaces=0 does), the program is not run at all: never as root instead.
TEST_F(RunSandboxed, WithoutAUserNamespaceTheProgramNeverRuns) {
  const std::string outcome = test::in_child([&]() -> std::string {
    const std::unique_ptr<void, decltype(&seccomp_release)> ctx(seccomp_init(SCMP_ACT_ALLOW),
                                                                &seccomp_release);
    if (!ctx ||
        seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSPC), SCMP_SYS(unshare), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, static_cast<scmp_datum_t>(CLONE_NEWUSER),
                                 static_cast<scmp_datum_t>(CLONE_NEWUSER))) != 0 ||
        seccomp_load(ctx.get()) != 0) {
      return "cannot load the test's filter";
    }
    return probe({"look", "/"});
  });
  EXPECT_EQ(outcome,
            "probe exited with status 126: \"sandbox: create its user namespace: No space left on device "
            "(user.max_user_namespaces is 0 or used up; the program is never run as root instead)\"");
}

// Issue 22: a caller that runs chrooted (a runtime entered with chroot instead of pivot_root, in a mount
// namespace of its own) still gets its sandbox: the root's path is never looked up in the child, and the
// child leaves the chroot for its namespace's root before it pivots. Before: "sandbox: bind the container
// root: No such file or directory".
TEST_F(RunSandboxed, ACallerThatRunsChrootedGetsTheSameSandbox) {
  const std::string jail = m_temp.path() + "/jail";
  make_host_dirs(jail + "/proc");
  make_host_dirs(jail + "/rootfs/etc");
  make_host_dirs(jail + "/rootfs/opt");
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    if (::mount("/proc", (jail + "/proc").c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
        ::chroot(jail.c_str()) != 0 || ::chdir("/") != 0) {
      return "cannot chroot";
    }
    return probe({"look", "/proc/1/root" + jail}, {}, nullptr, "/rootfs");
  });
  EXPECT_EQ(outcome, "\"root=etc,opt host=hidden socket=EPERM mount=EPERM env=none uid=0 proc=0\"");
}

TEST_F(RunSandboxed, ReportsTheFirstLineOfAFailedProgram) {
  SKIP_WITHOUT_LDCONFIG();
  auto root = Root::open(m_root);
  ASSERT_TRUE(root) << root.error().message;
  auto ldconfig = seal_host_program("/sbin/ldconfig");
  ASSERT_TRUE(ldconfig) << ldconfig.error().message;
  auto r = run_sandboxed(*root, *ldconfig, {"ldconfig", "-p", "-C", "/etc/missing.cache"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "ldconfig exited with status 1: \"ldconfig: Can't open cache file /etc/missing.cache\"");
  // The root is read-only to it: a cache can only go to the scratch directory.
  auto readonly = run_sandboxed(*root, *ldconfig, {"ldconfig", "-C", "/etc/ld.so.cache", "-f", "/etc/none"});
  ASSERT_FALSE(readonly);
  EXPECT_EQ(readonly.error().message,
            "ldconfig exited with status 1: \"ldconfig: Can't create temporary cache file "
            "/etc/ld.so.cache~: Read-only file system\"");
  EXPECT_EQ(host_listing(m_root + "/etc"), std::vector<std::string>{});
}

TEST_F(RunSandboxed, SucceedsOnExitStatusZeroAndLeavesItsOutputInTheScratchDirectory) {
  SKIP_WITHOUT_LDCONFIG();
  make_host_dirs(m_root + "/etc/out");
  auto root = Root::open(m_root);
  ASSERT_TRUE(root) << root.error().message;
  auto ldconfig = seal_host_program("/sbin/ldconfig");
  ASSERT_TRUE(ldconfig) << ldconfig.error().message;
  auto scratch = Scratch::make("/etc/out");
  ASSERT_TRUE(scratch) << scratch.error().message;
  ASSERT_TRUE(scratch->put("ld.so.conf", "/usr/lib\n"));
  auto r = run_sandboxed(*root, *ldconfig,
                         {"ldconfig", "-X", "-C", "/etc/out/ld.so.cache", "-f", "/etc/out/ld.so.conf"}, {},
                         &*scratch);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(scratch->take("ld.so.cache", 1 << 20).value_or("").starts_with("glibc-ld.so.cache1.1"));
  EXPECT_EQ(host_listing(m_root + "/etc"), std::vector<std::string>{"out"});
  EXPECT_EQ(host_listing(m_root + "/etc/out"), std::vector<std::string>{});
}

}  // namespace
}  // namespace gpuctk::rootfs
