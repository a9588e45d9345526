// The file level of `gpuctk runtime configure` (src/engine/configure.cpp): engine names and paths, the
// backup and the record, undo byte for byte or key by key, dry runs, modes, refusals that leave the file
// alone.
#include "engine/configure.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "engine/data.hpp"
#include "engine/toml_doc.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk {
namespace {

using engine::Engine;

std::optional<std::string> contents(const std::string& path) {
  auto text = read_file(path);
  return text ? std::optional<std::string>(std::move(*text)) : std::nullopt;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

toml::table table_of(const std::string& text) {
  auto parsed = engine::detail::parse_toml(text);
  EXPECT_TRUE(parsed) << parsed.error().message;
  return parsed ? std::move(*parsed) : toml::table{};
}

ino_t inode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

class EngineConfigureTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(m_dir.path().empty()); }

  engine::ConfigureResult configure(Engine engine, const std::string& path,
                                    const engine::RuntimeSettings& settings = test::shim_settings(),
                                    bool dry_run = false) {
    auto result = engine::configure(engine, path, settings, dry_run);
    EXPECT_TRUE(result) << result.error().message;
    return result.value_or(engine::ConfigureResult{});
  }
  engine::ConfigureResult unconfigure(Engine engine, const std::string& path, bool dry_run = false) {
    auto result = engine::unconfigure(engine, path, test::shim_settings(), dry_run);
    EXPECT_TRUE(result) << result.error().message;
    return result.value_or(engine::ConfigureResult{});
  }

  // Docker's `path` configured with "nvidia" as the default runtime, then edited by someone else: a
  // "debug" key added at the end.
  void configure_as_default_then_edit_by_hand(const std::string& path) {
    configure(Engine::docker, path, test::shim_settings([](auto& s) { s.set_as_default = true; }));
    std::string edited = contents(path).value_or("");
    ASSERT_NE(edited.rfind('}'), std::string::npos) << edited;
    edited.insert(edited.rfind('}'), ",\n    \"debug\": true\n");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << edited;
  }

  test::TempDir m_dir;
};

TEST(EngineNames, ParseNameAndDefaultPath) {
  EXPECT_EQ(engine::parse_engine("containerd"), Engine::containerd);
  EXPECT_EQ(engine::parse_engine("crio"), Engine::crio);
  EXPECT_EQ(engine::parse_engine("docker"), Engine::docker);
  auto bad = engine::parse_engine("cri-o");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "unknown runtime \"cri-o\" (want containerd, crio or docker)");
  EXPECT_EQ(engine::default_config_path(Engine::containerd), "/etc/containerd/config.toml");
  EXPECT_EQ(engine::default_config_path(Engine::crio), "/etc/crio/crio.conf.d/99-gpuctk.conf");
  EXPECT_EQ(engine::default_config_path(Engine::docker), "/etc/docker/daemon.json");
  EXPECT_EQ(engine::engine_name(Engine::crio), "crio");
}

TEST(EngineNames, RuntimeNameAndPathChecks) {
  for (const char* good : {"nvidia", "gpuctk", "a", "nvidia.cdi", "x_1-2"}) {
    EXPECT_TRUE(engine::check_runtime_name(good)) << good;
  }
  for (const char* bad : {"", "-x", "x-", "a b", "a/b", "ünï"}) {
    EXPECT_FALSE(engine::check_runtime_name(bad)) << bad;
  }
  EXPECT_FALSE(engine::check_runtime_name(std::string(64, 'a')));
  EXPECT_TRUE(engine::check_runtime_path("/usr/bin/gpuctk-runtime"));
  EXPECT_EQ(engine::check_runtime_path("/usr//bin/x").error().message,
            "runtime path \"/usr//bin/x\": not a clean path (no \"//\", \".\" or \"..\" components)");
  EXPECT_EQ(engine::check_runtime_path("/usr/bin/x\n").error().message,
            "runtime path \"/usr/bin/x\\n\": has a control character");
  EXPECT_EQ(engine::check_runtime_path("").error().message, "runtime path \"\": not an absolute path");
}

TEST(EngineNames, StateFilesBesideTheFileButOutsideCriosDropInDirectory) {
  const auto files = engine::state_files(Engine::containerd, "/etc/containerd/config.toml");
  EXPECT_EQ(files.backup, "/etc/containerd/config.toml.gpuctk-backup");
  EXPECT_EQ(files.absent, "/etc/containerd/config.toml.gpuctk-backup-absent");
  EXPECT_EQ(files.record, "/etc/containerd/config.toml.gpuctk-written");
  EXPECT_EQ(files.replaced, "/etc/containerd/config.toml.gpuctk-replaced");
  EXPECT_EQ(files.restart, "/etc/containerd/config.toml.gpuctk-restart");
  EXPECT_EQ(engine::state_files(Engine::crio, "/etc/crio/crio.conf.d/99-gpuctk.conf").backup,
            "/etc/crio/99-gpuctk.conf.gpuctk-backup");
  EXPECT_EQ(engine::state_files(Engine::crio, "/etc/crio/crio.conf.d/99-gpuctk.conf").restart,
            "/etc/crio/99-gpuctk.conf.gpuctk-restart");
  EXPECT_EQ(engine::state_files(Engine::crio, "/etc/crio/crio.conf").record,
            "/etc/crio/crio.conf.gpuctk-written");
  EXPECT_EQ(engine::state_files(Engine::crio, "crio.conf.d/x.conf").backup, "./x.conf.gpuctk-backup");
  EXPECT_EQ(engine::state_files(Engine::docker, "daemon.json").backup, "daemon.json.gpuctk-backup");
  // containerd reads what a glob import matches (conf.d/*): a drop-in's state files are outside too.
  EXPECT_EQ(engine::state_files(Engine::containerd, "/etc/containerd/conf.d/gpu.toml").backup,
            "/etc/containerd/gpu.toml.gpuctk-backup");
  EXPECT_EQ(engine::state_files(Engine::docker, "/etc/docker/daemon.d/x.json").backup,
            "/etc/docker/daemon.d/x.json.gpuctk-backup");
}

TEST_F(EngineConfigureTest, FirstChangeKeepsTheOriginalWithItsMode) {
  const std::string original = test::engine_data("containerd-comments.toml");
  const std::string path = m_dir.write("config.toml", original);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  const auto result = configure(Engine::containerd, path);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.summary, "containerd: runtime \"nvidia\" (/usr/bin/gpuctk-runtime) added; " + path +
                                " written (the original kept as " + path +
                                ".gpuctk-backup); restart containerd");
  EXPECT_EQ(contents(path), result.text);
  EXPECT_EQ(contents(path + ".gpuctk-backup"), original);
  EXPECT_EQ(contents(path + ".gpuctk-written"), result.text);
  EXPECT_FALSE(exists(path + ".gpuctk-backup-absent"));
  EXPECT_EQ(mode_of(path), 0640u);
  EXPECT_EQ(mode_of(path + ".gpuctk-backup"), 0640u);
  EXPECT_EQ(mode_of(path + ".gpuctk-written"), 0640u);
}

TEST_F(EngineConfigureTest, NewFileGetsAnAbsentMarkerAndMode0644) {
  const std::string path = m_dir.path() + "/daemon.json";
  const auto result = configure(Engine::docker, path);
  EXPECT_EQ(result.summary, "docker: runtime \"nvidia\" (/usr/bin/gpuctk-runtime) added; " + path +
                                " written; restart docker");
  EXPECT_EQ(contents(path), result.text);
  EXPECT_EQ(mode_of(path), 0644u);
  EXPECT_EQ(contents(path + ".gpuctk-backup-absent"), "");
  EXPECT_FALSE(exists(path + ".gpuctk-backup"));
}

TEST_F(EngineConfigureTest, SecondRunWritesNothing) {
  const std::string path = m_dir.write("daemon.json", test::engine_data("daemon-typical.json"));
  configure(Engine::docker, path);
  const ino_t inode = inode_of(path);
  const auto again = configure(Engine::docker, path);
  EXPECT_FALSE(again.changed);
  EXPECT_EQ(
      again.summary,
      "docker: " + path + " unchanged: runtime \"nvidia\" (/usr/bin/gpuctk-runtime) is already configured");
  EXPECT_EQ(inode_of(path), inode);  // not even replaced by the same bytes
}

TEST_F(EngineConfigureTest, LaterChangesNeverReplaceTheBackup) {
  const std::string original = test::engine_data("containerd-1.6-default.toml");
  const std::string path = m_dir.write("config.toml", original);
  configure(Engine::containerd, path);
  const auto second = configure(Engine::containerd, path, test::shim_settings([](auto& s) {
                                  s.set_as_default = true;
                                  s.enable_cdi = true;
                                }));
  EXPECT_EQ(second.summary, "containerd: default runtime set to \"nvidia\" (was \"runc\"), CDI enabled; " +
                                path + " written; restart containerd");
  EXPECT_EQ(contents(path + ".gpuctk-backup"), original);
  EXPECT_EQ(contents(path + ".gpuctk-written"), second.text);
}

TEST_F(EngineConfigureTest, RemoveRestoresTheOriginalByteForByte) {
  for (const char* name : {"containerd-comments.toml", "containerd-1.6-default.toml",
                           "containerd-2-default.toml", "containerd-1.6-default-v1.toml"}) {
    const std::string original = test::engine_data(name);
    const std::string path = m_dir.write(name, original);
    configure(Engine::containerd, path);
    configure(Engine::containerd, path, test::shim_settings([](auto& s) {
                s.set_as_default = true;
                s.enable_cdi = true;
              }));
    const auto removed = unconfigure(Engine::containerd, path);
    EXPECT_TRUE(removed.changed);
    EXPECT_EQ(removed.summary,
              "containerd: " + path + " restored from " + path + ".gpuctk-backup; restart containerd");
    EXPECT_EQ(contents(path), original) << name;
    EXPECT_FALSE(exists(path + ".gpuctk-backup"));
    EXPECT_FALSE(exists(path + ".gpuctk-written"));
    EXPECT_FALSE(exists(path + ".gpuctk-replaced"));
  }
}

TEST_F(EngineConfigureTest, RemoveDeletesAFileThatDidNotExist) {
  const std::string path = m_dir.path() + "/crio.conf.d/99-gpuctk.conf";  // the directory is made too
  configure(Engine::crio, path);
  EXPECT_EQ(mode_of(m_dir.path() + "/crio.conf.d"), 0755u);
  EXPECT_TRUE(exists(m_dir.path() + "/99-gpuctk.conf.gpuctk-backup-absent"));
  EXPECT_TRUE(exists(m_dir.path() + "/99-gpuctk.conf.gpuctk-written"));
  const auto removed = unconfigure(Engine::crio, path);
  EXPECT_EQ(removed.summary, "crio: " + path + " deleted (it did not exist before); restart crio");
  EXPECT_FALSE(exists(path));
  EXPECT_FALSE(exists(m_dir.path() + "/99-gpuctk.conf.gpuctk-backup-absent"));
  EXPECT_FALSE(exists(m_dir.path() + "/99-gpuctk.conf.gpuctk-written"));
  const auto again = unconfigure(Engine::crio, path);
  EXPECT_FALSE(again.changed);
  EXPECT_EQ(again.summary, "crio: " + path + " unchanged: it does not exist");
}

TEST_F(EngineConfigureTest, RemoveAfterAForeignEditTakesOnlyGpuctksKeysAndKeepsTheBackup) {
  const std::string original = test::engine_data("daemon-typical.json");
  const std::string path = m_dir.write("daemon.json", original);
  ASSERT_NO_FATAL_FAILURE(configure_as_default_then_edit_by_hand(path));
  const auto removed = unconfigure(Engine::docker, path);
  EXPECT_EQ(removed.summary, "docker: runtime \"nvidia\" removed, default runtime \"nvidia\" unset; " + path +
                                 " written (it was changed since gpuctk wrote it; the original stays in " +
                                 path + ".gpuctk-backup); restart docker");
  EXPECT_EQ(
      contents(path),
      "{\n    \"log-driver\": \"json-file\",\n    \"log-opts\": {\n        \"max-size\": \"10m\",\n"
      "        \"max-file\": \"3\"\n    },\n    \"storage-driver\": \"overlay2\",\n    \"registry-mirrors\": "
      "[\n"
      "        \"https://mirror.example.com\"\n    ],\n    \"exec-opts\": [\n"
      "        \"native.cgroupdriver=systemd\"\n    ],\n    \"runtimes\": {},\n    \"debug\": true\n}\n");
  EXPECT_EQ(contents(path + ".gpuctk-backup"), original);
  EXPECT_FALSE(exists(path + ".gpuctk-written"));
}

// An edit between two configure runs breaks the chain for good: the record goes, and --remove then keeps
// the administrator's edit.
TEST_F(EngineConfigureTest, ConfigureAfterAForeignEditDropsTheRecord) {
  const std::string path = m_dir.write("config.toml", test::engine_data("containerd-kata.toml"));
  configure(Engine::containerd, path);
  std::string edited =
      *contents(path) +
      "\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\nconfig_path = \"/etc/containerd/certs.d\"\n";
  m_dir.write("config.toml", edited);
  configure(Engine::containerd, path, test::shim_settings([](auto& s) { s.set_as_default = true; }));
  EXPECT_FALSE(exists(path + ".gpuctk-written"));
  unconfigure(Engine::containerd, path);
  const auto after = contents(path);
  ASSERT_TRUE(after);
  EXPECT_NE(after->find("config_path = \"/etc/containerd/certs.d\""), std::string::npos);
  EXPECT_EQ(after->find("nvidia"), std::string::npos) << *after;
  EXPECT_TRUE(exists(path + ".gpuctk-backup"));
}

// Once the file is the original again, gpuctk may take it up again and undo it byte for byte.
TEST_F(EngineConfigureTest, FileBackToTheOriginalIsGpuctksAgain) {
  const std::string original = test::engine_data("daemon-typical.json");
  const std::string path = m_dir.write("daemon.json", original);
  configure(Engine::docker, path);
  m_dir.write("daemon.json", original);  // put back by hand
  configure(Engine::docker, path);
  EXPECT_TRUE(exists(path + ".gpuctk-written"));
  unconfigure(Engine::docker, path);
  EXPECT_EQ(contents(path), original);
  EXPECT_FALSE(exists(path + ".gpuctk-backup"));
}

// An entry of gpuctk's name that was there (NVIDIA's), and another default runtime: after an unrelated
// edit, --remove cannot restore the backup, but puts back every key gpuctk replaced, in every schema.
TEST_F(EngineConfigureTest, RemoveAfterAForeignEditPutsBackATakenOverContainerdEntry) {
  for (const std::string_view plugin :
       {"cri", "\"io.containerd.grpc.v1.cri\"", "\"io.containerd.cri.v1.runtime\""}) {
    const std::string version = plugin == "cri"                                 ? ""
                                : plugin.find("grpc") != std::string_view::npos ? "version = 2\n"
                                                                                : "version = 3\n";
    const std::string table = "[plugins." + std::string(plugin) + ".containerd";
    const std::string original = version + table + "]\n" + "default_runtime_name = \"crun\"\n" + table +
                                 ".runtimes.crun]\n"
                                 "runtime_type = \"io.containerd.runc.v2\"\n" +
                                 table +
                                 ".runtimes.crun.options]\n"
                                 "BinaryName = \"/usr/bin/crun\"\n" +
                                 table +
                                 ".runtimes.nvidia]\n"
                                 "runtime_type = \"io.containerd.runtime.v1.linux\"\n"
                                 "runtime_engine = \"/usr/bin/nvidia-container-runtime\"\n"
                                 "privileged_without_host_devices = true\n";
    const std::string edit =
        "\n[plugins." + std::string(plugin) + ".registry]\nconfig_path = \"/etc/containerd/certs.d\"\n";
    const std::string path = m_dir.write("config.toml", original);
    const auto settings = test::shim_settings([](auto& s) { s.set_as_default = true; });
    configure(Engine::containerd, path, settings);
    m_dir.write("config.toml", *contents(path) + edit);
    const auto removed = unconfigure(Engine::containerd, path);
    EXPECT_EQ(removed.summary,
              "containerd: runtime \"nvidia\" restored, default runtime \"crun\" restored; " + path +
                  " written (it was changed since gpuctk wrote it; the original stays in " + path +
                  ".gpuctk-backup); restart containerd")
        << plugin;
    // What the file holds is the original with the edit, key for key (toml++ printed it again).
    EXPECT_EQ(table_of(*contents(path)), table_of(original + edit)) << *contents(path);
    EXPECT_NE(contents(path)->find("runtime_engine = \"/usr/bin/nvidia-container-runtime\""),
              std::string::npos)
        << *contents(path);
    EXPECT_NE(contents(path)->find("default_runtime_name = \"crun\""), std::string::npos) << *contents(path);
    EXPECT_EQ(contents(path)->find("gpuctk"), std::string::npos) << *contents(path);
    EXPECT_FALSE(exists(path + ".gpuctk-replaced"));
    ASSERT_EQ(::unlink((path + ".gpuctk-backup").c_str()), 0);
  }
}

TEST_F(EngineConfigureTest, RemoveAfterAForeignEditPutsBackDockersEntryAndDefault) {
  const std::string original =
      R"({"default-runtime": "crun", "runtimes": {"crun": {"path": "/usr/bin/crun"}, )"
      R"("nvidia": {"args": [], "path": "nvidia-container-runtime"}}})";
  const std::string path = m_dir.write("daemon.json", original);
  ASSERT_NO_FATAL_FAILURE(configure_as_default_then_edit_by_hand(path));
  const auto removed = unconfigure(Engine::docker, path);
  EXPECT_EQ(removed.summary,
            "docker: runtime \"nvidia\" restored (nvidia-container-runtime), default runtime "
            "\"crun\" restored; " +
                path + " written (it was changed since gpuctk wrote it; the original stays in " + path +
                ".gpuctk-backup); restart docker");
  EXPECT_EQ(contents(path),
            "{\n"
            "    \"default-runtime\": \"crun\",\n"
            "    \"runtimes\": {\n"
            "        \"crun\": {\n"
            "            \"path\": \"/usr/bin/crun\"\n"
            "        },\n"
            "        \"nvidia\": {\n"
            "            \"args\": [],\n"
            "            \"path\": \"nvidia-container-runtime\"\n"
            "        }\n"
            "    },\n"
            "    \"debug\": true\n"
            "}\n");
}

// The record of what gpuctk replaced, as it is kept beside the file.
TEST_F(EngineConfigureTest, WhatWasReplacedIsKeptBesideTheFile) {
  const std::string path = m_dir.write(
      "daemon.json",
      R"({"default-runtime": "crun", "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}})");
  configure(Engine::docker, path, test::shim_settings([](auto& s) { s.set_as_default = true; }));
  EXPECT_EQ(contents(path + ".gpuctk-replaced"),
            "{\n"
            "    \"runtimes\": {\n"
            "        \"nvidia\": {\n"
            "            \"created\": false,\n"
            "            \"binary\": \"/usr/bin/gpuctk-runtime\",\n"
            "            \"keys\": [\n"
            "                {\n"
            "                    \"key\": [\n"
            "                        \"path\"\n"
            "                    ],\n"
            "                    \"was\": \"nvidia-container-runtime\"\n"
            "                }\n"
            "            ]\n"
            "        }\n"
            "    },\n"
            "    \"default_runtime\": {\n"
            "        \"set\": \"nvidia\",\n"
            "        \"was\": \"crun\"\n"
            "    }\n"
            "}\n");
  m_dir.write("daemon.json.gpuctk-replaced", "[]");
  auto result = engine::configure(Engine::docker, path, test::shim_settings(), false);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, path + ".gpuctk-replaced: the document is an array (want an object)");
  m_dir.write("daemon.json.gpuctk-replaced", R"({"runtimes": {"nvidia": {"created": 1}}})");
  result = engine::unconfigure(Engine::docker, path, test::shim_settings(), false);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message,
            path + ".gpuctk-replaced: not a record of gpuctk's (runtimes.nvidia.created is not a boolean)");
}

// The CRI-O handler taken over in the written file itself (crio.conf): its keys and what it lacked of
// runc's come back as they were.
TEST_F(EngineConfigureTest, RemoveAfterAForeignEditPutsBackATakenOverCrioHandler) {
  const std::string original =
      "[crio.runtime.runtimes.runc]\n"
      "runtime_path = \"/usr/libexec/crio/runc\"\n"
      "monitor_env = [\"PATH=/usr/bin:/bin\"]\n"
      "\n"
      "[crio.runtime.runtimes.nvidia]\n"
      "runtime_path = \"/usr/bin/nvidia-container-runtime\"\n"
      "runtime_type = \"oci\"\n";
  const std::string path = m_dir.write("crio.conf", original);
  const auto configured = configure(Engine::crio, path);
  EXPECT_NE(configured.text.find(
                "monitor_env = [ \"PATH=/usr/bin:/bin\" ]\nruntime_path = \"/usr/bin/gpuctk-runtime\""),
            std::string::npos)
      << configured.text;
  m_dir.write("crio.conf", *contents(path) + "[crio.image]\npause_image = \"registry.k8s.io/pause:3.9\"\n");
  const auto removed = unconfigure(Engine::crio, path);
  EXPECT_EQ(removed.summary, "crio: runtime \"nvidia\" restored (/usr/bin/nvidia-container-runtime); " +
                                 path +
                                 " written (it was changed since gpuctk wrote it; the original stays in " +
                                 path + ".gpuctk-backup); restart crio");
  EXPECT_EQ(contents(path),
            "[crio.image]\n"
            "pause_image = \"registry.k8s.io/pause:3.9\"\n"
            "\n"
            "[crio.runtime.runtimes.nvidia]\n"
            "runtime_path = \"/usr/bin/nvidia-container-runtime\"\n"
            "runtime_type = \"oci\"\n"
            "\n"
            "[crio.runtime.runtimes.runc]\n"
            "monitor_env = [ \"PATH=/usr/bin:/bin\" ]\n"
            "runtime_path = \"/usr/libexec/crio/runc\"\n");
}

// An entry someone pointed elsewhere after gpuctk wrote it is theirs: --remove leaves it and says so; a
// configure run then takes it over afresh, and --remove puts that back.
TEST_F(EngineConfigureTest, AnEntryPointedElsewhereIsLeftAloneOrTakenOverAfresh) {
  const std::string path = m_dir.path() + "/daemon.json";
  configure(Engine::docker, path);
  m_dir.write("daemon.json", R"({"runtimes": {"nvidia": {"path": "/opt/other"}}, "debug": true})");
  auto removed = unconfigure(Engine::docker, path);
  EXPECT_FALSE(removed.changed);
  EXPECT_EQ(removed.summary,
            "docker: " + path +
                " unchanged: no runtime \"nvidia\" of gpuctk's in it; runtime \"nvidia\" left "
                "alone: it runs /opt/other now, not gpuctk's /usr/bin/gpuctk-runtime");
  EXPECT_EQ(contents(path), R"({"runtimes": {"nvidia": {"path": "/opt/other"}}, "debug": true})");

  configure(Engine::docker, path);
  m_dir.write("daemon.json", *contents(path) + "\n");
  removed = unconfigure(Engine::docker, path);
  EXPECT_EQ(contents(path),
            "{\n    \"runtimes\": {\n        \"nvidia\": {\n            \"path\": \"/opt/other\"\n        }\n"
            "    },\n    \"debug\": true\n}\n");
}

// The file's own directory a link to itself: the loop is named as what it is, not as a linked file.
TEST_F(EngineConfigureTest, LoopingDirectoryIsNotCalledALink) {
  const std::string dir = m_dir.path() + "/conf.d";
  ASSERT_EQ(::symlink("conf.d", dir.c_str()), 0);
  auto result = engine::configure(Engine::docker, dir + "/daemon.json", test::shim_settings(), false);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "read " + dir + "/daemon.json: Too many levels of symbolic links");
}

TEST_F(EngineConfigureTest, EditedCrioDropInWithNothingLeftIsDeleted) {
  const std::string path = m_dir.path() + "/99-gpuctk.conf";
  configure(Engine::crio, path);
  m_dir.write("99-gpuctk.conf", *contents(path) + "# touched\n");
  const auto removed = unconfigure(Engine::crio, path);
  EXPECT_EQ(removed.summary,
            "crio: runtime \"nvidia\" removed; " + path + " deleted (nothing else was in it); restart crio");
  EXPECT_FALSE(exists(path));
}

TEST_F(EngineConfigureTest, DryRunWritesNothing) {
  const std::string path = m_dir.path() + "/config.toml";
  auto result = configure(Engine::containerd, path, test::shim_settings(), true);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.summary, "containerd: runtime \"nvidia\" (/usr/bin/gpuctk-runtime) added; dry run: " +
                                path + " not written");
  EXPECT_TRUE(result.text.starts_with("version = 2\n")) << result.text;
  EXPECT_FALSE(exists(path));
  EXPECT_FALSE(exists(path + ".gpuctk-backup-absent"));

  configure(Engine::containerd, path);
  const std::string configured = *contents(path);
  result = unconfigure(Engine::containerd, path, true);
  EXPECT_EQ(result.summary, "containerd: dry run: " + path + " would be deleted (it did not exist before)");
  EXPECT_EQ(result.text, "");
  EXPECT_EQ(contents(path), configured);
  EXPECT_TRUE(exists(path + ".gpuctk-backup-absent"));
  EXPECT_TRUE(exists(path + ".gpuctk-written"));
}

TEST_F(EngineConfigureTest, MalformedOrWrongTypedFilesAreLeftAlone) {
  for (const auto& [engine, name] : {std::pair{Engine::containerd, "containerd-malformed.toml"},
                                     std::pair{Engine::containerd, "containerd-wrong-type.toml"},
                                     std::pair{Engine::docker, "daemon-malformed.json"},
                                     std::pair{Engine::docker, "daemon-wrong-type.json"}}) {
    const std::string original = test::engine_data(name);
    const std::string path = m_dir.write(name, original);
    auto result = engine::configure(engine, path, test::shim_settings(), false);
    ASSERT_FALSE(result) << name;
    EXPECT_TRUE(result.error().message.starts_with(path + ": ")) << result.error().message;
    EXPECT_EQ(result.error().message.find('\n'), std::string::npos);
    EXPECT_EQ(contents(path), original);
    EXPECT_FALSE(exists(path + ".gpuctk-backup"));
    EXPECT_FALSE(exists(path + ".gpuctk-written"));
  }
  const std::string path = m_dir.write("bad.json", test::engine_data("daemon-wrong-type.json"));
  EXPECT_EQ(engine::configure(Engine::docker, path, test::shim_settings(), false).error().message,
            path + ": runtimes is a string (want an object)");
}

TEST_F(EngineConfigureTest, OnlyTheFilesOwnDirectoryIsMade) {
  const std::string path = m_dir.path() + "/etc/docker/daemon.json";
  auto result = engine::configure(Engine::docker, path, test::shim_settings(), false);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message,
            "create directory " + m_dir.path() + "/etc/docker: No such file or directory");
  EXPECT_FALSE(exists(m_dir.path() + "/etc"));
}

TEST_F(EngineConfigureTest, SymbolicLinkIsRefused) {
  const std::string target = m_dir.write("real.json", "{}");
  const std::string link = m_dir.path() + "/daemon.json";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  auto result = engine::configure(Engine::docker, link, test::shim_settings(), false);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message,
            "read " + link +
                ": a symbolic link (the file is replaced atomically, which would replace "
                "the link; name the file it points to)");
  EXPECT_EQ(contents(target), "{}");
}

}  // namespace
}  // namespace gpuctk

namespace gpuctk {
namespace {

// The config directory's path is a link that another process keeps switching between two directories
// (issue 21 item 7): configure opens the directory once, so the file, its backup and its record always
// land together in one of them, never split between both; --remove then finds its state beside the file.
TEST_F(EngineConfigureTest, ADirectorySwitchedMidwayNeverSplitsTheFileFromItsState) {
  const std::string a = m_dir.path() + "/a";
  const std::string b = m_dir.path() + "/b";
  ASSERT_EQ(::mkdir(a.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(b.c_str(), 0755), 0);
  const std::string link = m_dir.path() + "/docker";
  ASSERT_EQ(::symlink("a", link.c_str()), 0);
  std::atomic<bool> stop = false;
  std::thread flipper([&] {
    const std::string next = m_dir.path() + "/docker.next";
    for (bool to_b = true; !stop; to_b = !to_b) {
      ::unlink(next.c_str());
      if (::symlink(to_b ? "b" : "a", next.c_str()) == 0) {
        ::rename(next.c_str(), link.c_str());  // atomic: the link always names one of the two
      }
    }
  });
  const auto listing = [](const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      names.push_back(entry.path().filename().string());
    }
    std::ranges::sort(names);
    return names;
  };
  const std::vector<std::string> configured{"daemon.json", "daemon.json.gpuctk-backup-absent",
                                            "daemon.json.gpuctk-replaced", "daemon.json.gpuctk-written"};
  int split = 0;
  for (int round = 0; round < 300; ++round) {
    auto result = engine::configure(Engine::docker, link + "/daemon.json", test::shim_settings(), false);
    ASSERT_TRUE(result) << result.error().message;
    const auto in_a = listing(a);
    const auto in_b = listing(b);
    split += !((in_a == configured && in_b.empty()) || (in_b == configured && in_a.empty())) ? 1 : 0;
    std::filesystem::remove_all(a);
    std::filesystem::remove_all(b);
    ::mkdir(a.c_str(), 0755);
    ::mkdir(b.c_str(), 0755);
  }
  stop = true;
  flipper.join();
  EXPECT_EQ(split, 0) << "rounds that left the file and its state in different directories";
}

}  // namespace
}  // namespace gpuctk
