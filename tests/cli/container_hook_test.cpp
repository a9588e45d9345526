// prepare_hook_in_process: gpuctk's own hooks of a spec parsed and prepared in hook prestart's process,
// through the hook table, with no global state.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "rootfs/rootfs_test_support.hpp"

namespace gpuctk::cli {
namespace {

TEST(CliContainerHookInProcess, RunsTheTablesHookOnTheRootItIsGiven) {
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  const config::Config config;
  const config::Log log;
  auto body = prepare_hook_in_process(
      {"gpuctk", "hook", "create-symlinks", "--link", "a::/x/one", "--link=b::/two"}, config, log);
  ASSERT_TRUE(body) << body.error().message;
  auto root = rootfs::Root::open(temp.path());
  ASSERT_TRUE(root) << root.error().message;
  auto done = (*body)(*root);
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(test::host_readlink(temp.path() + "/x/one"), "a");
  EXPECT_EQ(test::host_readlink(temp.path() + "/two"), "b");
}

TEST(CliContainerHookInProcess, ErrorsComeBackNamedNotPrinted) {
  const config::Config config;
  const config::Log log;
  auto bad =
      prepare_hook_in_process({"gpuctk", "hook", "create-symlinks", "--link", "nocolons"}, config, log);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "create-symlinks: --link \"nocolons\": expected TARGET::LINK");
  // A usage error (printed on stderr, as `gpuctk hook chmod` prints it) comes back as its exit status.
  testing::internal::CaptureStderr();
  auto usage = prepare_hook_in_process({"gpuctk", "hook", "chmod", "--path", "/x"}, config, log);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_FALSE(usage);
  EXPECT_EQ(usage.error().message, "hook gpuctk hook chmod --path /x: exit status 2");
  EXPECT_EQ(err, "gpuctk: error: missing option --mode (see gpuctk hook chmod --help)\n");
}

TEST(CliContainerHookInProcess, AnUnknownHookIsAWarningAndDoesNothing) {
  const config::Config config;
  const config::Log log;
  testing::internal::CaptureStderr();
  auto body = prepare_hook_in_process({"gpuctk", "hook", "from-the-future", "--x"}, config, log);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(body) << body.error().message;
  EXPECT_EQ(err, "gpuctk: warning: unknown hook \"from-the-future\" ignored (a spec from a newer gpuctk?)\n");
}

}  // namespace
}  // namespace gpuctk::cli
