#include "plugin/mps_daemon_host.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::plugin::mps_host {

namespace {

constexpr mode_t k_dir_mode = 0755;     // NVIDIA's MkdirAll mode: the workloads read them, only root writes
constexpr mode_t k_marker_mode = 0644;  // .ready: anyone may look
// How many tmpfs layers an earlier run may have left on <root>/shm (each start mounts one).
constexpr int k_max_shm_layers = 16;
// How often the control socket is looked at while waiting for it (the real daemon listens within ms).
constexpr auto k_socket_poll = std::chrono::milliseconds(20);
constexpr std::string_view k_control_socket = "control";  // nvidia-cuda-mps-control's name for it

std::string fd_path(int fd) {
  return "/proc/self/fd/" + std::to_string(fd);
}

// One component below `dir`, made when missing, opened without following a link.
Result<UniqueFd> open_dir_at(int dir, const std::string& name, const std::string& path) {
  if (::mkdirat(dir, name.c_str(), k_dir_mode) != 0 && errno != EEXIST) {
    return fail_errno("mkdir " + path, errno);
  }
  UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd) {
    return fd;
  }
  const int err = errno;
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    return fail(path + ": a symbolic link, refused");
  }
  if (err == ENOTDIR) {
    return fail(path + ": not a directory");
  }
  return fail_errno("open " + path, err);
}

// The child's side of run_program: its stdin, stdout and stderr, signals unblocked, then exec.
[[noreturn]] void exec_child(const char* program, char* const* argv, char* const* envp, int input, int output,
                             int report) {
  if (::dup2(input, STDIN_FILENO) < 0 || ::dup2(output, STDOUT_FILENO) < 0 ||
      ::dup2(output, STDERR_FILENO) < 0) {
    const int err = errno;
    [[maybe_unused]] const ssize_t n = ::write(report, &err, sizeof err);
    ::_exit(127);
  }
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the daemon blocks its signals for its signalfd
  ::execve(program, argv, envp);
  const int err = errno;
  [[maybe_unused]] const ssize_t n = ::write(report, &err, sizeof err);
  ::_exit(127);
}

std::string exit_phrase(int status) {
  if (WIFEXITED(status)) {
    return "exit status " + std::to_string(WEXITSTATUS(status));
  }
  return "killed by signal " + std::to_string(WTERMSIG(status));
}

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Result<Pipe> make_pipe(const std::string& what) {
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return fail_errno(what + ": pipe", errno);
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

// Forks and execs; the parent gets the child's pid (its ends of the pipes are the caller's to close).
Result<pid_t> spawn(const std::string& what, std::vector<std::string> argv,
                    std::vector<std::string> environment, int input, int output, int report) {
  auto args = c_strings(argv);
  auto envp = c_strings(environment);
  sigset_t all;
  sigset_t old;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &old);  // no handler of this process runs in the child
  const pid_t pid = ::fork();
  if (pid == 0) {
    exec_child(args[0], args.data(), envp.data(), input, output, report);
  }
  const int fork_errno = errno;
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    return fail_errno(what + ": fork", fork_errno);
  }
  return pid;
}

}  // namespace

Result<UniqueFd> open_root(const std::string& root) {
  if (::mkdir(root.c_str(), k_dir_mode) != 0 && errno != EEXIST) {
    return fail_errno("mkdir " + root, errno);
  }
  UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    return errno == ELOOP ? fail(root + ": a symbolic link, refused") : fail_errno("open " + root, errno);
  }
  return fd;
}

Result<UniqueFd> make_dirs_at(int dir, const std::string& dir_path,
                              const std::vector<std::string>& components) {
  UniqueFd current(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
  if (!current) {
    return fail_errno("dup " + dir_path, errno);
  }
  std::string path = dir_path;
  for (const auto& name : components) {
    path += "/" + name;
    GPUCTK_TRY_ASSIGN(current, open_dir_at(current.get(), name, path));
  }
  return current;
}

Result<void> unmount_shm(const std::string& root_path) {
  const std::string shm = root_path + "/shm";
  if (::umount2(shm.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0 || errno == EINVAL || errno == ENOENT) {
    return {};  // EINVAL: not a mount point
  }
  return fail_errno("unmount " + shm, errno);
}

Result<void> mount_shm(int root, const std::string& root_path, std::string_view size) {
  const std::string shm = root_path + "/shm";
  for (int layer = 0; layer < k_max_shm_layers; ++layer) {
    if (::umount2(shm.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0) {
      if (errno == EINVAL || errno == ENOENT) {
        break;  // no (more) mounts there
      }
      return fail_errno("unmount " + shm, errno);
    }
  }
  GPUCTK_TRY_ASSIGN(const UniqueFd dir, make_dirs_at(root, root_path, {"shm"}));
  const std::string data = "size=" + std::string(size);
  if (::mount("shm", fd_path(dir.get()).c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RELATIME,
              data.c_str()) != 0) {
    return fail_errno("mount tmpfs (" + data + ") on " + shm, errno);
  }
  return {};
}

Result<void> write_marker(int dir, const std::string& name, const std::string& path) {
  GPUCTK_TRY(remove_marker(dir, name, path));
  const UniqueFd fd(
      ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, k_marker_mode));
  if (!fd) {
    return fail_errno("create " + path, errno);
  }
  return {};
}

Result<void> remove_marker(int dir, const std::string& name, const std::string& path) {
  if (::unlinkat(dir, name.c_str(), 0) != 0 && errno != ENOENT) {
    return fail_errno("remove " + path, errno);
  }
  return {};
}

Result<std::string> find_program(const std::string& given, std::string_view name) {
  if (!given.empty()) {
    if (!given.starts_with('/')) {
      return fail("--mps-control-binary " + quote(given) + ": not an absolute path");
    }
    return given;
  }
  const char* value = std::getenv("PATH");
  const std::string dirs = value != nullptr ? value : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin";
  for (const auto dir : split(dirs, ':')) {
    if (!dir.starts_with('/')) {
      continue;  // a relative entry would depend on the working directory
    }
    const std::string candidate = clean_path(std::string(dir) + "/" + std::string(name));
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return fail(std::string(name) + ": not found in PATH (" + dirs + ")");
}

Result<std::string> run_program(const std::string& program, const std::vector<std::string>& args,
                                const std::vector<std::string>& environment, std::string_view input,
                                Deadline deadline, size_t max_output) {
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string what = join(argv, " ");
  GPUCTK_TRY_ASSIGN(Pipe in, make_pipe(what));
  GPUCTK_TRY_ASSIGN(Pipe out, make_pipe(what));
  GPUCTK_TRY_ASSIGN(Pipe report, make_pipe(what));
  // The commands are a line: the pipe's buffer holds them, so the write never waits for the child.
  if (!input.empty() &&
      ::write(in.write.get(), input.data(), input.size()) != static_cast<ssize_t>(input.size())) {
    return fail_errno(what + ": write the command", errno);
  }
  in.write.reset();
  GPUCTK_TRY_ASSIGN(const pid_t pid,
                    spawn(what, argv, environment, in.read.get(), out.write.get(), report.write.get()));
  out.write.reset();
  report.write.reset();
  std::string text;
  GPUCTK_TRY_ASSIGN(const ChildExit end,
                    finish_child(what, pid, report.read.get(), deadline, out.read.get(), &text, max_output));
  if (end.killed_at_deadline) {
    return fail(what + ": still running at its deadline: killed");
  }
  if (!WIFEXITED(end.status) || WEXITSTATUS(end.status) != 0) {
    return fail(what + ": " + exit_phrase(end.status) + (text.empty() ? "" : ": " + std::string(trim(text))));
  }
  return text;
}

bool control_listening(int pipe_dir) {
  struct stat st {};
  const std::string name(k_control_socket);
  if (::fstatat(pipe_dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(st.st_mode)) {
    return false;
  }
  const std::string path = fd_path(pipe_dir) + "/" + name;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    return false;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  // nvidia-cuda-mps-control listens on a SOCK_SEQPACKET socket (a stream connect: EPROTOTYPE).
  const UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  return fd && ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
}

bool wait_control(int pipe_dir, bool want, Deadline deadline) {
  while (control_listening(pipe_dir) != want) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    reap_children();
    std::this_thread::sleep_for(k_socket_poll);
  }
  return true;
}

void reap_children() {
  int status = 0;
  while (::waitpid(-1, &status, WNOHANG) > 0) {
  }
}

}  // namespace gpuctk::plugin::mps_host
