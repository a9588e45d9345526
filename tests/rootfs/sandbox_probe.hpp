#pragma once
// What the sandbox tests share: test cgroups (TestCgroups), and a static probe program, compiled at test time
// (cc -static): run by rootfs::run_sandboxed in place of ldconfig, it reports on one line of stdout what it
// can see and do from inside the sandbox, and exits with status 3 so that the line comes back in the error.
// Its mode is its first argument, or, when it runs under the name "ldconfig" (update-ldcache running it as
// its --ldconfig-path), what the image's /etc/probe-mode says: "silent" (exit 0, no cache written), "junk" (a
// file that is no linker cache written where -C says, exit 0), else "attack":
//   look HOST_PATH  the root's listing, whether HOST_PATH (a host file) is visible, sockets, mounts, the
//                   environment, the uid and how many processes /proc shows;
//   attack [DIR]    what an attacker tries (see k_attack_fields); DIR is the scratch directory, or, as
//                   ldconfig, the directory of the path after -C;
//   open PATH       open(PATH, O_RDONLY) (a FIFO blocks there for ever);
//   sleep SECONDS   sleeps, then reports.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "support/temp_dir.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::test {

// What "attack" reports, in order: opening for writing /proc/sys/kernel/printk_ratelimit (a host
// sysctl), /proc/sys/kernel/core_pattern (a "|helper" there runs as host root) and /proc/sysrq-trigger;
// how many entries /proc has; creating /etc/probe-wrote in the root; reading /etc/secret (a file of the
// image only its owner, root, may read); opening the library-named link
// /usr/lib/x86_64-linux-gnu/libwatchdog.so.1 (a device node of the image); the descriptors above 2 it
// holds ("none"); what it reads of the host file SECRET_PATH (a path from the host's "/", compiled in)
// through any of them ("none"); creating DIR/owner ("none" without DIR); its uid.
inline constexpr const char* k_probe_source = R"(
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static const char* outcome(long rc) { return rc >= 0 ? "ok" : strerrorname_np(errno); }
static const char* opened(const char* path, int flags) {  /* and closed: no descriptor of its own left */
  int fd = open(path, flags);
  const char* r = outcome(fd);
  if (fd >= 0) close(fd);
  return r;
}
static int cmp(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }
static int entries(const char* dir) {
  int n = 0;
  DIR* d = opendir(dir);
  struct dirent* e;
  while (d && (e = readdir(d))) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (d) closedir(d);
  return n;
}
static void look(const char* host) {
  char* names[64];
  int n = 0;
  DIR* d = opendir("/");
  struct dirent* e;
  while (d && (e = readdir(d)) && n < 64) {
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) names[n++] = strdup(e->d_name);
  }
  qsort(names, n, sizeof *names, cmp);
  printf("root=");
  for (int i = 0; i < n; ++i) printf("%s%s", i ? "," : "", names[i]);
  printf(" host=%s", access(host, F_OK) == 0 ? "visible" : "hidden");
  printf(" socket=%s", outcome(socket(AF_UNIX, SOCK_STREAM, 0)));
  printf(" mount=%s", outcome(mount("none", "/", "tmpfs", 0, 0)));
  printf(" env=%s uid=%d proc=%d\n", getenv("PATH") ? getenv("PATH") : "none", (int)getuid(), entries("/proc"));
}
static void attack(const char* scratch) {
  printf("printk=%s", outcome(open("/proc/sys/kernel/printk_ratelimit", O_WRONLY)));
  printf(" core_pattern=%s", outcome(open("/proc/sys/kernel/core_pattern", O_WRONLY)));
  printf(" sysrq=%s", outcome(open("/proc/sysrq-trigger", O_WRONLY)));
  printf(" proc=%d", entries("/proc"));
  printf(" write_root=%s", outcome(open("/etc/probe-wrote", O_WRONLY | O_CREAT, 0644)));
  printf(" secret=%s", opened("/etc/secret", O_RDONLY));
  printf(" device=%s", opened("/usr/lib/x86_64-linux-gnu/libwatchdog.so.1", O_RDONLY | O_NONBLOCK));
  char fds[256] = "", read_back[64] = "none";
  for (int fd = 3; fd < 1024; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) continue;
    snprintf(fds + strlen(fds), sizeof fds - strlen(fds), "%s%d", fds[0] ? "," : "", fd);
    int f = openat(fd, SECRET_PATH, O_RDONLY);
    ssize_t got = f >= 0 ? read(f, read_back, sizeof read_back - 1) : -1;
    if (got > 0) read_back[got] = 0;
  }
  printf(" fds=%s host_secret=%s", fds[0] ? fds : "none", read_back);
  char path[512];
  snprintf(path, sizeof path, "%s/owner", scratch ? scratch : "");
  printf(" scratch=%s uid=%d\n", scratch ? outcome(open(path, O_WRONLY | O_CREAT, 0644)) : "none", (int)getuid());
}
int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(basename(argv[0]), "ldconfig") == 0) {
    const char* cache = 0;
    for (int i = 1; i + 1 < argc; ++i) if (strcmp(argv[i], "-C") == 0) cache = argv[i + 1];
    char how[16] = "";
    FILE* f = fopen("/etc/probe-mode", "r");
    if (f && !fgets(how, sizeof how, f)) how[0] = 0;
    if (strcmp(how, "silent\n") == 0) return 0;
    if (strcmp(how, "junk\n") == 0 && cache) {
      FILE* out = fopen(cache, "w");
      return out && fputs("not a linker cache", out) >= 0 && fclose(out) == 0 ? 0 : 5;
    }
    attack(cache ? dirname(strdup(cache)) : 0);
  } else if (strcmp(mode, "look") == 0 && argc > 2) {
    look(argv[2]);
  } else if (strcmp(mode, "attack") == 0) {
    attack(argc > 2 ? argv[2] : 0);
  } else if (strcmp(mode, "open") == 0 && argc > 2) {
    printf("open %s: %s\n", argv[2], outcome(open(argv[2], O_RDONLY)));
  } else if (strcmp(mode, "sleep") == 0 && argc > 2) {
    struct timespec t = {atoi(argv[2]), 0};
    while (nanosleep(&t, &t) != 0) {}
    printf("slept\n");
  } else {
    printf("unknown mode\n");
  }
  return 3;
}
)";

// Compiles the probe statically into `dir`, with `secret_path` (a host path without its leading "/") as
// SECRET_PATH; returns the program's path, or "" where that cannot be done (no compiler, no libc.a).
inline std::string build_sandbox_probe(const TempDir& dir, const std::string& secret_path = "nonexistent") {
  const std::string source = dir.write("probe.c", k_probe_source);
  const std::string program = dir.path() + "/probe";
  const std::string command = "cc -static -O1 '-DSECRET_PATH=\"" + secret_path + "\"' -o " + program + " " +
                              source + " >/dev/null 2>&1";
  return std::system(command.c_str()) == 0 ? program : std::string();
}

// The cgroup hierarchies a test can make cgroups in: the cgroup2 mount and the v1 devices one.
struct CgroupMounts {
  std::string v2;
  std::string v1_devices;
};
inline CgroupMounts cgroup_mounts() {
  CgroupMounts out;
  const auto text = read_file("/proc/self/mountinfo").value_or("");
  for (const auto line : split(text, '\n')) {
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) {
      continue;
    }
    const auto fields = split(line.substr(0, dash), ' ');
    const auto tail = split(line.substr(dash + 3), ' ');
    if (fields.size() < 5 || tail.size() < 3) {
      continue;
    }
    if (tail[0] == "cgroup2" && out.v2.empty()) {
      out.v2 = fields[4];
    } else if (tail[0] == "cgroup" &&
               ("," + std::string(tail[2]) + ",").find(",devices,") != std::string::npos &&
               out.v1_devices.empty()) {
      out.v1_devices = fields[4];
    }
  }
  return out;
}

// Writes `text` to the existing file `path` (a cgroup file); false on a failure.
inline bool write_text(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  const bool ok = fd >= 0 && write_all(fd, text) == 0;
  if (fd >= 0) {
    ::close(fd);
  }
  return ok;
}

// A cgroup made for a test in each hierarchy there is ("" where there is none), removed afterwards.
class TestCgroups {
 public:
  TestCgroups() {
    const auto mounts = cgroup_mounts();
    const std::string name = "/gpuctk-sandbox-test-" + std::to_string(::getpid());
    for (auto [mount, dir] : {std::pair{mounts.v2, &m_v2}, std::pair{mounts.v1_devices, &m_v1}}) {
      if (!mount.empty() && ::mkdir((mount + name).c_str(), 0755) == 0) {
        *dir = mount + name;
      }
    }
  }
  TestCgroups(const TestCgroups&) = delete;
  TestCgroups& operator=(const TestCgroups&) = delete;
  ~TestCgroups() {
    for (const auto* dir : {&m_v2, &m_v1}) {
      if (!dir->empty()) {
        ::rmdir(dir->c_str());
      }
    }
  }
  [[nodiscard]] const std::string& v2() const { return m_v2; }
  [[nodiscard]] const std::string& v1() const { return m_v1; }

  // Moves the process `pid` into both (it must be gone before this is destroyed); false on a failure.
  [[nodiscard]] bool move_into(pid_t pid) const {
    for (const auto* dir : {&m_v2, &m_v1}) {
      if (!dir->empty() && !write_text(*dir + "/cgroup.procs", std::to_string(pid))) {
        return false;
      }
    }
    return true;
  }

 private:
  std::string m_v2;
  std::string m_v1;
};

}  // namespace gpuctk::test
