#include "cgroup/device_access.hpp"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "support/process_support.hpp"
#include "support/temp_dir.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/mountinfo.hpp"
#include "util/strings.hpp"

namespace gpuctk::cgroup {
namespace {

// --- parse_device_cgroups ----------------------------------------------------------------------------

// This machine's shape: v1 hierarchies under /sys/fs/cgroup/<controller>, cgroup2 on …/unified.
constexpr std::string_view k_hybrid_mountinfo =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

constexpr std::string_view k_hybrid_cgroup =
    "9:name=systemd:/\n"
    "5:devices:/runc/abc\n"
    "4:memory:/process_api/522de044\n"
    "1:cpu:/\n"
    "0::/runc/abc\n";

// A systemd host with cgroup2 only (optional fields "shared:N" before the separator).
constexpr std::string_view k_v2_mountinfo =
    "24 1 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "27 24 0:25 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

std::string parsed(std::string_view proc_cgroup, std::string_view mountinfo) {
  const auto found = parse_device_cgroups(proc_cgroup, mountinfo);
  if (!found) {
    return "error: " + found.error().message;
  }
  return "v1=" + found->v1_dir + " v2=" + found->v2_dir;
}

TEST(CgroupParse, HybridHost) {
  EXPECT_EQ(parsed(k_hybrid_cgroup, k_hybrid_mountinfo),
            "v1=/sys/fs/cgroup/devices/runc/abc v2=/sys/fs/cgroup/unified/runc/abc");
  // The test runner here: both at the root, which is the whole host's and never a container's own.
  EXPECT_EQ(parsed("5:devices:/\n0::/\n", k_hybrid_mountinfo), "v1= v2=");
  EXPECT_EQ(parsed("5:devices:/\n0::/runc/abc\n", k_hybrid_mountinfo),
            "v1= v2=/sys/fs/cgroup/unified/runc/abc");
}

TEST(CgroupParse, PureV2Host) {
  EXPECT_EQ(parsed("0::/system.slice/docker-1f2e.scope\n", k_v2_mountinfo),
            "v1= v2=/sys/fs/cgroup/system.slice/docker-1f2e.scope");
  EXPECT_EQ(parsed("0::/\n", k_v2_mountinfo), "v1= v2=");
}

TEST(CgroupParse, NestedMountRootIsStripped) {
  const std::string mountinfo =
      "50 31 0:33 /docker/abc /sys/fs/cgroup/devices rw - cgroup cgroup rw,devices\n"
      "51 31 0:38 /docker/abc /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(parsed("5:devices:/docker/abc/x\n0::/docker/abc/x\n", mountinfo),
            "v1=/sys/fs/cgroup/devices/x v2=/sys/fs/cgroup/unified/x");
  EXPECT_EQ(parsed("5:devices:/docker/abc\n0::/docker/abc\n", mountinfo),
            "v1=/sys/fs/cgroup/devices v2=/sys/fs/cgroup/unified");
}

TEST(CgroupParse, LaterDevicesMountWhoseRootHoldsThePathCounts) {
  const std::string mountinfo =
      "50 31 0:33 /docker/abc /mnt/c rw - cgroup cgroup rw,devices\n"
      "51 31 0:33 / /sys/fs/cgroup/devices rw - cgroup cgroup rw,devices\n";
  EXPECT_EQ(parsed("5:devices:/other\n", mountinfo), "v1=/sys/fs/cgroup/devices/other v2=");
}

TEST(CgroupParse, PathOutsideTheMountRootIsAnError) {
  const std::string mountinfo =
      "50 31 0:33 /docker/abc /sys/fs/cgroup/devices rw - cgroup cgroup rw,devices\n"
      "51 31 0:38 /docker/abc /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(
      parsed("5:devices:/docker/abcd/x\n", mountinfo),
      "error: /proc/<pid>/cgroup: devices cgroup \"/docker/abcd/x\" is outside the root of every devices "
      "mount (first: \"/docker/abc\" on \"/sys/fs/cgroup/devices\")");
  EXPECT_EQ(parsed("0::/other\n", mountinfo),
            "error: /proc/<pid>/cgroup: cgroup2 path \"/other\" is outside the root \"/docker/abc\" of the "
            "cgroup2 mount on \"/sys/fs/cgroup/unified\"");
}

TEST(CgroupParse, DotDotIsAnError) {
  EXPECT_EQ(parsed("0::/../../x\n", k_v2_mountinfo),
            "error: /proc/<pid>/cgroup line 1: cgroup path \"/../../x\" has a \"..\" component (a process "
            "outside this cgroup namespace)");
  EXPECT_EQ(
      parsed("1:cpu:/\n5:devices:/a/./b\n", k_hybrid_mountinfo),
      "error: /proc/<pid>/cgroup line 2: cgroup path \"/a/./b\" has a \".\" component (a process outside "
      "this cgroup namespace)");
  EXPECT_EQ(parsed("0:: relative\n", k_v2_mountinfo),
            "error: /proc/<pid>/cgroup line 1: cgroup path \" relative\" is not absolute");
}

TEST(CgroupParse, NoDevicesLine) {
  // A hybrid host whose devices controller is not in the list: v1 does not apply.
  EXPECT_EQ(parsed("9:name=systemd:/\n1:cpu:/\n0::/x\n", k_hybrid_mountinfo),
            "v1= v2=/sys/fs/cgroup/unified/x");
  EXPECT_EQ(parsed("9:name=systemd:/\n1:cpu:/\n", k_hybrid_mountinfo),
            "error: /proc/<pid>/cgroup: no devices controller line and no 0:: line");
  // A devices line but no devices mount (mounted in another namespace only).
  EXPECT_EQ(
      parsed("5:devices:/x\n", k_v2_mountinfo),
      "error: /proc/self/mountinfo: no cgroup mount with the devices controller, which /proc/<pid>/cgroup "
      "names");
  // No cgroup2 mount: v2 does not apply.
  EXPECT_EQ(parsed("5:devices:/x\n0::/\n", "36 31 0:33 / /c/devices rw - cgroup cgroup rw,devices\n"),
            "v1=/c/devices/x v2=");
}

TEST(CgroupParse, ControllerListsAndEscapes) {
  // "devices" among other controllers of one hierarchy, a path with ':' and an escaped mount point.
  EXPECT_EQ(parsed("3:cpu,devices:/pod:1\n",
                   "36 31 0:33 / /sys/fs/cgroup/cpu\\040dev rw - cgroup cgroup "
                   "rw,cpu,devices\n"),
            "v1=/sys/fs/cgroup/cpu dev/pod:1 v2=");
  // "devices" only as a substring is not the controller.
  EXPECT_EQ(parsed("5:nodevices:/x\n0::/x\n", k_hybrid_mountinfo), "v1= v2=/sys/fs/cgroup/unified/x");
}

TEST(CgroupParse, MalformedLinesAreErrors) {
  EXPECT_EQ(parsed("5-devices-/x\n", k_hybrid_mountinfo),
            "error: /proc/<pid>/cgroup line 1: not ID:CONTROLLERS:PATH: \"5-devices-/x\"");
  EXPECT_EQ(parsed("x:devices:/x\n", k_hybrid_mountinfo),
            "error: /proc/<pid>/cgroup line 1: not ID:CONTROLLERS:PATH: \"x:devices:/x\"");
  EXPECT_EQ(
      parsed("0::/\n", "36 31 0:33 / /sys/fs/cgroup/devices rw cgroup cgroup rw,devices\n"),
      "error: /proc/self/mountinfo line 1: not a mountinfo line: \"36 31 0:33 / /sys/fs/cgroup/devices rw "
      "cgroup cgroup rw,devices\"");
  EXPECT_EQ(
      parsed("0::/\n", "36 31 0:33 / /sys/fs/cgroup/devices rw - cgroup cgroup\n"),
      "error: /proc/self/mountinfo line 1: not a mountinfo line: \"36 31 0:33 / /sys/fs/cgroup/devices rw - "
      "cgroup cgroup\"");
}

TEST(CgroupParse, InputIsBounded) {
  const std::string long_line = "0::/" + std::string(k_max_line_size, 'a') + "\n";
  EXPECT_EQ(parsed(long_line, k_v2_mountinfo), "error: /proc/<pid>/cgroup line 1: longer than 65536 bytes");
  const std::string big(k_max_proc_cgroup_size + 1, '\n');
  EXPECT_EQ(parsed(big, k_v2_mountinfo), "error: /proc/<pid>/cgroup: larger than 1048576 bytes");
  const std::string big_mountinfo(k_max_mountinfo_size + 1, '\n');
  EXPECT_EQ(parsed("0::/\n", big_mountinfo), "error: /proc/self/mountinfo: larger than 67108864 bytes");
}

TEST(CgroupParse, FindReadsProcFiles) {
  const test::TempDir tmp{"gpuctk-cgroup", "/tmp"};
  ASSERT_FALSE(tmp.path().empty());
  const std::string& proc = tmp.path();
  ASSERT_EQ(::mkdir((proc + "/42").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((proc + "/self").c_str(), 0755), 0);
  ASSERT_TRUE(write_file_atomic(proc + "/42/cgroup", k_hybrid_cgroup, 0644));
  EXPECT_EQ(find_device_cgroups(42, proc).error().message,
            "read " + proc + "/self/mountinfo: No such file or directory");
  ASSERT_TRUE(write_file_atomic(proc + "/self/mountinfo", k_hybrid_mountinfo, 0644));
  const auto found = find_device_cgroups(42, proc);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->v1_dir, "/sys/fs/cgroup/devices/runc/abc");
  EXPECT_EQ(found->v2_dir, "/sys/fs/cgroup/unified/runc/abc");
  ASSERT_TRUE(write_file_atomic(proc + "/42/cgroup", "5:devices:/../x\n", 0644));
  EXPECT_EQ(find_device_cgroups(42, proc).error().message,
            proc +
                "/42/cgroup line 1: cgroup path \"/../x\" has a \"..\" component (a process outside this "
                "cgroup namespace)");
  EXPECT_EQ(find_device_cgroups(7, proc).error().message,
            "read " + proc + "/7/cgroup: No such file or directory");
}

// Through a held process (util/process.hpp): its own cgroup file, read through its /proc directory; once
// it is gone, nothing (never the cgroup of whichever process gets its pid next).
TEST(CgroupParse, FindThroughAHeldProcess) {
  const auto self = Process::open(::getpid());
  ASSERT_TRUE(self) << self.error().message;
  const auto by_process = find_device_cgroups(*self);
  const auto by_pid = find_device_cgroups(::getpid());
  ASSERT_EQ(by_process.has_value(), by_pid.has_value());
  if (by_pid) {
    EXPECT_EQ(by_process->v1_dir, by_pid->v1_dir);
    EXPECT_EQ(by_process->v2_dir, by_pid->v2_dir);
  } else {
    EXPECT_EQ(by_process.error().message, by_pid.error().message);
  }
  const auto gone = test::gone_process();
  ASSERT_TRUE(gone.held) << gone.held.error().message;
  EXPECT_EQ(find_device_cgroups(*gone.held).error().message,
            "read /proc/" + std::to_string(gone.pid) + "/cgroup: No such process");
}

TEST(CgroupAllow, NoRulesTouchNothing) {
  const auto report = allow_devices({"/nonexistent/devices", "/nonexistent/unified"}, {});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->v1_rules, 0U);
  EXPECT_EQ(report->v2_programs_replaced, 0U);
  EXPECT_FALSE(report->v2_unrestricted);
}

TEST(CgroupAllow, InvalidRuleChangesNothing) {
  const DeviceRule rules[] = {{'c', 1, 3, "rw"}, {'x', 1, 5, "rw"}};
  EXPECT_EQ(allow_devices({"/nonexistent/devices", "/nonexistent/unified"}, rules).error().message,
            "device rule \"x 1:5 rw\": type must be c or b");
}

// --- allow_devices on the real kernel ---------------------------------------------------------------

// These tests need root: they create cgroups, move a process and load BPF programs. Not being root is a
// failure, not a skip, so a CI runner without root cannot pass them unseen.
#define REQUIRE_ROOT()                                                                                     \
  ASSERT_EQ(::geteuid(), 0U) << "this test needs root: it creates cgroups, moves a process into them and " \
                                "loads BPF programs"

Result<void> write_text(const std::string& path, std::string_view text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) {
    return fail_errno("open " + path, errno);
  }
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return fail_errno("write " + std::string(text) + " to " + path, errno);
  }
  return {};
}

// A fresh cgroup directory below `parent`, removed (after its processes are gone) at the end.
class TempCgroup {
 public:
  explicit TempCgroup(const std::string& parent) {
    static int counter = 0;
    m_dir = parent + "/gpuctk-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    if (::mkdir(m_dir.c_str(), 0755) != 0) {
      ADD_FAILURE() << "mkdir " << m_dir << ": " << std::strerror(errno);
      m_dir.clear();
    }
  }
  TempCgroup(const TempCgroup&) = delete;
  TempCgroup& operator=(const TempCgroup&) = delete;
  ~TempCgroup() {
    // A reaped child can linger in the cgroup for a moment: retry EBUSY briefly.
    for (int attempt = 0; !m_dir.empty() && ::rmdir(m_dir.c_str()) != 0 && errno == EBUSY && attempt < 100;
         ++attempt) {
      ::usleep(10'000);
    }
  }
  [[nodiscard]] const std::string& dir() const { return m_dir; }

 private:
  std::string m_dir;
};

// A child process that opens a path O_RDONLY when told to and answers with the errno (0: it opened),
// so the test process itself never joins a test cgroup.
class Opener {
 public:
  Opener() {
    int commands[2];
    int answers[2];
    if (::pipe2(commands, O_CLOEXEC) != 0 || ::pipe2(answers, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe2: " << std::strerror(errno);
      return;
    }
    m_pid = ::fork();
    if (m_pid == 0) {
      ::close(commands[1]);
      ::close(answers[0]);
      char path[256];
      for (;;) {
        const ssize_t n = ::read(commands[0], path, sizeof(path) - 1);
        if (n <= 0) {
          ::_exit(0);
        }
        path[n] = '\0';
        const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
        const int result = fd >= 0 ? 0 : errno;
        if (fd >= 0) {
          ::close(fd);
        }
        if (::write(answers[1], &result, sizeof(result)) != sizeof(result)) {
          ::_exit(1);
        }
      }
    }
    ::close(commands[0]);
    ::close(answers[1]);
    m_commands.reset(commands[1]);
    m_answers.reset(answers[0]);
  }
  Opener(const Opener&) = delete;
  Opener& operator=(const Opener&) = delete;
  ~Opener() {
    if (m_pid > 0) {
      ::kill(m_pid, SIGKILL);
      ::waitpid(m_pid, nullptr, 0);
    }
  }
  [[nodiscard]] pid_t pid() const { return m_pid; }

  // "ok", or the errno name of the failed open ("EPERM").
  std::string open(const std::string& path) {
    int result = -1;
    if (::write(m_commands.get(), path.data(), path.size()) != static_cast<ssize_t>(path.size()) ||
        ::read(m_answers.get(), &result, sizeof(result)) != sizeof(result)) {
      return "no answer from the child";
    }
    return result == 0 ? "ok" : strerrorname_np(result);
  }

 private:
  pid_t m_pid = -1;
  UniqueFd m_commands;
  UniqueFd m_answers;
};

const DeviceRule k_null_rw[] = {{'c', 1, 3, "rw"}};  // /dev/null

// The ids of the programs attached to the cgroup `dir` itself, and their attach flags.
std::vector<uint32_t> attached(const std::string& dir, uint32_t* flags = nullptr) {
  UniqueFd cgroup(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  uint32_t ids[64] = {};
  uint32_t count = 64;
  uint32_t attach_flags = 0;
  if (!cgroup || bpf_prog_query(cgroup.get(), BPF_CGROUP_DEVICE, 0, &attach_flags, ids, &count) != 0) {
    ADD_FAILURE() << "BPF_PROG_QUERY " << dir << ": " << std::strerror(errno);
    return {};
  }
  if (flags != nullptr) {
    *flags = attach_flags;
  }
  return {ids, ids + count};
}

// Attaches `insns` to the cgroup `dir` as a runtime would; returns the program's fd (0 on failure).
UniqueFd attach_program(const std::string& dir, const std::vector<bpf_insn>& insns, uint32_t flags) {
  UniqueFd program(bpf_prog_load(BPF_PROG_TYPE_CGROUP_DEVICE, "test_runtime", "Apache-2.0", insns.data(),
                                 insns.size(), nullptr));
  UniqueFd cgroup(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!program || !cgroup || bpf_prog_attach(program.get(), cgroup.get(), BPF_CGROUP_DEVICE, flags) != 0) {
    ADD_FAILURE() << "load and attach a program to " << dir << ": " << std::strerror(errno);
    return {};
  }
  return program;
}

// Detaches every device program of `dir` (before the cgroup is removed).
void detach_all(const std::string& dir) {
  UniqueFd cgroup(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (const uint32_t id : attached(dir)) {
    UniqueFd program(bpf_prog_get_fd_by_id(id));
    EXPECT_EQ(bpf_prog_detach2(program.get(), cgroup.get(), BPF_CGROUP_DEVICE), 0) << "detach program " << id;
  }
}

// The cgroups of the test process itself: the parents of the test cgroups.
// The test process's own cgroup directories, in which the tests make theirs. It may sit in a hierarchy's
// root, which find_device_cgroups leaves out (never a container's own): so the directories are found for
// a child path below its own and that child's name is taken off again.
DeviceCgroups own_cgroups() {
  const auto text = read_file("/proc/self/cgroup");
  const auto mountinfo = read_file("/proc/self/mountinfo");
  if (!text || !mountinfo) {
    ADD_FAILURE() << "cannot read /proc/self/cgroup or /proc/self/mountinfo";
    return {};
  }
  constexpr std::string_view k_probe = "gpuctk-probe";
  std::string below;
  for (const auto line : split(*text, '\n')) {
    if (!line.empty()) {
      below.append(line).append(line.ends_with('/') ? "" : "/").append(k_probe).append("\n");
    }
  }
  auto own = parse_device_cgroups(below, *mountinfo);
  if (!own) {
    ADD_FAILURE() << own.error().message;
    return {};
  }
  for (std::string* dir : {&own->v1_dir, &own->v2_dir}) {
    if (dir->ends_with(k_probe)) {
      dir->resize(dir->size() - k_probe.size() - 1);
    }
  }
  return *own;
}

TEST(CgroupV1Kernel, AllowLetsTheChildOpenTheDevice) {
  REQUIRE_ROOT();
  const DeviceCgroups own = own_cgroups();
  ASSERT_FALSE(own.v1_dir.empty()) << "this test needs a cgroup v1 devices hierarchy (a hybrid or v1 host)";
  const TempCgroup cgroup(own.v1_dir);
  ASSERT_FALSE(cgroup.dir().empty());
  ASSERT_TRUE(write_text(cgroup.dir() + "/devices.deny", "a"));
  ASSERT_TRUE(write_text(cgroup.dir() + "/devices.allow", "c 1:5 rwm"));  // /dev/zero only
  Opener child;
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(write_text(cgroup.dir() + "/cgroup.procs", std::to_string(child.pid())));
  EXPECT_EQ(child.open("/dev/null"), "EPERM");
  EXPECT_EQ(child.open("/dev/zero"), "ok");

  auto found = find_device_cgroups(child.pid());
  ASSERT_TRUE(found) << found.error().message;
  ASSERT_EQ(found->v1_dir, cgroup.dir());
  // The child's v2 cgroup is the test process's own (the host's root here): not this test's to rewrite.
  found->v2_dir.clear();
  const auto report = allow_devices(*found, k_null_rw);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->v1_rules, 1U);
  EXPECT_EQ(report->v2_programs_replaced, 0U);
  EXPECT_FALSE(report->v2_unrestricted);

  EXPECT_EQ(child.open("/dev/null"), "ok");
  EXPECT_EQ(child.open("/dev/zero"), "ok");
  EXPECT_EQ(child.open("/dev/full"), "EPERM");
  const auto list = read_file(cgroup.dir() + "/devices.list");
  ASSERT_TRUE(list) << list.error().message;
  EXPECT_EQ(*list, "c 1:5 rwm\nc 1:3 rw\n");
}

TEST(CgroupV1Kernel, ErrorsNameTheDirectoryAndStep) {
  REQUIRE_ROOT();
  const DeviceCgroups own = own_cgroups();
  ASSERT_FALSE(own.v1_dir.empty()) << "this test needs a cgroup v1 devices hierarchy (a hybrid or v1 host)";
  // A child cgroup may not allow what its parent denies.
  const TempCgroup parent(own.v1_dir);
  ASSERT_FALSE(parent.dir().empty());
  ASSERT_TRUE(write_text(parent.dir() + "/devices.deny", "a"));
  const TempCgroup cgroup(parent.dir());
  ASSERT_FALSE(cgroup.dir().empty());
  EXPECT_EQ(allow_devices({cgroup.dir(), ""}, k_null_rw).error().message,
            "cgroup v1 " + cgroup.dir() + ": write devices.allow \"c 1:3 rw\": Operation not permitted");
  const DeviceCgroups missing{"/sys/fs/cgroup/devices/gpuctk-no-such-cgroup", ""};
  EXPECT_EQ(allow_devices(missing, k_null_rw).error().message,
            "cgroup v1 /sys/fs/cgroup/devices/gpuctk-no-such-cgroup: open devices.allow: No such file or "
            "directory");
  const DeviceRule bad[] = {{'c', 1, 3, "rx"}};
  EXPECT_EQ(allow_devices(missing, bad).error().message,
            "device rule \"c 1:3 rx\": access may hold only r, w and m");
}

TEST(CgroupV2Kernel, WidensTheRuntimeProgramAndDetachesTheOldOne) {
  REQUIRE_ROOT();
  const DeviceCgroups own = own_cgroups();
  ASSERT_FALSE(own.v2_dir.empty()) << "this test needs a cgroup2 mount";
  const TempCgroup cgroup(own.v2_dir);
  ASSERT_FALSE(cgroup.dir().empty());
  const DeviceRule zero[] = {{'c', 1, 5, "rwm"}};
  const auto runtime_program = widen_program(zero, {});  // allows /dev/zero, denies the rest
  ASSERT_TRUE(runtime_program) << runtime_program.error().message;
  const UniqueFd old = attach_program(cgroup.dir(), *runtime_program, BPF_F_ALLOW_MULTI);
  ASSERT_TRUE(old);
  const std::vector<uint32_t> before = attached(cgroup.dir());
  ASSERT_EQ(before.size(), 1U);

  Opener child;
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(write_text(cgroup.dir() + "/cgroup.procs", std::to_string(child.pid())));
  EXPECT_EQ(child.open("/dev/null"), "EPERM");
  EXPECT_EQ(child.open("/dev/zero"), "ok");

  auto found = find_device_cgroups(child.pid());
  ASSERT_TRUE(found) << found.error().message;
  ASSERT_EQ(found->v2_dir, cgroup.dir());
  // The child's v1 devices cgroup (if any) is the test process's own: not this test's to change.
  found->v1_dir.clear();
  const auto report = allow_devices(*found, k_null_rw);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->v2_programs_replaced, 1U);
  EXPECT_FALSE(report->v2_unrestricted);
  EXPECT_EQ(report->v1_rules, 0U);

  EXPECT_EQ(child.open("/dev/null"), "ok");
  EXPECT_EQ(child.open("/dev/zero"), "ok");  // the old program's rule is kept
  EXPECT_EQ(child.open("/dev/full"), "EPERM");
  uint32_t flags = 0;
  const std::vector<uint32_t> after = attached(cgroup.dir(), &flags);
  ASSERT_EQ(after.size(), 1U) << "the old program must be detached";
  EXPECT_NE(after[0], before[0]);
  EXPECT_EQ(flags, static_cast<uint32_t>(BPF_F_ALLOW_MULTI));

  // Widening the widened program again works the same way (a second hook, a second device).
  const DeviceRule full[] = {{'c', 1, 7, "r"}};
  const auto again = allow_devices(*found, full);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(child.open("/dev/full"), "ok");
  EXPECT_EQ(child.open("/dev/null"), "ok");
  EXPECT_EQ(child.open("/dev/random"), "EPERM");
  EXPECT_EQ(attached(cgroup.dir()).size(), 1U);
  detach_all(cgroup.dir());
}

TEST(CgroupV2Kernel, ReplacesASingleProgramAttachedWithoutAllowMulti) {
  REQUIRE_ROOT();
  const DeviceCgroups own = own_cgroups();
  ASSERT_FALSE(own.v2_dir.empty()) << "this test needs a cgroup2 mount";
  const TempCgroup cgroup(own.v2_dir);
  ASSERT_FALSE(cgroup.dir().empty());
  const DeviceRule zero[] = {{'c', 1, 5, "rwm"}};
  const auto runtime_program = widen_program(zero, {});
  ASSERT_TRUE(runtime_program) << runtime_program.error().message;
  const UniqueFd old = attach_program(cgroup.dir(), *runtime_program, 0);
  ASSERT_TRUE(old);
  const std::vector<uint32_t> before = attached(cgroup.dir());
  ASSERT_EQ(before.size(), 1U);
  Opener child;
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(write_text(cgroup.dir() + "/cgroup.procs", std::to_string(child.pid())));
  EXPECT_EQ(child.open("/dev/null"), "EPERM");

  const auto report = allow_devices({"", cgroup.dir()}, k_null_rw);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->v2_programs_replaced, 1U);
  EXPECT_EQ(child.open("/dev/null"), "ok");
  EXPECT_EQ(child.open("/dev/zero"), "ok");
  EXPECT_EQ(child.open("/dev/full"), "EPERM");
  uint32_t flags = 1234;
  const std::vector<uint32_t> after = attached(cgroup.dir(), &flags);
  ASSERT_EQ(after.size(), 1U);
  EXPECT_NE(after[0], before[0]);
  EXPECT_EQ(flags, 0U);
  detach_all(cgroup.dir());
}

TEST(CgroupV2Kernel, NoProgramAttachedIsUnrestricted) {
  REQUIRE_ROOT();
  const DeviceCgroups own = own_cgroups();
  ASSERT_FALSE(own.v2_dir.empty()) << "this test needs a cgroup2 mount";
  const TempCgroup cgroup(own.v2_dir);
  ASSERT_FALSE(cgroup.dir().empty());
  const auto report = allow_devices({"", cgroup.dir()}, k_null_rw);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->v2_unrestricted);
  EXPECT_EQ(report->v2_programs_replaced, 0U);
  EXPECT_TRUE(attached(cgroup.dir()).empty());
}

TEST(CgroupV2Kernel, ProgramItCannotWidenIsLeftAsItWas) {
  REQUIRE_ROOT();
  const DeviceCgroups own = own_cgroups();
  ASSERT_FALSE(own.v2_dir.empty()) << "this test needs a cgroup2 mount";
  const TempCgroup cgroup(own.v2_dir);
  ASSERT_FALSE(cgroup.dir().empty());
  // A program that calls a helper: call bpf_get_prandom_u32; r0 = 0; exit.
  std::vector<bpf_insn> insns(3);
  insns[0].code = BPF_JMP | BPF_CALL;
  insns[0].imm = BPF_FUNC_get_prandom_u32;
  insns[1].code = BPF_ALU64 | BPF_MOV | BPF_K;
  insns[2].code = BPF_JMP | BPF_EXIT;
  const UniqueFd old = attach_program(cgroup.dir(), insns, BPF_F_ALLOW_MULTI);
  ASSERT_TRUE(old);
  const std::vector<uint32_t> before = attached(cgroup.dir());
  ASSERT_EQ(before.size(), 1U);
  const auto report = allow_devices({"", cgroup.dir()}, k_null_rw);
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().message, "cgroup v2 " + cgroup.dir() + ": program " + std::to_string(before[0]) +
                                        ": cannot widen it: instruction 0: BPF_CALL (a dump holds the "
                                        "kernel's call target, which does not load again)");
  EXPECT_EQ(attached(cgroup.dir()), before);
  detach_all(cgroup.dir());
}

TEST(CgroupV2Kernel, MissingDirectoryIsAnError) {
  REQUIRE_ROOT();
  EXPECT_EQ(allow_devices({"", "/sys/fs/cgroup/gpuctk-no-such-cgroup"}, k_null_rw).error().message,
            "cgroup v2 /sys/fs/cgroup/gpuctk-no-such-cgroup: open: No such file or directory");
}

}  // namespace
}  // namespace gpuctk::cgroup
