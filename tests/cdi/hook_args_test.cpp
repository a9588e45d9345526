#include "cdi/hook_args.hpp"

#include <gtest/gtest.h>

namespace gpuctk::cdi {
namespace {

using Args = std::vector<std::string>;

template <typename T>
std::string parse_error(const Args& args) {
  const auto result = T::parse(args);
  return result ? "ok" : result.error().message;
}

std::string start_error(const Args& options) {
  Args args{"gpuctk", "hook", "container-start"};
  args.insert(args.end(), options.begin(), options.end());
  return parse_error<ContainerStartArgs>(args);
}

ContainerStartArgs every_field() {
  ContainerStartArgs args;
  args.links = {{"libcuda.so.1", "/usr/lib/libcuda.so"}, {"../card0", "/dev/dri/by-path/pci-0-card"}};
  args.host_driver_version = "550.54.15";
  args.host_cuda_version = "12.4";
  args.cuda_compat_container_root = "/opt/compat";
  args.ldconfig_path = "@/sbin/ldconfig";
  args.folders = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/i386-linux-gnu"};
  args.ld_cache_entries = {"0x303:0x0:libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1"};
  args.disable_device_node_modification = true;
  args.update_application_profile = true;
  return args;
}

TEST(CdiHookArgsTest, ContainerStartRoundTrips) {
  const auto args = every_field();
  const auto line = args.to_args();
  ASSERT_GE(line.size(), 3u);
  EXPECT_EQ(line[0], "gpuctk");
  EXPECT_EQ(line[1], "hook");
  EXPECT_EQ(line[2], "container-start");
  const auto back = ContainerStartArgs::parse(line);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, args);
  EXPECT_FALSE(args.empty());
}

// The order the spec builder has always written (the golden specs hold it): links, version, folders,
// ld-cache entries, flags.
TEST(CdiHookArgsTest, ContainerStartWritesTheBuildersOrder) {
  ContainerStartArgs args;
  args.links = {{"a.so.1", "/l/a.so"}};
  args.host_driver_version = "1.2";
  args.folders = {"/l"};
  args.ld_cache_entries = {"0x1:0x0:a.so.1:/l/a.so.1"};
  args.update_application_profile = true;
  EXPECT_EQ(args.to_args(), (Args{"gpuctk", "hook", "container-start", "--link", "a.so.1::/l/a.so",
                                  "--host-driver-version", "1.2", "--folder", "/l", "--ld-cache-entry",
                                  "0x1:0x0:a.so.1:/l/a.so.1", "--update-application-profile"}));
}

TEST(CdiHookArgsTest, EmptyContainerStart) {
  const ContainerStartArgs args;
  EXPECT_TRUE(args.empty());
  EXPECT_EQ(args.to_args(), (Args{"gpuctk", "hook", "container-start"}));
  const auto back = ContainerStartArgs::parse(args.to_args());
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->empty());
}

TEST(CdiHookArgsTest, LastValueCounts) {
  const auto back = ContainerStartArgs::parse(
      Args{"x", "hook", "container-start", "--host-driver-version", "1", "--host-driver-version", "2"});
  ASSERT_TRUE(back);
  EXPECT_EQ(back->host_driver_version, "2");
}

// "--name=VALUE" as CLI11 takes it from a person: the same as "--name VALUE"; a flag takes no value.
TEST(CdiHookArgsTest, ContainerStartTakesNameEqualsValue) {
  const auto back = ContainerStartArgs::parse(Args{"x", "hook", "container-start", "--folder=/usr/lib",
                                                   "--link=a::/b", "--ldconfig-path=@/sbin/ldconfig",
                                                   "--ld-cache-entry=0x303:0x0:a.so.1:/a=b"});
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->folders, Args{"/usr/lib"});
  EXPECT_EQ(back->links, (std::vector<HookLink>{{"a", "/b"}}));
  EXPECT_EQ(back->ldconfig_path, "@/sbin/ldconfig");
  EXPECT_EQ(back->ld_cache_entries, Args{"0x303:0x0:a.so.1:/a=b"});  // split at the first '=' only
  EXPECT_EQ(start_error({"--update-application-profile=true"}),
            R"(hook line: "--update-application-profile" takes no value)");
  EXPECT_EQ(start_error({"--frobnicate=1"}), R"(hook line: unknown option "--frobnicate")");
  const auto links = CreateSymlinksArgs::parse(Args{"x", "hook", "create-symlinks", "--link=t::/l"});
  ASSERT_TRUE(links) << links.error().message;
  EXPECT_EQ(links->links, (std::vector<HookLink>{{"t", "/l"}}));
}

TEST(CdiHookArgsTest, ContainerStartRejects) {
  EXPECT_EQ(start_error({"--frobnicate"}), R"(hook line: unknown option "--frobnicate")");
  EXPECT_EQ(start_error({"--folder"}), R"(hook line: "--folder" needs a value)");
  EXPECT_EQ(start_error({"--link"}), R"(hook line: "--link" needs a value)");
  EXPECT_EQ(start_error({"--link", "a:/b"}), R"(--link "a:/b": expected TARGET::LINK)");
  EXPECT_EQ(start_error({"--link", "::/b"}), R"(--link "::/b": expected TARGET::LINK)");
  EXPECT_EQ(start_error({"--link", "a::"}), R"(--link "a::": expected TARGET::LINK)");
  EXPECT_EQ(start_error({"--link", "a::/b::/c"}), R"(--link "a::/b::/c": expected TARGET::LINK)");
  EXPECT_EQ(start_error({"--link", "a::b"}),
            R"(--link "a::b": LINK must be an absolute container path without "." or "..")");
  EXPECT_EQ(start_error({"--link", "a::/x/../etc"}),
            R"(--link "a::/x/../etc": LINK must be an absolute container path without "." or "..")");
  EXPECT_EQ(parse_error<ContainerStartArgs>({"gpuctk", "hook", "create-symlinks"}),
            R"(hook line: expected "hook container-start" after the program)");
  EXPECT_EQ(parse_error<ContainerStartArgs>({"gpuctk"}),
            R"(hook line: expected "hook container-start" after the program)");
  const Args huge(k_max_hook_args + 1, "--update-application-profile");
  EXPECT_EQ(start_error(huge), "hook line: more than 8192 arguments");
}

TEST(CdiHookArgsTest, CreateSymlinksRoundTrips) {
  const CreateSymlinksArgs args{{{"../card1", "/dev/dri/by-path/pci-1-card"}, {"/abs", "/l"}}};
  const auto line = args.to_args();
  EXPECT_EQ(line, (Args{"gpuctk", "hook", "create-symlinks", "--link",
                        "../card1::/dev/dri/by-path/pci-1-card", "--link", "/abs::/l"}));
  const auto back = CreateSymlinksArgs::parse(line);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, args);
}

TEST(CdiHookArgsTest, CreateSymlinksRejects) {
  EXPECT_EQ(parse_error<CreateSymlinksArgs>({"gpuctk", "hook", "create-symlinks", "--folder", "/l"}),
            R"(hook line: unknown option "--folder")");
  EXPECT_EQ(parse_error<CreateSymlinksArgs>({"gpuctk", "hook", "create-symlinks", "--link"}),
            R"(hook line: "--link" needs a value)");
  EXPECT_EQ(parse_error<CreateSymlinksArgs>({"gpuctk", "hook", "create-symlinks", "--link", "a"}),
            R"(--link "a": expected TARGET::LINK)");
  EXPECT_EQ(parse_error<CreateSymlinksArgs>({"gpuctk", "hook", "container-start"}),
            R"(hook line: expected "hook create-symlinks" after the program)");
}

TEST(CdiHookArgsTest, LinkArgSplitsBack) {
  const HookLink link{"gbm/../x.so", "/usr/lib/y.so"};
  const auto back = split_link(link_arg(link));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, link);
}

TEST(CdiHookArgsTest, LdCacheEntry) {
  discover::LibraryCacheEntry entry;
  entry.flags = 0x303;
  entry.osversion = 0;
  entry.soname = "libcuda.so.1";
  entry.path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
  const auto arg = ld_cache_entry_arg(entry);
  EXPECT_EQ(arg, "0x303:0x0:libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  EXPECT_EQ(ld_cache_entry_path(arg), entry.path);
  EXPECT_EQ(ld_cache_entry_path("0x1:0x0:a.so"), "");
  EXPECT_EQ(ld_cache_entry_path("0x1:0x0:a.so:/p:q"), "/p:q");
}

TEST(CdiHookArgsTest, IsHookLine) {
  EXPECT_TRUE(is_hook_line(Args{"nvidia-ctk", "hook", "create-symlinks"}, k_hook_create_symlinks));
  EXPECT_FALSE(is_hook_line(Args{"gpuctk", "hooks", "create-symlinks"}, k_hook_create_symlinks));
  EXPECT_FALSE(is_hook_line(Args{"gpuctk", "hook"}, k_hook_create_symlinks));
}

}  // namespace
}  // namespace gpuctk::cdi
