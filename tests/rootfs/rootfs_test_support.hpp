#pragma once
// Helpers shared by the rootfs and container-hook tests: building small container roots, digests of
// host directory trees (to prove that nothing outside a root changed), forked children (in a private
// mount namespace for anything that mounts) and running the real gpuctk binary with a given stdin and
// environment, as a runtime runs a hook.

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "rootfs/in_root.hpp"
#include "support/spawn_capture.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::test {

// Both ways of resolving paths, for value-parameterised suites.
inline std::string resolver_name(const testing::TestParamInfo<rootfs::Resolver>& info) {
  return info.param == rootfs::Resolver::automatic ? "automatic" : "walk";
}

// Creates `path` and its missing parents (host path) with mode 0755.
inline void make_host_dirs(const std::string& path) {
  std::string prefix;
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      prefix = path.substr(0, i);
      ::mkdir(prefix.c_str(), 0755);
    }
  }
}

// Writes `content` to the host file `path` (parents created), mode `mode`.
inline void write_host_file(const std::string& path, std::string_view content, mode_t mode = 0644) {
  make_host_dirs(path.substr(0, path.rfind('/')));
  ::unlink(path.c_str());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd >= 0) {
    [[maybe_unused]] const ssize_t n = ::write(fd, content.data(), content.size());
    ::fchmod(fd, mode);
    ::close(fd);
  }
}

// Makes `path` (host path; parents created) a symlink reading `target`, replacing what is there.
inline void make_host_link(const std::string& target, const std::string& path) {
  make_host_dirs(path.substr(0, path.rfind('/')));
  ::unlink(path.c_str());
  ::rmdir(path.c_str());
  [[maybe_unused]] const int rc = ::symlink(target.c_str(), path.c_str());
}

// The text of the symlink `path`, or "<not a link: errno>" .
inline std::string host_readlink(const std::string& path) {
  char buffer[4096];
  const ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer);
  if (n < 0) {
    return std::string("<not a link: ") + std::strerror(errno) + ">";
  }
  return std::string(buffer, static_cast<size_t>(n));
}

// "file", "dir", "link", "missing" or "other" for the host path `path` (never following it).
inline std::string host_kind(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return "missing";
  }
  if (S_ISREG(st.st_mode))
    return "file";
  if (S_ISDIR(st.st_mode))
    return "dir";
  if (S_ISLNK(st.st_mode))
    return "link";
  return "other";
}

// The sorted names in the host directory `dir` ("." and ".." left out); {"<error>"} if unreadable.
inline std::vector<std::string> host_listing(const std::string& dir) {
  std::vector<std::string> names;
  DIR* stream = ::opendir(dir.c_str());
  if (stream == nullptr) {
    return {"<error>"};
  }
  while (const dirent* entry = ::readdir(stream)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") {
      names.push_back(name);
    }
  }
  ::closedir(stream);
  std::ranges::sort(names);
  return names;
}

// A description of the tree at host path `path`, recursively, one line per entry: relative name, type,
// mode, size and content (files) or link text (links). Subtrees named in `skip` (full host paths) are
// listed as entries but not descended into. Two digests differ iff anything observable changed.
inline void tree_digest_into(const std::string& path, const std::string& relative,
                             const std::vector<std::string>& skip, std::string& out) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    out += relative + " missing\n";
    return;
  }
  char mode[16];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if (S_ISLNK(st.st_mode)) {
    out += relative + " link " + mode + " -> " + host_readlink(path) + "\n";
  } else if (S_ISREG(st.st_mode)) {
    // Small files by content (readable in a failure message), large ones by a hash of it.
    const std::string content = read_file(path).value_or("<unreadable>");
    out += relative + " file " + mode + " " + std::to_string(st.st_size) + " " +
           (content.size() <= 256 ? content : "hash " + std::to_string(std::hash<std::string>{}(content))) +
           "\n";
  } else if (S_ISDIR(st.st_mode)) {
    out += relative + " dir " + mode + "\n";
    if (std::ranges::find(skip, path) != skip.end()) {
      return;
    }
    for (const auto& name : host_listing(path)) {
      tree_digest_into(path + "/" + name, relative + "/" + name, skip, out);
    }
  } else {
    out += relative + " other " + mode + "\n";
  }
}

inline std::string tree_digest(const std::string& path, const std::vector<std::string>& skip = {}) {
  std::string out;
  tree_digest_into(path, ".", skip, out);
  return out;
}

// Runs `body` in a forked child and returns what it returned (through a pipe), or a description of
// how the child ended abnormally. The child leaves with _exit (no atexit handlers, no sanitizer
// leak report of the parent's state).
inline std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return "<pipe failed>";
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    return "<fork failed>";
  }
  if (pid == 0) {
    ::close(fds[0]);
    const std::string report = body();
    for (size_t done = 0; done < report.size();) {
      const ssize_t n = ::write(fds[1], report.data() + done, report.size() - done);
      if (n <= 0) {
        break;
      }
      done += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string report;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    report.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    report += "<child ended with status " + std::to_string(status) + ">";
  }
  return report;
}

// Whether this process may make a private mount namespace (root with CAP_SYS_ADMIN).
inline bool can_unshare_mounts() {
  return in_child([] {
           return ::unshare(CLONE_NEWNS) == 0 &&
                          ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0
                      ? "yes"
                      : "no";
         }) == "yes";
}

// in_child, with the child first in a new mount namespace whose mounts are all private: nothing it
// mounts reaches the test process or the host.
inline std::string in_private_mount_ns(const std::function<std::string()>& body) {
  return in_child([&]() -> std::string {
    if (::unshare(CLONE_NEWNS) != 0) {
      return std::string("<unshare: ") + std::strerror(errno) + ">";
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      return std::string("<make / rprivate: ") + std::strerror(errno) + ">";
    }
    return body();
  });
}

struct HookRun {
  int exit_code = -1;  // -1: did not start or did not exit normally
  std::string out;
  std::string err;
};

// Runs `program args...` with `input` on stdin and exactly the environment `env` (as a runtime runs a
// hook: nothing inherited). Scratch files for the output go in `scratch_dir`.
inline HookRun run_program(const std::string& program, const std::vector<std::string>& args,
                           std::string_view input, const std::vector<std::string>& env,
                           const std::string& scratch_dir) {
  const std::string in_path = scratch_dir + "/.stdin";
  write_host_file(in_path, input, 0600);
  const Captured ran = spawn_capture(program, args, env, in_path, scratch_dir);
  ::unlink(in_path.c_str());
  return {.exit_code = ran.exit_code, .out = ran.out, .err = ran.err};
}

// The environment a runtime gives a hook from a spec: nothing of the container's, nothing of ours.
inline std::vector<std::string> clean_hook_env() {
  return {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
}

// `gpuctk hook <args...>` with the OCI state of a container whose bundle is `bundle` on stdin. With a
// `limit_s`, run under timeout(1): a hook that hangs is killed then, and its exit status is 124.
inline HookRun run_hook(const std::vector<std::string>& args, const std::string& bundle,
                        const std::string& scratch_dir,
                        const std::vector<std::string>& env = clean_hook_env(), int limit_s = 0) {
  std::vector<std::string> full{"hook"};
  full.insert(full.end(), args.begin(), args.end());
  const std::string state =
      R"({"ociVersion":"1.0.2","id":"x","status":"creating","pid":1,"bundle":")" + bundle + R"("})";
  if (limit_s > 0) {
    full.insert(full.begin(), {std::to_string(limit_s), GPUCTK_BINARY});
    return run_program("/usr/bin/timeout", full, state, env, scratch_dir);
  }
  return run_program(GPUCTK_BINARY, full, state, env, scratch_dir);
}

// A forked process that runs `setup` (its text comes back as report()), then waits until this object is
// destroyed.
class WaitingChild {
 public:
  explicit WaitingChild(const std::function<std::string()>& setup) {
    int ready[2];
    int hold[2];
    if (::pipe2(ready, O_CLOEXEC) != 0 || ::pipe2(hold, O_CLOEXEC) != 0) {
      m_report = "<pipe failed>";
      return;
    }
    m_pid = ::fork();
    if (m_pid == 0) {
      ::close(ready[0]);
      ::close(hold[1]);
      const std::string report = setup() + "\n";
      [[maybe_unused]] const ssize_t n = ::write(ready[1], report.data(), report.size());
      ::close(ready[1]);
      char c = 0;
      while (::read(hold[0], &c, 1) < 0 && errno == EINTR) {
      }
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(hold[0]);
    m_hold = hold[1];
    char c = 0;
    for (;;) {
      const ssize_t n = ::read(ready[0], &c, 1);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0 || c == '\n') {
        break;
      }
      m_report += c;
    }
    ::close(ready[0]);
  }
  WaitingChild(const WaitingChild&) = delete;
  WaitingChild& operator=(const WaitingChild&) = delete;
  ~WaitingChild() {
    if (m_hold >= 0) {
      ::close(m_hold);
    }
    if (m_pid > 0) {
      int status = 0;
      while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }

  [[nodiscard]] pid_t pid() const { return m_pid; }
  [[nodiscard]] const std::string& report() const { return m_report; }

 private:
  pid_t m_pid = -1;
  int m_hold = -1;
  std::string m_report;
};

// How a PivotedChild ends up: what a container's process is once its runtime has run pivot_root.
enum class Pivot {
  done,            // the host's root unmounted: the process's root and its namespace's are the new root
  back_into_host,  // the host's root kept at /oldroot and the process chroot'ed into it: its own root is
                   // the host's, its namespace's root is the new root (what setns gives whoever enters)
};

// A WaitingChild in a mount namespace of its own (every mount private) that has pivoted its root into
// the host directory `new_root` (which must hold an empty directory "oldroot"), bound onto itself.
// report() is "ready" or what failed.
class PivotedChild {
 public:
  PivotedChild(const std::string& new_root, Pivot how)
      : m_child([new_root, how]() -> std::string {
          const auto failed = [](const char* step) {
            return std::string("<") + step + ": " + std::strerror(errno) + ">";
          };
          if (::unshare(CLONE_NEWNS) != 0) {
            return failed("unshare");
          }
          if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
            return failed("make / rprivate");
          }
          if (::mount(new_root.c_str(), new_root.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
              ::chdir(new_root.c_str()) != 0) {
            return failed("bind the new root");
          }
          if (::syscall(SYS_pivot_root, ".", "oldroot") != 0) {
            return failed("pivot_root");
          }
          if (how == Pivot::done ? ::umount2("/oldroot", MNT_DETACH) != 0 : ::chroot("/oldroot") != 0) {
            return failed(how == Pivot::done ? "umount /oldroot" : "chroot /oldroot");
          }
          return ::chdir("/") == 0 ? "ready" : failed("chdir /");
        }) {}
  [[nodiscard]] pid_t pid() const { return m_child.pid(); }
  [[nodiscard]] const std::string& report() const { return m_child.report(); }

 private:
  WaitingChild m_child;
};

}  // namespace gpuctk::test

// The first line of a test that runs the host's ldconfig (the sandbox, update-ldcache): skipped, with the
// reason, on a host without one.
#define SKIP_WITHOUT_LDCONFIG()                       \
  if (::access("/sbin/ldconfig", R_OK) != 0) {        \
    GTEST_SKIP() << "no /sbin/ldconfig on this host"; \
  }
