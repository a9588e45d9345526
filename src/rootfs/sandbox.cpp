#include "rootfs/sandbox.hpp"

#include <elf.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>

#include "rootfs/confinement.hpp"
#include "rootfs/sandbox_child.hpp"
#include "util/child_wait.hpp"
#include "util/file.hpp"
#include "util/mountinfo.hpp"
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

// The procfs mounts in `root`, as paths relative to it ("proc"), outermost first and none below another:
// from this process's mount table, where the root's canonical path (what its fd resolves to here, as
// mountinfo writes mount points; a configured path may run through a symlink such as /var/run) is
// known. A procfs of another PID namespace (the container's, the host's) offers /proc/sys and
// /proc/<pid>/root links out of the root.
Result<std::vector<std::string>> procfs_in(const Root& root) {
  std::string canonical(PATH_MAX, '\0');
  const std::string self = "/proc/self/fd/" + std::to_string(root.fd());
  const ssize_t length = ::readlink(self.c_str(), canonical.data(), canonical.size() - 1);
  if (length <= 0 || canonical.front() != '/') {
    return fail_errno("sandbox: resolve the path of " + root.path(), length < 0 ? errno : ENOENT);
  }
  canonical.resize(static_cast<size_t>(length));
  GPUCTK_TRY_ASSIGN(const auto text, read_file("/proc/self/mountinfo", k_max_mountinfo_size));
  GPUCTK_TRY_ASSIGN(const auto mounts, parse_mountinfo(text, "/proc/self/mountinfo"));
  std::vector<std::string> points;
  for (const auto& mount : mounts) {
    const std::string& point = mount.mount_point;
    if (mount.fstype != "proc") {
      continue;
    }
    if (point.size() > canonical.size() && point.starts_with(canonical) && point[canonical.size()] == '/') {
      points.push_back(point.substr(canonical.size() + 1));
    }
  }
  std::ranges::sort(points);
  std::vector<std::string> outermost;
  for (auto& point : points) {
    if (outermost.empty() || !(point == outermost.back() || point.starts_with(outermost.back() + "/"))) {
      outermost.push_back(std::move(point));
    }
  }
  return outermost;
}

// A detached copy of the mount tree of `root` (open_tree), read-only, nosuid, nodev, noexec and private
// all through (mount_setattr): taken here, in the caller's mount namespace, from the root's fd.
Result<UniqueFd> clone_root(const Root& root) {
  const std::string what = "sandbox: copy the mounts of " + root.path();
  UniqueFd tree(static_cast<int>(::syscall(
      SYS_open_tree, root.fd(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH)));
  if (!tree) {
    return fail_errno(what + " (open_tree, Linux 5.2)", errno);
  }
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  attr.propagation = MS_PRIVATE;
  if (::syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0) {
    return fail_errno(what + ": make them read-only, nosuid, nodev and private (mount_setattr, Linux 5.12)",
                      errno);
  }
  return tree;
}

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Result<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return fail_errno("sandbox: pipe", errno);
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// "30 s", or "500 ms" for a deadline that is not whole seconds.
std::string describe(std::chrono::milliseconds deadline) {
  return deadline.count() % 1000 == 0 ? std::to_string(deadline.count() / 1000) + " s"
                                      : std::to_string(deadline.count()) + " ms";
}

// The pid of the child of `pidfd` as /proc names it: the "Pid:" of the pidfd's fdinfo, which the kernel
// gives in the PID namespace of the procfs it is read through. That can be another than this process's
// own: a createContainer hook that a runtime runs in the container's PID namespace, before pivot_root,
// sees the host's procfs at /proc, where the number clone returned names another process.
Result<std::string> proc_pid_of(int pidfd) {
  const std::string path = "/proc/self/fdinfo/" + std::to_string(pidfd);
  GPUCTK_TRY_ASSIGN(const auto text, read_file(path, 4096));
  for (const auto line : split(text, '\n')) {
    if (line.starts_with("Pid:")) {
      const auto pid = trim(line.substr(4));
      if (!pid.empty() && pid.find_first_not_of("0123456789") == std::string_view::npos && pid != "0") {
        return std::string(pid);
      }
    }
  }
  return fail("sandbox: " + path + ": no pid of the child in this /proc (a procfs of another PID namespace)");
}

// Writes the identity maps of the child `pidfd`'s user namespace: its 0 is k_sandbox_host_id here.
Result<void> map_identity(int pidfd) {
  GPUCTK_TRY_ASSIGN(const auto pid, proc_pid_of(pidfd));
  const std::string map = "0 " + std::to_string(k_sandbox_host_id) + " 1\n";
  for (const char* file : {"uid_map", "gid_map"}) {
    const std::string path = "/proc/" + pid + "/" + file;
    const UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) {
      return fail_errno("sandbox: write " + path, errno);
    }
    if (const int err = write_all(fd.get(), map); err != 0) {
      return fail_errno("sandbox: write " + path, err);
    }
  }
  return {};
}

// A user namespace that maps the root's owner (`uid`, `gid`: whoever owns its top directory, host root
// for most images) to k_sandbox_host_id and nothing else: the idmapping of the root's top mount. Made by
// a helper child that only waits (on a pipe) until its namespace is held by an fd, then exits.
Result<UniqueFd> owner_namespace(uid_t uid, gid_t gid) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return fail_errno("pipe", errno);
  }
  UniqueFd wait_read(fds[0]);
  UniqueFd wait_write(fds[1]);
  int pidfd = -1;
  // No handler of the caller's runs in the helper: its signals stay blocked.
  sigset_t old;
  const long pid = clone_into_cgroup(CLONE_NEWUSER, nullptr, pidfd, old);
  if (pid == 0) {
    ::close(wait_write.get());  // its copy: the read below ends when the caller closes its own
    char byte = 0;
    while (::read(wait_read.get(), &byte, 1) < 0 && errno == EINTR) {
    }
    ::_exit(0);
  }
  if (pid < 0) {
    return fail_errno("clone3 into a new user namespace", errno);
  }
  const UniqueFd child(pidfd);
  const auto reap = [&] {
    wait_write.reset();
    int status = 0;
    while (::waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
    }
  };
  auto proc_pid = proc_pid_of(child.get());
  if (!proc_pid) {
    reap();
    return std::unexpected(proc_pid.error());
  }
  const std::string dir = "/proc/" + *proc_pid + "/";
  for (const auto& [file, line] :
       {std::pair{"uid_map", std::to_string(uid)}, {"gid_map", std::to_string(gid)}}) {
    const UniqueFd fd(::open((dir + file).c_str(), O_WRONLY | O_CLOEXEC));
    const int err =
        !fd ? errno : write_all(fd.get(), line + " " + std::to_string(k_sandbox_host_id) + " 1\n");
    if (err != 0) {
      reap();
      return fail_errno("write " + dir + file, err);
    }
  }
  UniqueFd ns(::open((dir + "ns/user").c_str(), O_RDONLY | O_CLOEXEC));
  const int err = errno;
  reap();
  if (!ns) {
    return fail_errno("open " + dir + "ns/user", err);
  }
  return ns;
}

// Makes the top mount of `tree` (detached, from clone_root) show the files of `root`'s owner as the
// sandbox's own (k_sandbox_host_id, its root inside): ldconfig then reads a 0600 configuration file or
// a 0700 library folder of the image as root's ldconfig would. Only the top mount, the image's own
// filesystem: a mount below it (a bind from the host, a procfs) keeps its owners. The tree stays
// read-only, nosuid, nodev, noexec. Returns why not (a filesystem that refuses idmapping, a kernel
// before 5.12) for the caller's debug log: the program then reads as nobody, as before.
Result<void> idmap_top(const Root& root, int tree) {
  struct stat st {};
  if (::fstat(root.fd(), &st) != 0) {
    return fail_errno("stat the root", errno);
  }
  GPUCTK_TRY_ASSIGN(const auto ns, owner_namespace(st.st_uid, st.st_gid));
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP;
  attr.userns_fd = static_cast<uint64_t>(ns.get());
  if (::syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
    return fail_errno("idmap its top mount (mount_setattr MOUNT_ATTR_IDMAP)", errno);
  }
  return {};
}

// A started sandbox child: killed and reaped when dropped before it was waited for.
class Child {
 public:
  Child(pid_t pid, UniqueFd pidfd) : m_pid(pid), m_pidfd(std::move(pidfd)) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (m_pid > 0) {
      ::syscall(SYS_pidfd_send_signal, m_pidfd.get(), SIGKILL, nullptr, 0);
      int status = 0;
      while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  [[nodiscard]] pid_t pid() const { return m_pid; }
  [[nodiscard]] int pidfd() const { return m_pidfd.get(); }
  void reaped() { m_pid = 0; }

 private:
  pid_t m_pid;
  UniqueFd m_pidfd;
};

// clone3 into new namespaces (and into `cgroup`'s v2 directory), the child running child_main(plan).
Result<std::unique_ptr<Child>> start_child(const ChildPlan& plan, const SandboxCgroup* cgroup,
                                           const std::string& name) {
  int pidfd = -1;
  sigset_t old;
  const long pid = clone_into_cgroup(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET,
                                     cgroup, pidfd, old);
  if (pid == 0) {
    child_main(plan);
  }
  if (pid < 0) {
    const int err = errno;
    const std::string where = cgroup != nullptr && cgroup->v2 ? " in cgroup " + cgroup->v2_dir : "";
    return fail_errno("start the " + name + " sandbox (clone3 with new namespaces" + where + ")", err);
  }
  return std::make_unique<Child>(static_cast<pid_t>(pid), UniqueFd(pidfd));
}

// The first line `output` holds, trimmed, escaped and quoted after ": "; "" when there is none.
std::string first_line(std::string_view output) {
  const std::string_view line = trim(output.substr(0, output.find('\n')));
  return line.empty() ? std::string() : ": " + quote(line);
}

}  // namespace

Result<UniqueFd> seal_host_program(const std::string& host_path) {
  const std::string what = "host program " + host_path;
  // O_NONBLOCK: a FIFO at the path (an image's "ldconfig") cannot block the open; it is refused below.
  UniqueFd file(::open(host_path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
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
  // Execute-only: the sandboxed program (not its owner, no capability over it) cannot read its own
  // image, so the kernel makes it non-dumpable: no process of the same unprivileged id can ptrace it.
  if (::fchmod(sealed.get(), 0111) != 0 ||
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

long clone_into_cgroup(uint64_t flags, const SandboxCgroup* cgroup, int& pidfd, sigset_t& old) {
  clone_args args{};
  args.flags = flags | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  if (cgroup != nullptr && cgroup->v2) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(cgroup->v2.get());
  }
  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &old);
  const long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid != 0) {
    const int err = errno;
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    errno = err;
  }
  return pid;
}

Result<SandboxCgroup> SandboxCgroup::open(const std::string& v2_dir, const std::string& v1_dir) {
  SandboxCgroup cgroup;
  cgroup.v2_dir = v2_dir;
  cgroup.v1_dir = v1_dir;
  if (!v2_dir.empty()) {
    cgroup.v2 = UniqueFd(::open(v2_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!cgroup.v2) {
      return fail_errno("cgroup " + v2_dir, errno);
    }
  }
  if (!v1_dir.empty()) {
    const std::string procs = v1_dir + "/cgroup.procs";
    cgroup.v1_procs = UniqueFd(::open(procs.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!cgroup.v1_procs) {
      return fail_errno("cgroup " + procs, errno);
    }
  }
  return cgroup;
}

Result<Scratch> Scratch::make(std::string path) {
  const auto failed = [](std::string_view step) {
    const int err = errno;
    return fail_errno("sandbox scratch: " + std::string(step), err);
  };
  const UniqueFd fs(static_cast<int>(::syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC)));
  if (!fs) {
    return failed("fsopen tmpfs");
  }
  const std::string id = std::to_string(k_sandbox_host_id);
  const std::string size = std::to_string(k_scratch_size);
  const std::string files = std::to_string(k_scratch_files);
  for (const auto& [key, value] : {std::pair<const char*, const char*>{"size", size.c_str()},
                                   {"nr_inodes", files.c_str()},
                                   {"mode", "0700"},
                                   {"uid", id.c_str()},
                                   {"gid", id.c_str()}}) {
    if (::syscall(SYS_fsconfig, fs.get(), FSCONFIG_SET_STRING, key, value, 0) != 0) {
      return failed(std::string("tmpfs option ") + key + "=" + value);
    }
  }
  if (::syscall(SYS_fsconfig, fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    return failed("create the tmpfs");
  }
  Scratch scratch;
  scratch.m_path = std::move(path);
  scratch.m_fd = UniqueFd(static_cast<int>(::syscall(
      SYS_fsmount, fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)));
  if (!scratch.m_fd) {
    return failed("fsmount");
  }
  return scratch;
}

Result<void> Scratch::put(std::string_view name, std::string_view content) const {
  const std::string what = "write " + m_path + "/" + std::string(name);
  const UniqueFd file(::openat(m_fd.get(), std::string(name).c_str(),
                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!file) {
    return fail_errno(what, errno);
  }
  if (const int err = write_all(file.get(), content); err != 0) {
    return fail_errno(what, err);
  }
  return {};
}

Result<std::string> Scratch::take(std::string_view name, size_t max_size) const {
  const std::string path = m_path + "/" + std::string(name);
  const UniqueFd file(::openat(m_fd.get(), std::string(name).c_str(),
                               O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat st {};
  if (!file || ::fstat(file.get(), &st) != 0) {
    return fail_errno(path, errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(path + ": not a regular file");
  }
  return read_fd(file.get(), path, max_size);
}

Result<void> run_sandboxed(const Root& root, const UniqueFd& program, const std::vector<std::string>& argv,
                           const SandboxLimits& limits, const Scratch* scratch) {
  const std::string name = argv.empty() ? "program" : argv[0];
  const Deadline deadline = std::chrono::steady_clock::now() + limits.deadline;
  // Everything the child needs, made now: it allocates nothing.
  GPUCTK_TRY_ASSIGN(const auto confinement, make_confinement({}));
  GPUCTK_TRY_ASSIGN(const auto tree, clone_root(root));
  const Result<void> idmapped =
      limits.idmap ? idmap_top(root, tree.get()) : Result<void>(fail("idmapping not asked for"));
  if (limits.note && !idmapped) {
    limits.note(SandboxView::nobody, "sandbox: reads " + root.path() + " as nobody (" +
                                         idmapped.error().message +
                                         "); a file or folder only its owner can read is skipped");
  } else if (limits.note) {
    limits.note(SandboxView::owner,
                "sandbox: reads " + root.path() + " as the owner of its root (idmapped mount)");
  }
  GPUCTK_TRY_ASSIGN(const auto procfs, procfs_in(root));
  std::vector<const char*> procfs_list;
  for (const auto& point : procfs) {
    procfs_list.push_back(point.c_str());
  }
  procfs_list.push_back(nullptr);
  std::vector<std::string> args = argv.empty() ? std::vector<std::string>{name} : argv;
  std::vector<char*> arg_list;
  for (auto& a : args) {
    arg_list.push_back(a.data());
  }
  arg_list.push_back(nullptr);
  // The scratch directory's path as the child opens it, from the root ("etc/.x"): never the root itself.
  const size_t start = scratch != nullptr ? scratch->path().find_first_not_of('/') : 0;
  if (scratch != nullptr && (!scratch->path().starts_with('/') || start == std::string::npos)) {
    return fail("sandbox scratch " + quote(scratch->path()) + ": not a directory below the root");
  }
  const std::string scratch_path = scratch != nullptr ? scratch->path().substr(start) : std::string();
  GPUCTK_TRY_ASSIGN(auto output, make_pipe());
  GPUCTK_TRY_ASSIGN(auto input, make_pipe());
  GPUCTK_TRY_ASSIGN(auto ready, make_pipe());
  GPUCTK_TRY_ASSIGN(auto go, make_pipe());
  const ChildPlan plan{tree.get(),           procfs_list.data(), scratch != nullptr ? scratch->fd() : -1,
                       scratch_path.c_str(), output.write.get(), input.read.get(),
                       ready.write.get(),    go.read.get(),      program.get(),
                       arg_list.data(),      &confinement};
  const SandboxCgroup* cgroup = limits.cgroup.get();
  GPUCTK_TRY_ASSIGN(auto child, start_child(plan, cgroup, name));
  output.write.reset();
  input = {};
  ready.write.reset();
  go.read.reset();

  // In the v1 devices cgroup before it may run anything; then its identity, once it has its user
  // namespace (or its reason why not, on the output pipe).
  if (cgroup != nullptr && cgroup->v1_procs) {
    if (const int err = write_all(cgroup->v1_procs.get(), std::to_string(child->pid())); err != 0) {
      return fail_errno("sandbox: move " + name + " into cgroup " + cgroup->v1_dir, err);
    }
  }
  pollfd fds[2] = {{ready.read.get(), POLLIN, 0}, {child->pidfd(), POLLIN, 0}};
  GPUCTK_TRY_ASSIGN(const int polled, poll_until(fds, deadline));
  char byte = 0;
  if (polled > 0 && ::read(ready.read.get(), &byte, 1) == 1) {
    GPUCTK_TRY(map_identity(child->pidfd()));
    if (::write(go.write.get(), &byte, 1) != 1) {
      return fail_errno("sandbox: start " + name, errno);
    }
  }
  go.write.reset();

  std::string text;
  GPUCTK_TRY_ASSIGN(const auto end, wait_child(child->pidfd(), child->pid(), deadline, output.read.get(),
                                               &text, k_max_output));
  child->reaped();
  if (end.killed_at_deadline) {
    return fail(name + " was killed after its deadline of " + describe(limits.deadline) +
                " (a FIFO or a device in the image can block it)" + first_line(text));
  }
  if (WIFEXITED(end.status) && WEXITSTATUS(end.status) == 0) {
    return {};
  }
  const std::string how = WIFEXITED(end.status)
                              ? "exited with status " + std::to_string(WEXITSTATUS(end.status))
                              : "was killed by signal " + std::to_string(WTERMSIG(end.status));
  return fail(name + " " + how + first_line(text));
}

}  // namespace gpuctk::rootfs
