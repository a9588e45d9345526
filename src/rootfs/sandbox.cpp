#include "rootfs/sandbox.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>

#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::rootfs {

namespace {

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U  // Linux 6.3: ask for an executable memfd where vm.memfd_noexec defaults to no
#endif

// The largest host program we copy into a memfd (ldconfig is about 1 MiB).
constexpr off_t k_max_program_size = 64 << 20;

// What the sandboxed program may write to stdout and stderr that we keep for the error message.
constexpr size_t k_max_output = 64 << 10;

// System calls a static glibc program that reads and writes files needs (ldconfig: directory scans,
// ld.so.cache written to a temporary file, fsync'ed and renamed; SONAME links created). Everything
// else, including mount, ptrace, bpf, keyctl, kexec, module loading, sockets, clone/unshare/setns,
// chroot and mknod, fails with EPERM.
constexpr const char* k_allowed_syscalls[] = {
    // files and directories
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "lseek",
    "open",
    "openat",
    "close",
    "close_range",
    "fstat",
    "stat",
    "lstat",
    "newfstatat",
    "statx",
    "access",
    "faccessat",
    "faccessat2",
    "getdents",
    "getdents64",
    "readlink",
    "readlinkat",
    "symlink",
    "symlinkat",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "renameat2",
    "mkdir",
    "mkdirat",
    "chmod",
    "fchmod",
    "fchmodat",
    "fsync",
    "fdatasync",
    "ftruncate",
    "fcntl",
    "dup",
    "dup2",
    "dup3",
    "getcwd",
    "chdir",
    "fchdir",
    "umask",
    "utimensat",
    // memory
    "mmap",
    "munmap",
    "mprotect",
    "mremap",
    "madvise",
    "brk",
    // process start-up and exit of a static glibc program
    "execve",
    "execveat",
    "arch_prctl",
    "set_tid_address",
    "set_robust_list",
    "rseq",
    "prlimit64",
    "getrlimit",
    "uname",
    "getrandom",
    "futex",
    "exit",
    "exit_group",
    // signals, identity and time
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sigaltstack",
    "getpid",
    "gettid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "clock_gettime",
    "gettimeofday",
    "time",
    "nanosleep",
    "clock_nanosleep",
    "sched_yield",
};

Result<void> load_seccomp() {
  const std::unique_ptr<void, decltype(&seccomp_release)> ctx(seccomp_init(SCMP_ACT_ERRNO(EPERM)),
                                                              &seccomp_release);
  if (!ctx) {
    return fail("seccomp: cannot create a filter");
  }
  for (const char* name : k_allowed_syscalls) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) {
      continue;  // not a system call of this architecture (e.g. open on arm64)
    }
    if (const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0); rc != 0) {
      return fail_errno(std::string("seccomp: allow ") + name, -rc);
    }
  }
  // isatty(3) only: TCGETS. No other ioctl (TIOCSTI could type into the caller's terminal).
  if (const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                                      SCMP_A1(SCMP_CMP_EQ, static_cast<scmp_datum_t>(TCGETS)));
      rc != 0) {
    return fail_errno("seccomp: allow ioctl", -rc);
  }
  if (const int rc = seccomp_load(ctx.get()); rc != 0) {
    return fail_errno("seccomp: load the filter", -rc);
  }
  return {};
}

// Whether the ELF image in `bytes` asks for a program interpreter (PT_INTERP), i.e. is dynamically
// linked. Every offset is checked against the buffer. An error for a file that is not a complete ELF.
template <class Ehdr, class Phdr>
Result<bool> elf_has_interpreter(std::string_view bytes) {
  Ehdr header;
  if (bytes.size() < sizeof header) {
    return fail("truncated ELF header");
  }
  std::memcpy(&header, bytes.data(), sizeof header);
  if (header.e_type != ET_EXEC && header.e_type != ET_DYN) {
    return fail("not an executable");
  }
  if (header.e_phentsize != sizeof(Phdr)) {
    return fail("unexpected program header size");
  }
  const uint64_t end = uint64_t{header.e_phoff} + uint64_t{header.e_phnum} * sizeof(Phdr);
  if (header.e_phoff == 0 || end > bytes.size()) {
    return fail("program headers out of bounds");
  }
  for (size_t i = 0; i < header.e_phnum; ++i) {
    Phdr ph;
    std::memcpy(&ph, bytes.data() + header.e_phoff + i * sizeof(Phdr), sizeof ph);
    if (ph.p_type == PT_INTERP) {
      return true;
    }
  }
  return false;
}

Result<bool> is_dynamic_elf(std::string_view bytes) {
  if (bytes.size() < EI_NIDENT || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) {
    return fail("not an ELF file");
  }
  if (bytes[EI_CLASS] == ELFCLASS64) {
    return elf_has_interpreter<Elf64_Ehdr, Elf64_Phdr>(bytes);
  }
  if (bytes[EI_CLASS] == ELFCLASS32) {
    return elf_has_interpreter<Elf32_Ehdr, Elf32_Phdr>(bytes);
  }
  return fail("unknown ELF class");
}

// In the sandbox child: reports `what` on stderr (the parent's pipe) and exits; never returns.
[[noreturn]] void child_fail(const std::string& what, int err) {
  std::string line = "sandbox: " + what;
  if (err != 0) {
    line.append(": ").append(std::strerror(err));
  }
  line += '\n';
  [[maybe_unused]] const ssize_t n = ::write(2, line.data(), line.size());
  ::_exit(126);
}

// Decodes the octal escapes (\040 for a space) of a path in /proc/self/mountinfo.
std::string unescape_mountinfo(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto digit = [&](size_t j) { return text[j] >= '0' && text[j] <= '7'; };
    if (text[i] == '\\' && i + 3 < text.size() && digit(i + 1) && digit(i + 2) && digit(i + 3)) {
      out += static_cast<char>(((text[i + 1] - '0') << 6) | ((text[i + 2] - '0') << 3) | (text[i + 3] - '0'));
      i += 3;
      continue;
    }
    out += text[i];
  }
  return out;
}

// Mount points of every procfs at or below `root_path` in this mount namespace. A procfs of another
// PID namespace (the container's, the host's) offers /proc/<pid>/root links out of the root.
std::vector<std::string> procfs_mounts_under(const std::string& root_path) {
  std::vector<std::string> out;
  auto text = read_file("/proc/self/mountinfo");
  if (!text) {
    child_fail("read /proc/self/mountinfo", 0);
  }
  for (const auto line : split(*text, '\n')) {
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) {
      continue;
    }
    const auto fields = split(line.substr(0, dash), ' ');
    const auto tail = split(line.substr(dash + 3), ' ');
    if (fields.size() < 5 || tail.empty() || tail[0] != "proc") {
      continue;
    }
    std::string point = unescape_mountinfo(fields[4]);
    if (point == root_path || point.starts_with(root_path + "/")) {
      out.push_back(std::move(point));
    }
  }
  return out;
}

// The sandbox child, in its new namespaces. Never returns.
[[noreturn]] void child_main(const Root& root, int program_fd, const std::vector<std::string>& argv) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
    child_fail("PR_SET_PDEATHSIG", errno);
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    child_fail("make mounts private", errno);
  }
  // The root fd belongs to the parent's mount namespace, whose mounts cannot be bound from here: bind
  // the path, enter it (a walk by path ends on the topmost mount, the one just made) and check that it
  // is the directory we opened, not whatever was put at its path since.
  // The canonical path (what the fd resolves to, as mountinfo writes mount points), not the configured
  // one, which may run through a symlink (/var/run -> /run) and would then match no mount point below.
  std::string canonical(PATH_MAX, '\0');
  const std::string self = "/proc/self/fd/" + std::to_string(root.fd());
  const ssize_t length = ::readlink(self.c_str(), canonical.data(), canonical.size() - 1);
  if (length <= 0 || canonical.front() != '/') {
    child_fail("resolve the path of " + root.path(), length < 0 ? errno : 0);
  }
  canonical.resize(static_cast<size_t>(length));
  const char* path = canonical.c_str();
  if (::mount(path, path, nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    child_fail("bind the container root", errno);
  }
  if (::chdir(path) != 0) {
    child_fail("enter " + root.path(), errno);
  }
  struct stat here {};
  struct stat want {};
  if (::stat(".", &here) != 0 || ::fstat(root.fd(), &want) != 0 || here.st_dev != want.st_dev ||
      here.st_ino != want.st_ino) {
    child_fail(root.path() + " changed while it was being entered", 0);
  }
  for (const auto& point : procfs_mounts_under(canonical)) {
    if (::mount("proc", point.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      child_fail("mount a fresh procfs over " + point, errno);
    }
  }
  if (::syscall(SYS_pivot_root, ".", ".") != 0) {
    child_fail("pivot_root into " + root.path(), errno);
  }
  if (::umount2(".", MNT_DETACH) != 0) {
    child_fail("detach the old root", errno);
  }
  if (::chdir("/") != 0) {
    child_fail("chdir /", errno);
  }
  if (auto r = restrict_self(k_ldconfig_caps); !r) {
    child_fail(r.error().message, 0);
  }
  std::vector<char*> args;
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  char* env[] = {nullptr};
  ::syscall(SYS_execveat, program_fd, "", args.data(), env, AT_EMPTY_PATH);
  child_fail("execute " + (argv.empty() ? std::string("program") : argv[0]), errno);
}

}  // namespace

Result<void> restrict_self(std::span<const cap_value_t> keep) {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return fail_errno("set no_new_privs", errno);
  }
  const auto kept = [&](cap_value_t c) { return std::ranges::find(keep, c) != keep.end(); };
  for (cap_value_t c = 0; c <= static_cast<cap_value_t>(cap_max_bits()) - 1; ++c) {
    if (!kept(c) && CAP_IS_SUPPORTED(c) && cap_drop_bound(c) != 0 && errno != EINVAL) {
      return fail_errno("drop capability " + std::to_string(c) + " from the bounding set", errno);
    }
  }
  if (cap_reset_ambient() != 0 && errno != EINVAL) {
    return fail_errno("clear the ambient capabilities", errno);
  }
  const auto free_caps = [](cap_t c) { cap_free(c); };
  const std::unique_ptr<std::remove_pointer_t<cap_t>, decltype(free_caps)> caps(cap_init(), free_caps);
  if (!caps) {
    return fail_errno("cap_init", errno);
  }
  std::vector<cap_value_t> list(keep.begin(), keep.end());
  if (!list.empty() &&
      (cap_set_flag(caps.get(), CAP_EFFECTIVE, static_cast<int>(list.size()), list.data(), CAP_SET) != 0 ||
       cap_set_flag(caps.get(), CAP_PERMITTED, static_cast<int>(list.size()), list.data(), CAP_SET) != 0)) {
    return fail_errno("cap_set_flag", errno);
  }
  if (cap_set_proc(caps.get()) != 0) {
    return fail_errno("set the capabilities", errno);
  }
  return load_seccomp();
}

Result<UniqueFd> seal_host_program(const std::string& host_path) {
  const std::string what = "host program " + host_path;
  UniqueFd file(::open(host_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!file) {
    return fail_errno(what, errno);
  }
  struct stat st {};
  if (::fstat(file.get(), &st) != 0) {
    return fail_errno(what, errno);
  }
  if (!S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > k_max_program_size) {
    return fail(what + ": not a regular file of a plausible size");
  }
  int fd = ::memfd_create("gpuctk-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
  if (fd < 0 && errno == EINVAL) {
    fd = ::memfd_create("gpuctk-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  }
  UniqueFd sealed(fd);
  if (!sealed) {
    return fail_errno("memfd_create", errno);
  }
  // Copied in the kernel, sealed, then the copy itself is checked: what is checked is what runs.
  const auto size = static_cast<size_t>(st.st_size);
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::sendfile(sealed.get(), file.get(), nullptr, size - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return n == 0 ? fail(what + ": file shrank while read")
                    : fail_errno("copy " + host_path + " into a memfd", errno);
    }
    done += static_cast<size_t>(n);
  }
  if (::fchmod(sealed.get(), 0555) != 0 ||
      ::fcntl(sealed.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    return fail_errno("seal the copy of " + host_path, errno);
  }
  const ReadOnlyMapping copy(sealed.get(), size);
  if (!copy.ok()) {
    return fail_errno("map the copy of " + host_path, errno);
  }
  auto dynamic = is_dynamic_elf(copy.bytes());
  if (!dynamic) {
    return fail_with(what, dynamic.error());
  }
  if (*dynamic) {
    return fail(what +
                ": dynamically linked; only a statically linked program can run inside a container "
                "root without loading the image's dynamic loader");
  }
  return sealed;
}

Result<void> run_sandboxed(const Root& root, const UniqueFd& program, const std::vector<std::string>& argv) {
  const std::string name = argv.empty() ? "program" : argv[0];
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return fail_errno("pipe", errno);
  }
  UniqueFd out_read(pipe_fds[0]);
  UniqueFd out_write(pipe_fds[1]);
  // A raw clone behaves like fork, with the child in new namespaces (the process is single-threaded).
  const long pid =
      ::syscall(SYS_clone, CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET | SIGCHLD,
                nullptr, nullptr, nullptr, nullptr);
  if (pid < 0) {
    return fail_errno("start the " + name + " sandbox (clone with new namespaces)", errno);
  }
  if (pid == 0) {
    if (::dup2(out_write.get(), 1) < 0 || ::dup2(out_write.get(), 2) < 0) {
      ::_exit(126);
    }
    child_main(root, program.get(), argv);
  }
  out_write.reset();
  std::string output;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(out_read.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    if (output.size() < k_max_output) {
      output.append(buffer, std::min(static_cast<size_t>(n), k_max_output - output.size()));
    }
  }
  int status = 0;
  while (::waitpid(static_cast<pid_t>(pid), &status, 0) < 0) {
    if (errno != EINTR) {
      return fail_errno("wait for " + name, errno);
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return {};
  }
  const std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                            : "was killed by signal " + std::to_string(WTERMSIG(status));
  const std::string_view first_line = trim(std::string_view(output).substr(0, output.find('\n')));
  return fail(name + " " + how + (first_line.empty() ? "" : ": " + quote(first_line)));
}

}  // namespace gpuctk::rootfs
