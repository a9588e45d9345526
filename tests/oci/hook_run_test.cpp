// run_hook: a hook run as a runtime runs one: argv as given, exactly the given environment, the state on
// stdin, success only on exit status 0, the first output line in errors, killed at its timeout.
#include "oci/hook_run.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "rootfs/rootfs_test_support.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::oci {
namespace {

// "ok" or the error.
std::string outcome(const Result<void>& result) {
  return result ? "ok" : result.error().message;
}

HookCommand shell(const std::string& script, std::vector<std::string> env = {},
                  std::optional<int> timeout = std::nullopt) {
  return HookCommand{"/bin/sh", {"sh", "-c", script}, std::move(env), timeout};
}

// Each string followed by a NUL, as /proc/<pid>/cmdline and environ hold them.
std::string nul_terminated(const std::vector<std::string>& strings) {
  std::string out;
  for (const auto& s : strings) {
    out += s;
    out += '\0';
  }
  return out;
}

const std::string k_state = R"({"ociVersion":"1.0.2","id":"c1","status":"creating","pid":4242,"bundle":"/b",)"
                            "\n"
                            R"("annotations":{"a":"x y\tz"}})";

TEST(HookRun, ExitZeroIsSuccess) {
  EXPECT_EQ(outcome(run_hook(HookCommand{"/bin/true", {}, {}, std::nullopt}, k_state)), "ok");
  EXPECT_EQ(outcome(run_hook(shell("exit 0"), k_state)), "ok");
  EXPECT_EQ(outcome(run_hook(shell("echo chatter; echo more >&2"), k_state)), "ok");
}

TEST(HookRun, TheStateArrivesExactlyOnStdin) {
  test::TempDir temp;
  const std::string out = temp.path() + "/state";
  ASSERT_EQ(outcome(run_hook(shell("cat > \"$OUT\"", {"OUT=" + out}), k_state)), "ok");
  EXPECT_EQ(read_file(out).value_or("<missing>"), k_state);

  // An empty state is an empty stdin (EOF at once), not a blocked read.
  ASSERT_EQ(outcome(run_hook(shell("cat > \"$OUT\"", {"OUT=" + out}), "")), "ok");
  EXPECT_EQ(read_file(out).value_or("<missing>"), "");
}

TEST(HookRun, TheEnvironmentIsExactlyTheOneGiven) {
  test::TempDir temp;
  const std::string out = temp.path() + "/environ";
  // setenv in this process must not reach the hook.
  ::setenv("GPUCTK_TEST_LEAK", "leaked", 1);
  const std::vector<std::string> env{"OUT=" + out, "B=two words", "A=1", "EMPTY="};
  // The shell's own initial environment, as the kernel handed it over (sh itself may add PWD for `env`).
  const auto result = run_hook(shell("cat /proc/$$/environ > \"$OUT\"", env), k_state);
  ::unsetenv("GPUCTK_TEST_LEAK");
  ASSERT_EQ(outcome(result), "ok");
  const std::string text = read_file(out).value_or("<missing>");
  std::vector<std::string> seen;
  for (const auto var : split(text, '\0')) {
    if (!var.empty()) {
      seen.emplace_back(var);
    }
  }
  EXPECT_EQ(seen, env);

  // `env` itself: exactly those, plus only what sh adds (PWD).
  const std::string env_out = temp.path() + "/env";
  ASSERT_EQ(outcome(run_hook(shell("exec /usr/bin/env > \"$OUT\"", {"OUT=" + env_out, "A=1"}), k_state)),
            "ok");
  const std::string env_text = read_file(env_out).value_or("");
  std::vector<std::string> lines;
  for (const auto line : split(env_text, '\n')) {
    if (!line.empty() && !line.starts_with("PWD=")) {
      lines.emplace_back(line);
    }
  }
  std::ranges::sort(lines);
  EXPECT_EQ(lines, (std::vector<std::string>{"A=1", "OUT=" + env_out}));

  // No environment at all.
  const std::string none_out = temp.path() + "/none";
  HookCommand bare{"/bin/sh", {"sh", "-c", "cat /proc/$$/environ > " + none_out}, {}, std::nullopt};
  ASSERT_EQ(outcome(run_hook(bare, k_state)), "ok");
  EXPECT_EQ(read_file(none_out).value_or("<missing>"), "");
}

TEST(HookRun, ArgvIsAsGiven) {
  test::TempDir temp;
  const std::string out = temp.path() + "/argv";
  // The shell's argv as the kernel handed it over, argv[0] included.
  HookCommand named{"/bin/sh",
                    {"custom-name", "-c", "cat /proc/$$/cmdline > \"$OUT\"", "first", "second arg"},
                    {"OUT=" + out},
                    std::nullopt};
  ASSERT_EQ(outcome(run_hook(named, k_state)), "ok");
  EXPECT_EQ(read_file(out).value_or("<missing>"),
            nul_terminated({"custom-name", "-c", "cat /proc/$$/cmdline > \"$OUT\"", "first", "second arg"}));

  // No args: argv is just the path; sh then reads its script from stdin, the state.
  HookCommand bare{"/bin/sh", {}, {"OUT=" + out}, std::nullopt};
  ASSERT_EQ(outcome(run_hook(bare, "cat /proc/$$/cmdline > \"$OUT\"\n")), "ok");
  EXPECT_EQ(read_file(out).value_or("<missing>"), nul_terminated({"/bin/sh"}));
}

TEST(HookRun, NonZeroExitQuotesTheFirstOutputLine) {
  EXPECT_EQ(outcome(run_hook(shell("echo refusing >&2; exit 3"), k_state)),
            "hook /bin/sh: exit status 3: \"refusing\"");
  EXPECT_EQ(outcome(run_hook(shell("echo first; echo second >&2; exit 1"), k_state)),
            "hook /bin/sh: exit status 1: \"first\"");
  EXPECT_EQ(outcome(run_hook(shell("exit 2"), k_state)), "hook /bin/sh: exit status 2");
  EXPECT_EQ(outcome(run_hook(shell("exit 255"), k_state)), "hook /bin/sh: exit status 255");
  // Control characters in the output are escaped: the line cannot forge another log line.
  const std::string forged =
      outcome(run_hook(shell("printf 'bad\\033[31m red\\r fake' >&2; exit 4"), k_state));
  EXPECT_EQ(forged.find('\033'), std::string::npos) << forged;
  EXPECT_EQ(forged.find('\r'), std::string::npos) << forged;
  EXPECT_TRUE(forged.starts_with("hook /bin/sh: exit status 4: \"bad")) << forged;
}

TEST(HookRun, KilledBySignal) {
  EXPECT_EQ(outcome(run_hook(shell("kill -KILL $$"), k_state)), "hook /bin/sh: killed by signal 9");
  EXPECT_EQ(outcome(run_hook(shell("echo dying >&2; kill -TERM $$"), k_state)),
            "hook /bin/sh: killed by signal 15: \"dying\"");
}

TEST(HookRun, SignalsBlockedOrIgnoredHereAreDefaultInTheHook) {
  sigset_t block;
  sigset_t old;
  ::sigemptyset(&block);
  ::sigaddset(&block, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &block, &old);
  struct sigaction ignore {};
  struct sigaction old_action {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGTERM, &ignore, &old_action);
  const auto result = run_hook(shell("kill -TERM $$; exit 0"), k_state);
  ::sigaction(SIGTERM, &old_action, nullptr);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(outcome(result), "hook /bin/sh: killed by signal 15");
}

// No wall-clock bound is asserted (a loaded machine stretches any): the outcome says the hook ran and was
// killed for its timeout, and a hook that sleeps past it never finishes.
TEST(HookRun, TimeoutKillsTheHook) {
  test::TempDir temp;
  const std::string out = temp.path() + "/trace";
  const auto result = run_hook(
      shell("echo started > \"$OUT\"; sleep 5; echo finished >> \"$OUT\"", {"OUT=" + out}, 1), k_state);
  // The text hook_run.hpp documents for a hook killed at its timeout.
  EXPECT_EQ(outcome(result), "hook /bin/sh: killed by signal 9 after its timeout of 1 s");
  EXPECT_EQ(read_file(out).value_or("<none>"), "started\n");
}

TEST(HookRun, AHookWithinItsTimeoutSucceeds) {
  EXPECT_EQ(outcome(run_hook(HookCommand{"/bin/true", {"true"}, {}, 5}, k_state)), "ok");
  EXPECT_EQ(outcome(run_hook(HookCommand{"/bin/sh", {"sh", "-c", "exit 7"}, {}, 5}, k_state)),
            "hook /bin/sh: exit status 7");
}

TEST(HookRun, AMissingProgramIsAnError) {
  EXPECT_EQ(outcome(run_hook(HookCommand{"/nonexistent/hook", {}, {}, std::nullopt}, k_state)),
            "hook /nonexistent/hook: No such file or directory");
  EXPECT_EQ(outcome(run_hook(HookCommand{"/nonexistent/hook", {"hook"}, {}, 2}, k_state)),
            "hook /nonexistent/hook: No such file or directory");
}

TEST(HookRun, AProgramThatCannotBeExecutedIsAnError) {
  test::TempDir temp;
  const std::string script = temp.write("not-executable", "#!/bin/sh\nexit 0\n");
  const std::string message = outcome(run_hook(HookCommand{script, {}, {}, std::nullopt}, k_state));
  EXPECT_EQ(message, "hook " + script + ": Permission denied");
}

// open_hook: the program run is the file the path named when it was opened. A prestart hook opens the
// createContainer hooks' programs before it enters the container's mount namespace, where the same path
// may name a file of the container's: whatever is at the path later is never run.
TEST(HookRun, AnOpenedHookRunsTheFileItOpened) {
  test::TempDir temp;
  const std::string out = temp.path() + "/ran";
  const std::string path = temp.path() + "/hook";
  test::write_host_file(path, "#!/bin/sh\necho opened \"$@\" > \"$OUT\"\n", 0755);
  auto opened = open_hook(HookCommand{path, {"hook", "first", "second arg"}, {"OUT=" + out}, std::nullopt});
  ASSERT_TRUE(opened) << opened.error().message;
  test::write_host_file(path + ".new", "#!/bin/sh\necho replaced > \"$OUT\"\n", 0755);
  ASSERT_EQ(::rename((path + ".new").c_str(), path.c_str()), 0);
  EXPECT_EQ(outcome(run_hook(*opened, k_state)), "ok");
  EXPECT_EQ(read_file(out).value_or("<missing>"), "opened first second arg\n");
  // Gone from its path altogether: still the opened file.
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::unlink(out.c_str()), 0);
  EXPECT_EQ(outcome(run_hook(*opened, k_state)), "ok");
  EXPECT_EQ(read_file(out).value_or("<missing>"), "opened first second arg\n");
}

// A binary run from its fd gets argv exactly as given (args[0] included) and only the given environment.
TEST(HookRun, AnOpenedBinaryGetsItsArgvAsGiven) {
  test::TempDir temp;
  const std::string out = temp.path() + "/argv";
  auto opened = open_hook(HookCommand{"/bin/sh",
                                      {"custom-name", "-c", "cat /proc/$$/cmdline > \"$OUT\"", "first"},
                                      {"OUT=" + out},
                                      std::nullopt});
  ASSERT_TRUE(opened) << opened.error().message;
  ASSERT_EQ(outcome(run_hook(*opened, k_state)), "ok");
  EXPECT_EQ(read_file(out).value_or("<missing>"),
            nul_terminated({"custom-name", "-c", "cat /proc/$$/cmdline > \"$OUT\"", "first"}));
}

TEST(HookRun, OpeningAMissingProgramIsAnError) {
  const auto opened = open_hook(HookCommand{"/nonexistent/hook", {}, {}, std::nullopt});
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().message, "hook /nonexistent/hook: No such file or directory");
}

TEST(HookRun, ADirectoryIsNotAProgram) {
  test::TempDir temp;
  EXPECT_EQ(outcome(run_hook(HookCommand{temp.path(), {}, {}, std::nullopt}, k_state)),
            "hook " + temp.path() + ": Permission denied");
}

// A hook runner started with stdout and stderr closed (its own fds 1 and 2 are then the memfds): the
// hook still gets the state on stdin and its output still reaches the error.
TEST(HookRun, WorksWithoutStandardOutputAndError) {
  test::TempDir temp;
  const std::string out = temp.path() + "/state";
  const std::string result = test::in_child([&]() -> std::string {
    ::alarm(20);
    ::close(STDOUT_FILENO);
    ::close(STDERR_FILENO);
    const std::string copied = outcome(run_hook(shell("cat > \"$OUT\"", {"OUT=" + out}), k_state));
    return copied + " | " + outcome(run_hook(shell("echo refusing >&2; exit 3"), k_state));
  });
  EXPECT_EQ(result, "ok | hook /bin/sh: exit status 3: \"refusing\"");
  EXPECT_EQ(read_file(out).value_or("<missing>"), k_state);
}

TEST(HookRun, WorksWithoutStandardInput) {
  test::TempDir temp;
  const std::string out = temp.path() + "/state";
  const std::string result = test::in_child([&]() -> std::string {
    ::alarm(20);
    ::close(STDIN_FILENO);
    return outcome(run_hook(shell("cat > \"$OUT\"; echo refusing >&2; exit 3", {"OUT=" + out}), k_state));
  });
  EXPECT_EQ(result, "hook /bin/sh: exit status 3: \"refusing\"");
  EXPECT_EQ(read_file(out).value_or("<missing>"), k_state);
}

TEST(HookRun, ALargeStateToAHookThatDoesNotReadIt) {
  const std::string big(1 << 20, 's');
  // In a child with an alarm: a deadlock fails the test instead of hanging it.
  const std::string result = test::in_child([&]() -> std::string {
    ::alarm(20);
    return outcome(run_hook(HookCommand{"/bin/true", {}, {}, std::nullopt}, big));
  });
  EXPECT_EQ(result, "ok");

  test::TempDir temp;
  const std::string out = temp.path() + "/count";
  const std::string counted = test::in_child([&]() -> std::string {
    ::alarm(20);
    return outcome(run_hook(shell("wc -c > \"$OUT\"", {"OUT=" + out}), big));
  });
  EXPECT_EQ(counted, "ok");
  const std::string count = read_file(out).value_or("");
  EXPECT_EQ(trim(count), "1048576");
}

TEST(HookRun, ALotOfOutputDoesNotBlock) {
  const std::string result = test::in_child([&]() -> std::string {
    ::alarm(20);
    return outcome(run_hook(shell("head -c 4194304 /dev/zero | tr '\\0' x; echo; exit 6"), k_state));
  });
  // The first line is 4 MiB of x: cut in the message, never the whole of it.
  EXPECT_TRUE(result.starts_with("hook /bin/sh: exit status 6: \"xxxx")) << result.substr(0, 200);
  EXPECT_LT(result.size(), 8192U);
}

}  // namespace
}  // namespace gpuctk::oci
