#include "steps/commands.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cdi/hook_args.hpp"
#include "rootfs/rootfs_test_support.hpp"
#include "steps/root_edits.hpp"
#include "util/file.hpp"

namespace gpuctk::steps {
namespace {

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const auto& row : hook_table()) {
    out.emplace_back(row.name);
  }
  return out;
}

// `row` prepared with `args` and its body run on the folder `dir`: the first error of the two, if any.
Result<void> run_row(std::string_view row, const HookArgs& args, const std::string& dir,
                     const config::Config& config) {
  const config::Log log;
  GPUCTK_TRY_ASSIGN(auto body, prepare_hook(*find_hook(row), args, config, log));
  GPUCTK_TRY_ASSIGN(auto root, rootfs::Root::open(dir));
  return body(root, config, log);
}

TEST(HookTable, HoldsGpuctksOwnHooksByTheirNvidiaNames) {
  EXPECT_EQ(names(), (std::vector<std::string>{"create-symlinks", "update-ldcache", "enable-cuda-compat",
                                               "disable-device-node-modification",
                                               "update-application-profile", "chmod", "container-start"}));
  ASSERT_NE(find_hook("update-ldcache"), nullptr);
  EXPECT_STREQ(find_hook("update-ldcache")->name, "update-ldcache");
  EXPECT_EQ(find_hook("prestart"), nullptr);  // an injection point, not a createContainer hook
  EXPECT_EQ(find_hook(""), nullptr);
}

TEST(HookArgs, KeepsEveryValueInOrderAndTheLastAsTheOne) {
  HookArgs args;
  EXPECT_FALSE(args.has("--link"));
  EXPECT_TRUE(args.all("--link").empty());
  EXPECT_EQ(args.one("--link"), "");
  args.add("--link", "b::/b");
  args.add("--link", "a::/a");
  EXPECT_TRUE(args.has("--link"));
  EXPECT_EQ(args.all("--link"), (std::vector<std::string>{"b::/b", "a::/a"}));
  EXPECT_EQ(args.one("--link"), "a::/a");
}

TEST(PrepareHook, ErrorsNameTheHookOnce) {
  HookArgs args;
  args.add("--link", "nocolons");
  const config::Config config;
  const config::Log log;
  auto prepared = prepare_hook(*find_hook("create-symlinks"), args, config, log);
  ASSERT_FALSE(prepared);
  EXPECT_EQ(prepared.error().message, "create-symlinks: --link \"nocolons\": expected TARGET::LINK");

  HookArgs mode;
  mode.add("--mode", "9");
  auto chmod = prepare_hook(*find_hook("chmod"), mode, config, log);
  ASSERT_FALSE(chmod);
  EXPECT_EQ(chmod.error().message, "chmod: \"9\" is not an octal mode such as 755");
}

TEST(PrepareHook, TheBodyRunsOnTheRootItIsGivenAndNamesTheHookInItsErrors) {
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  const config::Config config;
  HookArgs args;
  args.add("--link", "libcuda.so.1::/usr/lib/libcuda.so");
  auto done = run_row("create-symlinks", args, temp.path(), config);
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(test::host_readlink(temp.path() + "/usr/lib/libcuda.so"), "libcuda.so.1");

  // A link where the root has a directory cannot be made: the error names the hook.
  HookArgs over_dir;
  over_dir.add("--link", "x::/usr/lib");
  auto failed = run_row("create-symlinks", over_dir, temp.path(), config);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message,
            "create-symlinks: create link /usr/lib in container root " + temp.path() + ": Is a directory");
}

// --- container-start: the spec-wide steps in one process ---------------------------------------------

TEST(ContainerStart, RunsOnlyTheStepsItsOptionsAskFor) {
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  config::Config config;
  config.dev_root = temp.path() + "/no-driver";  // no params file: the params step has nothing to hide
  HookArgs args;
  args.add("--link", "libcuda.so.1::/usr/lib/libcuda.so");
  args.add("--disable-device-node-modification", "true");
  auto done = run_row("container-start", args, temp.path(), config);
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(test::host_readlink(temp.path() + "/usr/lib/libcuda.so"), "libcuda.so.1");
  // No --folder: no update-ldcache step, so no drop-in and no cache in the root.
  EXPECT_FALSE(std::filesystem::exists(temp.path() + "/etc/ld.so.conf.d"));
  EXPECT_FALSE(std::filesystem::exists(temp.path() + "/etc/ld.so.cache"));
  // Nothing asked: nothing done, no error.
  auto nothing = run_row("container-start", HookArgs{}, temp.path(), config);
  EXPECT_TRUE(nothing) << nothing.error().message;
}

// The application profile is a step of container-start (NVIDIA's v1.20 specs run update-application-profile
// in every container): with --update-application-profile the container's GPU nodes give the mask, without
// it no profile is written.
TEST(ContainerStart, UpdateApplicationProfileIsAStepOfItsOwnOption) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "only root makes device nodes";
  }
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  test::make_host_dirs(temp.path() + "/dev");
  ASSERT_EQ(::mknod((temp.path() + "/dev/nvidia2").c_str(), S_IFCHR | 0666, ::makedev(195, 2)), 0);
  const std::string profile = temp.path() + std::string(k_application_profile);
  config::Config config;
  config.dev_root = temp.path() + "/no-driver";
  const config::Log log;
  auto root = rootfs::Root::open(temp.path());
  ASSERT_TRUE(root) << root.error().message;
  HookArgs without;
  without.add("--link", "libcuda.so.1::/usr/lib/libcuda.so");
  auto other_steps = prepare_hook(*find_hook("container-start"), without, config, log);
  ASSERT_TRUE(other_steps) << other_steps.error().message;
  ASSERT_TRUE((*other_steps)(*root, config, log));
  EXPECT_FALSE(std::filesystem::exists(profile)) << "not asked for: no profile";
  HookArgs with;
  with.add("--update-application-profile", "true");
  auto body = prepare_hook(*find_hook("container-start"), with, config, log);
  ASSERT_TRUE(body) << body.error().message;
  auto done = (*body)(*root, config, log);
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(read_file(profile).value_or(""), application_profile_text(0x4));
}

TEST(ContainerStart, AFailingStepIsTheErrorUnderTheStepsOwnName) {
  const config::Config config;
  const config::Log log;
  HookArgs links;
  links.add("--link", "nocolons");
  links.add("--folder", "/usr/lib");
  auto bad_link = prepare_hook(*find_hook("container-start"), links, config, log);
  ASSERT_FALSE(bad_link);
  EXPECT_EQ(bad_link.error().message, "create-symlinks: --link \"nocolons\": expected TARGET::LINK");
  HookArgs ldconfig;
  ldconfig.add("--folder", "/usr/lib");
  ldconfig.add("--ldconfig-path", "sbin/ldconfig");
  auto bad_ldconfig = prepare_hook(*find_hook("container-start"), ldconfig, config, log);
  ASSERT_TRUE(bad_ldconfig) << "a host ldconfig's error counts only where it is run";
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  auto root = rootfs::Root::open(temp.path());
  ASSERT_TRUE(root) << root.error().message;
  auto run = (*bad_ldconfig)(*root, config, log);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().message,
            "update-ldcache: --ldconfig-path \"sbin/ldconfig\": expected an absolute host path");
}

// hook prestart's way for the lines gpuctk's specs carry: the contract's parse, then the same steps.
TEST(ContractLine, RunsContainerStartAndLinksFromTheirTypedForm) {
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  config::Config config;
  config.dev_root = temp.path() + "/no-driver";
  const config::Log log;
  auto root = rootfs::Root::open(temp.path());
  ASSERT_TRUE(root) << root.error().message;
  cdi::ContainerStartArgs start;
  start.links = {{"libcuda.so.1", "/usr/lib/libcuda.so"}};
  auto body = prepare_contract_line(start.to_args(), config, log);
  ASSERT_TRUE(body) << body.error().message;
  ASSERT_TRUE(body->has_value());
  ASSERT_TRUE((**body)(*root, config, log));
  EXPECT_EQ(test::host_readlink(temp.path() + "/usr/lib/libcuda.so"), "libcuda.so.1");
  EXPECT_FALSE(std::filesystem::exists(temp.path() + "/etc/ld.so.conf.d")) << "no --folder: no ldconfig step";
  const cdi::CreateSymlinksArgs device{{{"../card0", "/dev/dri/by-path/pci-0-card"}}};
  auto links = prepare_contract_line(device.to_args(), config, log);
  ASSERT_TRUE(links) << links.error().message;
  ASSERT_TRUE(links->has_value());
  ASSERT_TRUE((**links)(*root, config, log));
  EXPECT_EQ(test::host_readlink(temp.path() + "/dev/dri/by-path/pci-0-card"), "../card0");
}

TEST(ContractLine, LeavesOtherLinesToTheTableAndRefusesWhatTheContractRefuses) {
  const config::Config config;
  const config::Log log;
  const std::vector<std::string> chmod{"gpuctk", "hook", "chmod", "--mode", "755", "--path", "/dev/dri"};
  auto other = prepare_contract_line(chmod, config, log);
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_FALSE(other->has_value());
  auto unknown = prepare_contract_line(
      std::vector<std::string>{"gpuctk", "hook", "container-start", "--frobnicate"}, config, log);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, R"(container-start: hook line: unknown option "--frobnicate")");
  // Two targets for one link: the step's own check, under the step's name.
  cdi::ContainerStartArgs twice;
  twice.links = {{"a", "/l"}, {"b", "/l"}};
  auto conflict = prepare_contract_line(twice.to_args(), config, log);
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().message, R"(create-symlinks: --link: "/l" is given two targets, "a" and "b")");
}

}  // namespace
}  // namespace gpuctk::steps
