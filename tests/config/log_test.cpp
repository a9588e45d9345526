// The hook's log and the hook's error on stderr: the two places where container-controlled text leaves
// gpuctk. Whatever a message holds, one call is one line (escaped, cut at k_max_log_message bytes).
#include "config/log.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "fixtures/builder/hosts.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::config {
namespace {

// A key a container could put into an annotation: it ends the line and starts a forged one.
const std::string k_forging_key =
    "cdi.k8s.io/x\n2026-11-22T06:19:32Z gpuctk[1] info: injected nothing\x1b[2K";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  for (const auto line : split(text, '\n')) {
    lines.emplace_back(line);
  }
  EXPECT_EQ(lines.back(), "") << "the file ends with a newline";
  lines.pop_back();
  return lines;
}

TEST(HookLog, OneCallIsOneLineWhateverTheMessageHolds) {
  auto temp = fixture::TempRoot::create();
  ASSERT_TRUE(temp) << temp.error().message;
  const std::string path = temp->path() + "/hook.log";
  auto log = Log::open(path, LogLevel::info);
  ASSERT_TRUE(log) << log.error().message;
  log->info("request from annotation " + k_forging_key + ": nvidia.com/gpu=0");
  log->warning(std::string(10000, 'x'));
  log->error(
      "invalid UTF-8 \xff and a C1 CSI \xc2\x9b"
      "31m");

  const auto lines = lines_of(read_file(path).value());
  ASSERT_EQ(lines.size(), 3u);
  const std::string pid = " gpuctk[" + std::to_string(::getpid()) + "] ";
  for (const auto& line : lines) {
    EXPECT_NE(line.find(pid), std::string::npos) << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  }
  EXPECT_TRUE(lines[0].ends_with(
      R"(info: request from annotation cdi.k8s.io/x\n2026-11-22T06:19:32Z gpuctk[1] info: injected nothing\x1b[2K: )"
      "nvidia.com/gpu=0"))
      << lines[0];
  EXPECT_TRUE(lines[1].ends_with("warning: " + std::string(4096, 'x') + "\u2026(5904 bytes cut)"))
      << lines[1];
  EXPECT_TRUE(lines[2].ends_with(R"(error: invalid UTF-8 \xff and a C1 CSI \xc2\x9b31m)")) << lines[2];
}

// A link planted where the log goes (the log's directory may be one others can write, such as /tmp) must
// not make the hook append to, or create, whatever it points at: refused in one line, followed never.
TEST(HookLog, ASymbolicLinkAtTheLogPathIsRefused) {
  auto temp = fixture::TempRoot::create();
  ASSERT_TRUE(temp) << temp.error().message;
  const std::string victim = temp->path() + "/victim";
  ASSERT_TRUE(write_file_atomic(victim, "root's file\n", 0600));
  const std::string link = temp->path() + "/hook.log";
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  const std::string dangling = temp->path() + "/dangling.log";
  const std::string created = temp->path() + "/would-be-created";
  ASSERT_EQ(::symlink(created.c_str(), dangling.c_str()), 0);

  for (const auto& path : {link, dangling}) {
    auto log = Log::open(path, LogLevel::info);
    ASSERT_FALSE(log) << path;
    EXPECT_EQ(log.error().message,
              "open log file " + path + ": is a symbolic link; refused (name the file itself)");
  }
  EXPECT_EQ(read_file(victim).value_or("<missing>"), "root's file\n");
  EXPECT_FALSE(read_file(created)) << "the dangling link's target was created";
}

// run_with_log (src/cli/hook_precreate.cpp) reports a hook's error in the log and, through cli::report
// (src/cli/app.cpp), on stderr, which the engine keeps as its text log: one line in each.
TEST(HookLog, AHookErrorIsOneLineInTheLogAndOnStderr) {
  auto temp = fixture::TempRoot::create();
  ASSERT_TRUE(temp) << temp.error().message;
  const std::string log_path = temp->path() + "/hook.log";
  const std::string config_path = temp->path() + "/config.yaml";
  ASSERT_TRUE(write_file_atomic(config_path, "log-file: " + log_path + "\n", 0644));
  const std::string err_path = temp->path() + "/stderr";

  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(err_fd, 0);
  ::dup2(err_fd, STDERR_FILENO);
  ::close(err_fd);
  const int rc = cli::run_with_log(config_path, [](const Config&, const Log&) -> Result<void> {
    return fail("annotation " + k_forging_key + ": invalid device name \"x\"");
  });
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);

  EXPECT_EQ(rc, 1);
  const std::string escaped =
      R"(annotation cdi.k8s.io/x\n2026-11-22T06:19:32Z gpuctk[1] info: injected nothing\x1b[2K: invalid device name "x")";
  EXPECT_EQ(read_file(err_path).value(), "gpuctk: error: " + escaped + "\n");
  const auto lines = lines_of(read_file(log_path).value());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].ends_with("error: " + escaped)) << lines[0];
}

// Which container a line is about goes before the message, escaped like it (it comes from config.json).
TEST(HookLog, TheContextPrefixesEveryLine) {
  auto temp = fixture::TempRoot::create();
  ASSERT_TRUE(temp) << temp.error().message;
  const std::string path = temp->path() + "/hook.log";
  auto log = Log::open(path, LogLevel::info);
  ASSERT_TRUE(log) << log.error().message;
  log->info("before");
  log->set_context("container with hostname a\nb");
  log->info("request");
  log->error("refused");
  const auto lines = lines_of(read_file(path).value());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(lines[0].ends_with("] info: before")) << lines[0];
  EXPECT_TRUE(lines[1].ends_with(R"(] info: container with hostname a\nb: request)")) << lines[1];
  EXPECT_TRUE(lines[2].ends_with(R"(] error: container with hostname a\nb: refused)")) << lines[2];
}

// The log never grows without bound: a hook that opens a full file moves it to "<path>.1" (replacing the
// one before) and starts a new one, created 0640 like the first.
TEST(HookLog, AFullLogIsRotatedOnce) {
  auto temp = fixture::TempRoot::create();
  ASSERT_TRUE(temp) << temp.error().message;
  const std::string path = temp->path() + "/hook.log";
  const off_t max = 100;
  ASSERT_TRUE(write_file_atomic(path + ".1", "the oldest lines\n", 0640));
  auto first = Log::open(path, LogLevel::info, max);
  ASSERT_TRUE(first) << first.error().message;
  first->info(std::string(120, 'a'));                 // now over the limit
  auto early = Log::open(path, LogLevel::info, max);  // rotates: hook.log -> hook.log.1
  ASSERT_TRUE(early) << early.error().message;
  early->info("after the rotation");
  const auto rotated = lines_of(read_file(path + ".1").value());
  ASSERT_EQ(rotated.size(), 1u);
  EXPECT_TRUE(rotated[0].ends_with(std::string(120, 'a'))) << rotated[0];
  auto current = lines_of(read_file(path).value());
  ASSERT_EQ(current.size(), 1u);
  EXPECT_TRUE(current[0].ends_with("info: after the rotation")) << current[0];
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  // Below the limit nothing moves.
  auto again = Log::open(path, LogLevel::info, max);
  ASSERT_TRUE(again);
  again->info("one more");
  EXPECT_EQ(lines_of(read_file(path).value()).size(), 2u);
  EXPECT_EQ(lines_of(read_file(path + ".1").value()).size(), 1u);
}

// What Log::open made of `path`, run in a thread that may take at most `limit`: "logging", "refused: <why>"
// or "error: <message>". A FIFO with no reader blocks an open for writing for ever: past the limit the test
// opens the FIFO's read end itself, so that the thread ends, and the answer starts with "blocked".
std::string open_within(const std::string& path, std::chrono::seconds limit) {
  std::promise<std::string> done;
  auto answer = done.get_future();
  std::thread opener([&] {
    auto log = Log::open(path, LogLevel::info);
    done.set_value(!log                            ? "error: " + log.error().message
                   : log->enabled(LogLevel::error) ? "logging"
                                                   : "refused: " + log->refused());
  });
  std::string blocked;
  if (answer.wait_for(limit) != std::future_status::ready) {
    const UniqueFd reader(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    blocked = "blocked, then ";
    answer.wait();
  }
  opener.join();
  return blocked + answer.get();
}

// Issue 33 item 3: a FIFO at the log path blocked every hook in its open (O_NOFOLLOW but no O_NONBLOCK), and
// a device node there was opened by root. Neither is opened now: the hook logs nothing and says why once
// (the CLI prints it as a warning), at once. A device's open is watched with inotify (IN_OPEN).
TEST(HookLog, AFifoADeviceOrASocketAtTheLogPathIsNeverOpened) {
  const test::TempDir temp("gpuctk-log");
  ASSERT_FALSE(temp.path().empty());
  const std::string fifo = temp.path() + "/fifo.log";
  const std::string device = temp.path() + "/device.log";
  const std::string socket_path = temp.path() + "/socket.log";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const bool root = ::geteuid() == 0;
  if (root) {
    ASSERT_EQ(::mknod(device.c_str(), S_IFCHR | 0600, ::makedev(1, 3)), 0) << std::strerror(errno);
  }
  const UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socket_path.size(), sizeof address.sun_path);
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  ASSERT_EQ(::bind(sock.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  const UniqueFd watch(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  ASSERT_TRUE(watch);
  if (root) {
    ASSERT_GE(::inotify_add_watch(watch.get(), device.c_str(), IN_OPEN), 0);
  }
  const std::string why =
      ": not a regular file; not logging (name a regular file in a folder only root can write)";
  for (const auto& path : {fifo, device, socket_path}) {
    if (path == device && !root) {
      continue;  // only root makes device nodes; the FIFO and the socket still run
    }
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(open_within(path, std::chrono::seconds(5)), "refused: log file " + path + why);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << path;
  }
  char events[4096];
  EXPECT_EQ(::read(watch.get(), events, sizeof events), -1) << "the device node was opened";
  EXPECT_EQ(errno, EAGAIN);
}

// Issue 33 item 3: whoever else can write the log's folder can put a FIFO, a device node or a hard link to
// another file at its name. Such a folder is not used: one reason, no file made, the hook carries on.
TEST(HookLog, AFolderOthersCanWriteIsNotUsed) {
  const test::TempDir temp("gpuctk-log");
  ASSERT_FALSE(temp.path().empty());
  // A user group (1000 and up) writing is others writing; as root the test picks one.
  const gid_t user_group = ::geteuid() == 0 ? 4242 : ::getegid();
  std::vector<mode_t> modes{0777, 01777, 0757};
  if (user_group >= 1000) {
    modes.push_back(0775);
  }
  std::string report;
  for (const mode_t mode : modes) {
    char name[16];
    std::snprintf(name, sizeof name, "%04o", static_cast<unsigned>(mode));
    const std::string dir = temp.path() + "/" + name;
    ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
    ASSERT_EQ(::chown(dir.c_str(), ::geteuid(), user_group), 0);
    const std::string path = dir + "/gpuctk.log";
    auto log = Log::open(path, LogLevel::info);
    ASSERT_TRUE(log) << log.error().message;
    EXPECT_FALSE(log->enabled(LogLevel::error)) << path;
    report += log->refused() + (::access(path.c_str(), F_OK) == 0 ? " (file made)" : "") + "\n";
  }
  const std::string owner = std::to_string(::geteuid()) + ":" + std::to_string(user_group);
  const std::string tail = "; not logging (name a regular file in a folder only root can write)\n";
  std::string expected;
  for (const mode_t mode : modes) {
    char name[16];
    std::snprintf(name, sizeof name, "%04o", static_cast<unsigned>(mode));
    expected += "log file " + temp.path() + "/" + name + "/gpuctk.log: its folder " + temp.path() + "/" +
                name + " can be written by others (mode " + name + ", owner " + owner + ")" + tail;
  }
  EXPECT_EQ(report, expected);
  // Root's own group, or a system group (Ubuntu's /var/log: 0775 root:syslog), writing is root writing.
  if (::geteuid() == 0) {
    for (const gid_t group : {0, 4}) {
      const std::string dir = temp.path() + "/group-" + std::to_string(group);
      ASSERT_EQ(::mkdir(dir.c_str(), 0775), 0);
      ASSERT_EQ(::chmod(dir.c_str(), 0775), 0);
      ASSERT_EQ(::chown(dir.c_str(), 0, group), 0);
      auto log = Log::open(dir + "/gpuctk.log", LogLevel::info);
      ASSERT_TRUE(log) << log.error().message;
      EXPECT_TRUE(log->enabled(LogLevel::error)) << dir;
      EXPECT_EQ(log->refused(), "");
    }
  }
}

}  // namespace
}  // namespace gpuctk::config
