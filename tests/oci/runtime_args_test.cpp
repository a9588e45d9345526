#include "oci/runtime_args.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace gpuctk::oci {
namespace {

RuntimeArgs parse(const std::vector<std::string>& args, std::string_view cwd = "/home/u") {
  return parse_runtime_args(args, cwd);
}

// containerd-shim-runc-v2 (containerd 1.6/1.7, CRI): go-runc puts the globals first.
TEST(OciRuntimeArgs, ContainerdCreate) {
  const std::string task = "/run/containerd/io.containerd.runtime.v2.task/k8s.io/4f2a";
  const auto args =
      parse({"--root", "/run/containerd/runc/k8s.io", "--log", task + "/log.json", "--log-format", "json",
             "--systemd-cgroup", "create", "--bundle", task, "--pid-file", task + "/init.pid", "4f2a"});
  EXPECT_EQ(args.unparseable, "");
  EXPECT_EQ(args.subcommand, "create");
  EXPECT_EQ(args.subcommand_index, 7u);
  EXPECT_EQ(args.bundle, task);
  EXPECT_EQ(args.config_file, task + "/config.json");
  EXPECT_EQ(args.root, "/run/containerd/runc/k8s.io");
  EXPECT_EQ(args.log_file, task + "/log.json");
  EXPECT_EQ(args.log_format, "json");
  EXPECT_TRUE(args.creates_container());
}

// conmon as started by podman 4.3 (Debian 12), verbatim.
TEST(OciRuntimeArgs, PodmanCreate) {
  const std::string userdata = "/var/lib/containers/storage/overlay-containers/bdc6/userdata";
  const auto args =
      parse({"--log-format=json", "--log", userdata + "/oci-log", "create", "--bundle", userdata,
             "--pid-file", "/run/containers/storage/overlay-containers/bdc6/userdata/pidfile", "bdc6"});
  EXPECT_EQ(args.unparseable, "");
  EXPECT_EQ(args.subcommand, "create");
  EXPECT_EQ(args.subcommand_index, 3u);
  EXPECT_EQ(args.bundle, userdata);
  EXPECT_EQ(args.config_file, userdata + "/config.json");
  EXPECT_EQ(args.log_file, userdata + "/oci-log");
  EXPECT_EQ(args.log_format, "json");
  EXPECT_EQ(args.root, "");
}

// docker 20+ (dockerd -> containerd -> shim v2) with a tty, and docker 18/19 (shim v1, systemd).
TEST(OciRuntimeArgs, DockerCreate) {
  const std::string task = "/run/containerd/io.containerd.runtime.v2.task/moby/9c1e";
  const auto v2 = parse({"--root", "/var/run/docker/runtime-runc/moby", "--log", task + "/log.json",
                         "--log-format", "json", "create", "--bundle", task, "--pid-file", task + "/init.pid",
                         "--console-socket", "/tmp/pty1234/pty.sock", "9c1e"});
  EXPECT_EQ(v2.unparseable, "");
  EXPECT_EQ(v2.subcommand_index, 6u);
  EXPECT_EQ(v2.bundle, task);
  EXPECT_EQ(v2.root, "/var/run/docker/runtime-runc/moby");

  const std::string v1_task = "/run/containerd/io.containerd.runtime.v1.linux/moby/9c1e";
  const auto v1 = parse({"--root", "/var/run/docker/runtime-runc/moby", "--log", v1_task + "/log.json",
                         "--log-format", "json", "--systemd-cgroup", "create", "--bundle", v1_task,
                         "--pid-file", v1_task + "/init.pid", "9c1e"});
  EXPECT_EQ(v1.unparseable, "");
  EXPECT_EQ(v1.subcommand, "create");
  EXPECT_EQ(v1.bundle, v1_task);
}

TEST(OciRuntimeArgs, DeleteHasNoBundle) {
  const auto args = parse({"--root", "/run/containerd/runc/k8s.io", "--log", "/run/x/log.json",
                           "--log-format", "json", "delete", "--force", "4f2a"});
  EXPECT_EQ(args.unparseable, "");
  EXPECT_EQ(args.subcommand, "delete");
  EXPECT_EQ(args.subcommand_index, 6u);
  EXPECT_EQ(args.bundle, "");
  EXPECT_EQ(args.config_file, "");
  EXPECT_FALSE(args.creates_container());
}

TEST(OciRuntimeArgs, EveryBundleSpelling) {
  for (const std::vector<std::string>& form :
       {std::vector<std::string>{"create", "--bundle=/b/c", "id"},
        {"create", "-b", "/b/c", "id"},
        {"create", "-b=/b/c", "id"},
        {"create", "-bundle", "/b/c", "id"},
        {"run", "--bundle", "/b/c", "-d", "id"},
        {"create", "id", "--bundle", "/b/c"},
        {"--debug=true", "create", "--no-pivot", "--bundle", "/b/c/", "id"}}) {
    const auto args = parse(form);
    EXPECT_EQ(args.unparseable, "") << form[1];
    EXPECT_EQ(args.bundle, "/b/c") << form[1];
    EXPECT_EQ(args.config_file, "/b/c/config.json") << form[1];
  }
}

TEST(OciRuntimeArgs, BundleDefaultsToTheWorkingDirectoryAndRelativeBundlesAreResolved) {
  EXPECT_EQ(parse({"run", "id"}).bundle, "/home/u");
  EXPECT_EQ(parse({"create", "--bundle", "", "id"}).bundle, "/home/u");
  EXPECT_EQ(parse({"create", "--bundle", "b1", "id"}).bundle, "/home/u/b1");
  EXPECT_EQ(parse({"create", "--bundle", "./b1/../b2", "id"}).bundle, "/home/u/b2");
  EXPECT_EQ(parse({"create", "--bundle", "/", "id"}).config_file, "/config.json");
  const auto here = parse_runtime_args(std::vector<std::string>{"create", "id"});
  EXPECT_EQ(here.bundle, std::filesystem::current_path().string());
}

TEST(OciRuntimeArgs, CrunConfigIsResolvedAgainstTheWorkingDirectory) {
  const auto args =
      parse({"--cgroup-manager=systemd", "--root=/run/crun", "create", "-f", "other.json", "-b", "/b", "id"});
  EXPECT_EQ(args.unparseable, "");
  EXPECT_EQ(args.root, "/run/crun");
  EXPECT_EQ(args.bundle, "/b");
  EXPECT_EQ(args.config_file, "/home/u/other.json");
  EXPECT_EQ(parse({"run", "--config=/etc/c.json", "id"}).config_file, "/etc/c.json");
}

TEST(OciRuntimeArgs, OptionValuesAreTakenAsTheyComeAndDoubleDashEndsOptions) {
  // Go's flag package and argp both take the next argument as the value, whatever it looks like.
  const auto log = parse({"--log", "--debug", "create", "--pid-file", "--bundle", "id"});
  EXPECT_EQ(log.unparseable, "");
  EXPECT_EQ(log.log_file, "--debug");
  EXPECT_EQ(log.subcommand, "create");
  EXPECT_EQ(log.bundle, "/home/u");
  const auto dashes = parse({"--root", "/r", "--", "create", "--", "--bundle", "/x"});
  EXPECT_EQ(dashes.unparseable, "");
  EXPECT_EQ(dashes.subcommand, "create");
  EXPECT_EQ(dashes.subcommand_index, 3u);
  EXPECT_EQ(dashes.bundle, "/home/u");
}

TEST(OciRuntimeArgs, NoSubcommand) {
  const auto version = parse({"--version"});
  EXPECT_EQ(version.unparseable, "");
  EXPECT_EQ(version.subcommand, "");
  EXPECT_EQ(version.subcommand_index, 1u);
  const auto empty = parse({});
  EXPECT_EQ(empty.subcommand, "");
  EXPECT_EQ(empty.subcommand_index, 0u);
}

TEST(OciRuntimeArgs, WhatCannotBeUnderstoodIsMarkedUnparseable) {
  EXPECT_EQ(parse({"--root"}).unparseable, "option --root needs a value");
  EXPECT_EQ(parse({"--log-format", "json", "--log"}).unparseable, "option --log needs a value");
  EXPECT_EQ(parse({"create", "id", "--bundle"}).unparseable, "option --bundle needs a value");
  EXPECT_EQ(parse({"create", "id", "--pid-file"}).unparseable, "option --pid-file needs a value");
  EXPECT_EQ(parse({"--new-flag", "x", "create", "id"}).unparseable, "unknown global option --new-flag");
  EXPECT_EQ(parse({"create", "-b/x", "id"}).unparseable, "ambiguous option -b/x");
  EXPECT_EQ(parse({"create", "id"}, "").unparseable, "the current directory is unknown");
}

TEST(OciRuntimeArgs, UnknownSubcommandOptionsAreAssumedToTakeNoValue) {
  const auto args = parse({"create", "--future-flag", "--bundle", "/b", "id"}, "");
  EXPECT_EQ(args.unparseable, "");
  EXPECT_EQ(args.bundle, "/b");
}

}  // namespace
}  // namespace gpuctk::oci
