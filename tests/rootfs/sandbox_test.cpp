#include "rootfs/sandbox.hpp"

#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "rootfs/rootfs_test_support.hpp"
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

// --- restrict_self ----------------------------------------------------------------------------------

TEST(RestrictSelf, ForbiddenSystemCallsFailWithEPERM) {
  if (!is_root()) {
    GTEST_SKIP() << "restrict_self drops capabilities only a root process has";
  }
  const std::string report = in_child([]() -> std::string {
    if (auto r = restrict_self(k_ldconfig_caps); !r) {
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
    if (auto r = restrict_self(k_ldconfig_caps); !r) {
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

TEST(RestrictSelf, KeepsOnlyTheLdconfigCapabilitiesAndSetsNoNewPrivs) {
  if (!is_root()) {
    GTEST_SKIP() << "restrict_self drops capabilities only a root process has";
  }
  const std::string report = in_child([]() -> std::string {
    if (auto r = restrict_self(k_ldconfig_caps); !r) {
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
  if (::access("/sbin/ldconfig", R_OK) != 0) {
    GTEST_SKIP() << "no /sbin/ldconfig on this host";
  }
  auto sealed = seal_host_program("/sbin/ldconfig");
  ASSERT_TRUE(sealed) << sealed.error().message;
  EXPECT_EQ(::fcntl(sealed->get(), F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  EXPECT_EQ(::fcntl(sealed->get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
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

  auto directory = seal_host_program(temp.path());
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().message,
            "host program " + temp.path() + ": not a regular file of a plausible size");

  auto missing = seal_host_program(temp.path() + "/missing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "host program " + temp.path() + "/missing: No such file or directory");
}

// --- run_sandboxed ----------------------------------------------------------------------------------

// A static probe program, compiled at test time, that reports what it can see and do from inside the
// sandbox on one line of stdout and exits with status 3 (so the line comes back in the error).
constexpr const char* k_probe_source = R"(
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>
static int cmp(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }
int main(int argc, char** argv) {
  char* names[64];
  int n = 0;
  DIR* d = opendir("/");
  struct dirent* e;
  while (d && (e = readdir(d)) && n < 64) {
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) names[n++] = strdup(e->d_name);
  }
  qsort(names, n, sizeof *names, cmp);
  printf("argv=%s root=", argc > 1 ? argv[1] : "");
  for (int i = 0; i < n; ++i) printf("%s%s", i ? "," : "", names[i]);
  printf(" host=%s", access(argc > 2 ? argv[2] : "/", F_OK) == 0 ? "visible" : "hidden");
  printf(" socket=%s", socket(AF_UNIX, SOCK_STREAM, 0) < 0 && errno == EPERM ? "EPERM" : "allowed");
  printf(" mount=%s", mount("none", "/", "tmpfs", 0, 0) < 0 && errno == EPERM ? "EPERM" : "allowed");
  printf(" env=%s uid=%d", getenv("PATH") ? getenv("PATH") : "none", (int)getuid());
  int procs = 0;  /* processes this /proc shows: 1 for a procfs of the sandbox's own PID namespace */
  DIR* p = opendir("/proc");
  while (p && (e = readdir(p))) procs += e->d_name[0] >= '0' && e->d_name[0] <= '9';
  printf(" procs=%d\n", procs);
  return 3;
}
)";

// Compiles k_probe_source statically into `dir`; returns the program path or "" (no compiler, no libc.a).
std::string build_static_probe(const test::TempDir& dir) {
  const std::string source = dir.write("probe.c", k_probe_source);
  const std::string program = dir.path() + "/probe";
  const std::string command = "cc -static -O1 -o " + program + " " + source + " >/dev/null 2>&1";
  return std::system(command.c_str()) == 0 ? program : std::string();
}

TEST(RunSandboxed, RunsTheProgramPivotedIntoTheRootAndConfined) {
  if (!is_root()) {
    GTEST_SKIP() << "the sandbox needs root (namespaces, pivot_root)";
  }
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  const std::string probe = build_static_probe(temp);
  if (probe.empty()) {
    GTEST_SKIP() << "cannot build a static program here (cc -static)";
  }
  const std::string root_path = temp.path() + "/rootfs";
  make_host_dirs(root_path + "/etc");
  make_host_dirs(root_path + "/usr/lib");
  const std::string sentinel = temp.write("host-sentinel", "on the host only");
  auto root = Root::open(root_path);
  ASSERT_TRUE(root) << root.error().message;
  auto program = seal_host_program(probe);
  ASSERT_TRUE(program) << program.error().message;
  auto r = run_sandboxed(*root, *program, {"probe", "first-arg", sentinel});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "probe exited with status 3: \"argv=first-arg root=etc,usr host=hidden socket=EPERM mount=EPERM "
            "env=none "
            "uid=0 procs=0\"");
  // The sandbox's mounts stayed in its namespace: nothing is mounted on the root here.
  auto mountinfo = read_file("/proc/self/mountinfo");
  ASSERT_TRUE(mountinfo);
  EXPECT_EQ(mountinfo->find(root_path), std::string::npos);
}

// A procfs of another PID namespace in the root (the container's, here the host's) would offer
// /proc/<pid>/root links out of it: the sandbox covers it with a fresh one of its own, also when the
// root was named through a symlink (mountinfo has canonical paths).
TEST(RunSandboxed, CoversEveryProcfsInTheRootWithItsOwn) {
  if (!is_root() || !test::can_unshare_mounts()) {
    GTEST_SKIP() << "the sandbox needs root (namespaces, pivot_root)";
  }
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  const std::string probe = build_static_probe(temp);
  if (probe.empty()) {
    GTEST_SKIP() << "cannot build a static program here (cc -static)";
  }
  const std::string root_path = temp.path() + "/rootfs";
  make_host_dirs(root_path + "/proc");
  make_host_link(root_path, temp.path() + "/alias");
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    if (::mount("proc", (root_path + "/proc").c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) !=
        0) {
      return "cannot mount a procfs in the root";
    }
    std::string out;
    for (const std::string& name : {root_path, temp.path() + "/alias"}) {
      auto root = Root::open(name);
      auto program = seal_host_program(probe);
      if (!root || !program) {
        return "set-up failed";
      }
      auto r = run_sandboxed(*root, *program, {"probe"});
      out += (r ? std::string("ok") : r.error().message) + "\n";
    }
    return out;
  });
  const std::string line =
      "probe exited with status 3: \"argv= root=proc host=visible socket=EPERM mount=EPERM env=none uid=0 "
      "procs=1\"\n";
  EXPECT_EQ(outcome, line + line);
}

TEST(RunSandboxed, ReportsTheFirstLineOfAFailedProgram) {
  if (!is_root()) {
    GTEST_SKIP() << "the sandbox needs root (namespaces, pivot_root)";
  }
  if (::access("/sbin/ldconfig", R_OK) != 0) {
    GTEST_SKIP() << "no /sbin/ldconfig on this host";
  }
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  make_host_dirs(temp.path() + "/rootfs/etc");
  auto root = Root::open(temp.path() + "/rootfs");
  ASSERT_TRUE(root) << root.error().message;
  auto ldconfig = seal_host_program("/sbin/ldconfig");
  ASSERT_TRUE(ldconfig) << ldconfig.error().message;
  auto r = run_sandboxed(*root, *ldconfig, {"ldconfig", "-p", "-C", "/etc/missing.cache"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "ldconfig exited with status 1: \"ldconfig: Can't open cache file /etc/missing.cache\"");
  EXPECT_EQ(host_listing(temp.path() + "/rootfs/etc"), std::vector<std::string>{});
}

TEST(RunSandboxed, SucceedsOnExitStatusZero) {
  if (!is_root()) {
    GTEST_SKIP() << "the sandbox needs root (namespaces, pivot_root)";
  }
  if (::access("/sbin/ldconfig", R_OK) != 0) {
    GTEST_SKIP() << "no /sbin/ldconfig on this host";
  }
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  make_host_dirs(temp.path() + "/rootfs/etc");
  auto root = Root::open(temp.path() + "/rootfs");
  ASSERT_TRUE(root) << root.error().message;
  auto ldconfig = seal_host_program("/sbin/ldconfig");
  ASSERT_TRUE(ldconfig) << ldconfig.error().message;
  auto r = run_sandboxed(*root, *ldconfig, {"ldconfig", "-C", "/etc/ld.so.cache", "-f", "/etc/none.conf"});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(host_listing(temp.path() + "/rootfs/etc"), (std::vector<std::string>{"ld.so.cache"}));
}

}  // namespace
}  // namespace gpuctk::rootfs
