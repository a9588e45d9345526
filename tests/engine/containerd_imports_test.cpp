// containerd's imports (src/engine/containerd_imports.cpp): the files read after config.toml in
// containerd's order (globs, relative paths, nested imports, loops and bounds), what they leave of
// gpuctk's runtime under containerd 1.x's and 2.x's merges, and the warning `runtime configure` prints.
#include "engine/containerd_imports.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/configure.hpp"
#include "engine/data.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk {
namespace {

using engine::Engine;

// NVIDIA's drop-in as `nvidia-ctk runtime configure --runtime=containerd` (v1.18 and later) writes it:
// runtime "nvidia" running nvidia-container-runtime.
constexpr std::string_view k_nvidia_dropin =
    "version = 2\n"
    "\n"
    "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
    "runtime_type = \"io.containerd.runc.v2\"\n"
    "\n"
    "    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
    "    BinaryName = \"/usr/bin/nvidia-container-runtime\"\n";

class EngineContainerdImports : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(m_dir.path().empty()); }

  std::string path(std::string_view relative) const { return m_dir.path() + "/" + std::string(relative); }
  std::string config() const { return path("config.toml"); }

  std::vector<std::string> source_paths() {
    auto sources = engine::read_sources(Engine::containerd, config());
    EXPECT_TRUE(sources) << sources.error().message;
    std::vector<std::string> out;
    for (const auto& file : sources ? sources->after : std::vector<engine::SourceFile>{}) {
      out.push_back(file.path.substr(m_dir.path().size() + 1));
    }
    return out;
  }

  std::string sources_error() {
    auto sources = engine::read_sources(Engine::containerd, config());
    return sources ? std::string("(no error)") : sources.error().message;
  }

  // The one line `runtime configure --dry-run` says.
  std::string summary(const engine::RuntimeSettings& settings = test::shim_settings()) {
    auto result = engine::configure(Engine::containerd, config(), settings, true);
    return result ? result->summary : "(error) " + result.error().message;
  }

  test::TempDir m_dir;
};

// containerd's order: the config's imports as listed, a glob's matches sorted by bytes, relative paths
// from the importing file's directory, then the imports of those files (breadth first); a file already
// loaded, and a glob that matches nothing, are skipped; a missing path too (containerd 2.x skips it).
TEST_F(EngineContainerdImports, SourcesInContainerdsOrder) {
  m_dir.write("config.toml", "version = 2\nimports = [\"conf.d/*.toml\", \"" + path("other.toml") +
                                 "\", \"missing.toml\", \"none/*.toml\"]\n");
  m_dir.write("conf.d/99-nvidia.toml", "imports = [\"sub/nested.toml\"]\n");
  m_dir.write("conf.d/10-a.toml", "imports = [\"99-nvidia.toml\"]\n");
  m_dir.write("conf.d/sub/nested.toml", "");
  m_dir.write("conf.d/notes.txt", "");
  m_dir.write("other.toml", "");
  EXPECT_EQ(source_paths(), (std::vector<std::string>{"conf.d/10-a.toml", "conf.d/99-nvidia.toml",
                                                      "other.toml", "conf.d/sub/nested.toml"}));
}

TEST_F(EngineContainerdImports, NoConfigNoImports) {
  EXPECT_TRUE(source_paths().empty());
  m_dir.write("config.toml", "version = 2\n");
  EXPECT_TRUE(source_paths().empty());
}

TEST_F(EngineContainerdImports, ALoopIsAnError) {
  m_dir.write("config.toml", "version = 2\nimports = [\"conf.d/a.toml\"]\n");
  m_dir.write("conf.d/a.toml", "imports = [\"b.toml\"]\n");
  m_dir.write("conf.d/b.toml", "imports = [\"../config.toml\"]\n");
  EXPECT_EQ(sources_error(),
            path("conf.d/b.toml") + ": imports " + config() + ", which imports it (an import loop)");
  m_dir.write("conf.d/b.toml", "imports = [\"a.toml\"]\n");
  EXPECT_EQ(sources_error(), path("conf.d/b.toml") + ": imports " + path("conf.d/a.toml") +
                                 ", which imports it (an import loop)");
}

TEST_F(EngineContainerdImports, TooManyFilesIsAnError) {
  m_dir.write("config.toml", "version = 2\nimports = [\"conf.d/*.toml\"]\n");
  for (size_t i = 0; i < engine::k_max_source_files; ++i) {
    m_dir.write("conf.d/" + std::to_string(i) + ".toml", "");
  }
  EXPECT_EQ(sources_error(), config() + ": imports more than 1024 files in all");
}

TEST_F(EngineContainerdImports, OddImportsAreErrors) {
  m_dir.write("config.toml", "version = 2\nimports = \"conf.d/*.toml\"\n");
  EXPECT_EQ(sources_error(),
            config() + ": imports is a string (want an array of strings) at line 2, column 11");
  m_dir.write("config.toml", "version = 2\nimports = [\"fifo.toml\"]\n");
  ASSERT_EQ(::mkfifo(path("fifo.toml").c_str(), 0600), 0);
  EXPECT_EQ(sources_error(), "read " + path("fifo.toml") + ": not a regular file");
  m_dir.write("config.toml", "version = 2\nimports = [\"bad.toml\"]\n");
  m_dir.write("bad.toml", "[plugins\n");
  EXPECT_EQ(sources_error().substr(0, path("bad.toml").size() + 2), path("bad.toml") + ": ");
}

// An import is cleaned and joined to the directory of the file that names it.
TEST(EngineContainerdImportPath, JoinedAndCleaned) {
  EXPECT_EQ(engine::detail::import_path("conf.d/*.toml", "/etc/containerd/config.toml"),
            "/etc/containerd/conf.d/*.toml");
  EXPECT_EQ(engine::detail::import_path("../x//y.toml", "/etc/containerd/conf.d/a.toml"),
            "/etc/containerd/x/y.toml");
  EXPECT_EQ(engine::detail::import_path("/etc/./z.toml", "/etc/containerd/config.toml"), "/etc/z.toml");
  EXPECT_EQ(engine::detail::import_path("z.toml", "config.toml"), "z.toml");
  // gpuctk install: an absolute import names the node's file, seen below the host root; ".." stays in it.
  EXPECT_EQ(engine::detail::import_path("/etc/containerd/conf.d/*.toml", "/host/etc/containerd/config.toml",
                                        "/host"),
            "/host/etc/containerd/conf.d/*.toml");
  EXPECT_EQ(engine::detail::import_path("/../../x.toml", "/host/etc/containerd/config.toml", "/host"),
            "/host/x.toml");
  EXPECT_EQ(engine::detail::import_path("/etc/x.toml", "/etc/containerd/config.toml", "/"), "/etc/x.toml");
  EXPECT_EQ(engine::detail::import_path("x.toml", "/host/etc/containerd/config.toml", "/host"),
            "/host/etc/containerd/x.toml");
}

// gpuctk install from a pod: the node's config imports absolute paths, read below the host root.
TEST_F(EngineContainerdImports, AbsoluteImportsBelowTheNodeRoot) {
  m_dir.write("host/etc/containerd/config.toml",
              "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n");
  m_dir.write("host/etc/containerd/conf.d/99-nvidia.toml", k_nvidia_dropin);
  auto sources =
      engine::read_sources(Engine::containerd, path("host/etc/containerd/config.toml"), path("host"));
  ASSERT_TRUE(sources) << sources.error().message;
  ASSERT_EQ(sources->after.size(), 1U);
  EXPECT_EQ(sources->after[0].path, path("host/etc/containerd/conf.d/99-nvidia.toml"));
  EXPECT_EQ(sources->after[0].text, k_nvidia_dropin);
}

engine::detail::ContainerdEffective effective_of(std::string_view main,
                                                 const std::vector<engine::SourceFile>& imports) {
  auto doc = engine::detail::parse_toml(main);
  EXPECT_TRUE(doc) << doc.error().message;
  auto effective = engine::detail::containerd_effective(doc.value_or(toml::table{}), imports, "nvidia");
  EXPECT_TRUE(effective) << effective.error().message;
  return effective.value_or(engine::detail::ContainerdEffective{});
}

constexpr std::string_view k_ours_v2 =
    "version = 2\n"
    "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
    "default_runtime_name = \"nvidia\"\n"
    "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
    "BinaryName = \"/usr/bin/gpuctk-runtime\"\n";

// containerd 1.x: a later CRI plugin table replaces the whole: runtime "nvidia" goes, and the default runtime
// is containerd's "runc" again, though the import names neither.
TEST(EngineContainerdEffective, Version2ReplacesThePluginTable) {
  const auto effective = effective_of(
      k_ours_v2, {{.path = "/x/50-cgroup.toml",
                   .text = "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc."
                           "options]\nSystemdCgroup = true\n"},
                  {.path = "/x/60-other.toml", .text = "[plugins.\"io.containerd.internal.v1.opt\"]\n"}});
  EXPECT_EQ(effective.binary, std::nullopt);
  EXPECT_EQ(effective.binary_from, "/x/50-cgroup.toml");
  EXPECT_EQ(effective.default_name, "runc");
  EXPECT_EQ(effective.default_from, "/x/50-cgroup.toml");
}

// containerd 2.x: key by key; only the keys an import sets change.
TEST(EngineContainerdEffective, Version3MergesKeyByKey) {
  const std::string ours =
      "version = 3\n"
      "[plugins.\"io.containerd.cri.v1.runtime\".containerd]\n"
      "default_runtime_name = \"nvidia\"\n"
      "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nvidia.options]\n"
      "BinaryName = \"/usr/bin/gpuctk-runtime\"\n";
  auto effective =
      effective_of(ours, {{.path = "/x/50-cgroup.toml",
                           .text = "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd."
                                   "runtimes.nvidia.options]\nSystemdCgroup = true\n"}});
  EXPECT_EQ(effective.binary, "/usr/bin/gpuctk-runtime");
  EXPECT_EQ(effective.binary_from, "");
  EXPECT_EQ(effective.default_name, "nvidia");
  effective =
      effective_of(ours, {{.path = "/x/99-nvidia.toml",
                           .text = "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd]\n"
                                   "default_runtime_name = \"runc\"\n"
                                   "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nvidia."
                                   "options]\nBinaryName = \"/usr/bin/nvidia-container-runtime\"\n"}});
  EXPECT_EQ(effective.binary, "/usr/bin/nvidia-container-runtime");
  EXPECT_EQ(effective.binary_from, "/x/99-nvidia.toml");
  EXPECT_EQ(effective.default_name, "runc");
  EXPECT_EQ(effective.default_from, "/x/99-nvidia.toml");
}

// NVIDIA's drop-in beside gpuctk's entry in config.toml: containerd runs NVIDIA's runtime, and configure
// says so in its one line.
TEST_F(EngineContainerdImports, NvidiasDropInWins) {
  m_dir.write("config.toml", "version = 2\nimports = [\"conf.d/*.toml\"]\n");
  m_dir.write("conf.d/99-nvidia.toml", k_nvidia_dropin);
  EXPECT_EQ(
      summary(test::shim_settings([](auto& s) { s.set_as_default = true; })),
      "containerd: runtime \"nvidia\" (/usr/bin/gpuctk-runtime) added, default runtime set to \"nvidia\"; "
      "dry run: " +
          config() + " not written; warning: runtime \"nvidia\" of " + path("conf.d/99-nvidia.toml") +
          " wins (it runs /usr/bin/nvidia-container-runtime, not gpuctk's /usr/bin/gpuctk-runtime): "
          "containerd reads that import after this file; warning: default runtime \"runc\" of " +
          path("conf.d/99-nvidia.toml") + " wins: containerd reads that import after this file");
}

// An import that only sets another plugin's keys, or that repeats gpuctk's runtime, masks nothing.
TEST_F(EngineContainerdImports, ImportsThatLeaveGpuctksRuntime) {
  m_dir.write("config.toml", "version = 2\nimports = [\"conf.d/*.toml\"]\n");
  m_dir.write("conf.d/10-opt.toml",
              "version = 2\n[plugins.\"io.containerd.internal.v1.opt\"]\npath = \"/opt/x\"\n");
  m_dir.write("conf.d/20-same.toml",
              "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
              "BinaryName = \"/usr/bin/gpuctk-runtime\"\n");
  EXPECT_EQ(summary(), "containerd: runtime \"nvidia\" (/usr/bin/gpuctk-runtime) added; dry run: " +
                           config() + " not written");
}

// containerd 1.x: an import with the CRI plugin's table but no runtime "nvidia" drops gpuctk's runtime.
TEST_F(EngineContainerdImports, ALaterPluginTableDropsTheRuntime) {
  m_dir.write("config.toml", "version = 2\nimports = [\"conf.d/*.toml\"]\n");
  m_dir.write("conf.d/50-cgroup.toml",
              "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
              "SystemdCgroup = true\n");
  EXPECT_EQ(summary(),
            "containerd: runtime \"nvidia\" (/usr/bin/gpuctk-runtime) added; dry run: " + config() +
                " not written; warning: runtime \"nvidia\" is dropped by " + path("conf.d/50-cgroup.toml") +
                ", whose CRI plugin table replaces this file's whole in containerd 1.x: containerd "
                "reads that import after this file");
}

// `runtime configure --drop-in-config`: gpuctk's runtime in a drop-in that config.toml imports.
class EngineContainerdDropIn : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_dir.path().empty());
    m_dir.write("config.toml", k_config);
  }

  std::string path(std::string_view relative) const { return m_dir.path() + "/" + std::string(relative); }
  std::string config() const { return path("config.toml"); }
  std::string drop_in() const { return path("conf.d/99-gpuctk.toml"); }

  engine::RuntimeSettings settings() const {
    return test::shim_settings([this](auto& s) { s.drop_in = drop_in(); });
  }

  // The summary of configure (or --remove); "(error) <message>" when it fails.
  std::string run(bool remove) {
    auto result = remove ? engine::unconfigure(Engine::containerd, config(), settings(), false)
                         : engine::configure(Engine::containerd, config(), settings(), false);
    return result ? result->summary : "(error) " + result.error().message;
  }

  static bool exists(const std::string& file) {
    struct stat st {};
    return ::lstat(file.c_str(), &st) == 0;
  }

  static constexpr std::string_view k_config =
      "# the node's file\n"
      "version = 2\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
      "runtime_type = \"io.containerd.runc.v2\"\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
      "SystemdCgroup = true\n";

  test::TempDir m_dir;
};

// The drop-in copies config.toml's CRI table whole (containerd 1.x replaces it with the drop-in's), with
// gpuctk's runtime modelled on runc; config.toml imports it; a second run changes nothing; --remove gives
// config.toml's bytes back and deletes the drop-in and every state file.
TEST_F(EngineContainerdDropIn, WrittenImportedAndUndone) {
  EXPECT_EQ(run(false), "containerd: runtime \"nvidia\" (/usr/bin/gpuctk-runtime) added; " + drop_in() +
                            " written; restart containerd\ncontainerd: import " + drop_in() + " added; " +
                            config() + " written (the original kept as " + config() +
                            ".gpuctk-backup); restart containerd");
  EXPECT_EQ(read_file(drop_in()).value_or("(none)"),
            "version = 2\n"
            "\n"
            "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
            "runtime_type = \"io.containerd.runc.v2\"\n"
            "\n"
            "    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
            "    BinaryName = \"/usr/bin/gpuctk-runtime\"\n"
            "    SystemdCgroup = true\n"
            "\n"
            "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
            "runtime_type = \"io.containerd.runc.v2\"\n"
            "\n"
            "    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
            "    SystemdCgroup = true\n");
  EXPECT_TRUE(read_file(config()).value_or("(none)").starts_with("imports = [ \"" + drop_in() + "\" ]\n"));
  // Nothing but the drop-in in conf.d, where a glob import (conf.d/*) would read every file: the state
  // files are beside conf.d.
  EXPECT_TRUE(exists(path("99-gpuctk.toml.gpuctk-written")));
  EXPECT_TRUE(exists(path("99-gpuctk.toml.gpuctk-backup-absent")));
  EXPECT_FALSE(exists(drop_in() + ".gpuctk-written"));
  EXPECT_EQ(run(false), "containerd: " + drop_in() +
                            " unchanged: runtime \"nvidia\" (/usr/bin/gpuctk-runtime) is already configured");
  EXPECT_EQ(run(true), "containerd: " + drop_in() +
                           " deleted (it did not exist before); restart containerd\n" + "containerd: " +
                           config() + " restored from " + config() + ".gpuctk-backup; restart containerd");
  EXPECT_EQ(read_file(config()).value_or("(none)"), k_config);
  for (const std::string& left :
       {drop_in(), path("99-gpuctk.toml.gpuctk-backup-absent"), path("99-gpuctk.toml.gpuctk-written"),
        path("99-gpuctk.toml.gpuctk-replaced"), config() + ".gpuctk-backup", config() + ".gpuctk-written"}) {
    EXPECT_FALSE(exists(left)) << left;
  }
}

// An import of config.toml that matches the drop-in already imports it: config.toml is not touched, and
// --remove leaves it alone. NVIDIA's 99-nvidia.toml sorts after 99-gpuctk.toml: it wins, and the line says
// so.
TEST_F(EngineContainerdDropIn, AGlobImportsItBesideNvidias) {
  m_dir.write("config.toml", "imports = [\"conf.d/*.toml\"]\n" + std::string(k_config));
  m_dir.write("conf.d/99-nvidia.toml", k_nvidia_dropin);
  const std::string before = read_file(config()).value_or("");
  EXPECT_EQ(run(false), "containerd: runtime \"nvidia\" (/usr/bin/gpuctk-runtime) added; " + drop_in() +
                            " written; warning: runtime \"nvidia\" of " + path("conf.d/99-nvidia.toml") +
                            " wins (it runs /usr/bin/nvidia-container-runtime, not gpuctk's "
                            "/usr/bin/gpuctk-runtime): containerd reads that import after this file; restart "
                            "containerd");
  EXPECT_EQ(read_file(config()).value_or("(none)"), before);
  EXPECT_EQ(run(true), "containerd: " + drop_in() +
                           " deleted (it did not exist before); restart containerd\n" +
                           "containerd: " + config() + " unchanged: gpuctk did not change it");
  EXPECT_EQ(read_file(config()).value_or("(none)"), before);
  EXPECT_TRUE(exists(path("conf.d/99-nvidia.toml")));
}

// config.toml changed by someone else since: --remove takes only gpuctk's import out.
TEST_F(EngineContainerdDropIn, RemoveTakesOnlyItsImport) {
  ASSERT_EQ(run(false).substr(0, 11), "containerd:");
  m_dir.write("config.toml",
              "imports = [\"/etc/containerd/other.toml\", \"" + drop_in() + "\"]\nversion = 2\n");
  EXPECT_EQ(run(true), "containerd: " + drop_in() +
                           " deleted (it did not exist before); restart containerd\n" +
                           "containerd: import " + drop_in() + " removed; " + config() +
                           " written (it was changed since gpuctk wrote it; the original stays in " +
                           config() + ".gpuctk-backup); restart containerd");
  EXPECT_EQ(read_file(config()).value_or("(none)"),
            "imports = [ \"/etc/containerd/other.toml\" ]\nversion = 2\n");
}

// gpuctk's default name sorts after NVIDIA's under one glob import: its runtime is the one containerd keeps.
TEST(EngineContainerdDropInDefault, BesideTheConfigAfterNvidias) {
  EXPECT_EQ(engine::default_drop_in_path("/etc/containerd/config.toml"),
            "/etc/containerd/conf.d/99-zz-gpuctk.toml");
  EXPECT_EQ(engine::default_drop_in_path("/config.toml"), "/conf.d/99-zz-gpuctk.toml");
  EXPECT_LT(std::string_view("99-nvidia.toml"), engine::k_drop_in_name);
}

// By default, a schema-1 config.toml (no imports, as NVIDIA's toolkit says too) is edited itself; a drop-in
// asked for by name is written all the same.
TEST_F(EngineContainerdDropIn, ByDefaultASchema1ConfigIsEditedItself) {
  const std::string v1 = "[plugins.cri.containerd.runtimes.runc]\nruntime_type = \"io.containerd.runc.v2\"\n";
  m_dir.write("config.toml", v1);
  auto by_default = settings();
  by_default.drop_in_choice = engine::DropIn::by_default;
  auto result = engine::configure(Engine::containerd, config(), by_default, false);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->summary, "containerd: runtime \"nvidia\" (/usr/bin/gpuctk-runtime) added; " + config() +
                                 " written (the original kept as " + config() +
                                 ".gpuctk-backup); restart containerd");
  EXPECT_FALSE(exists(drop_in()));
  result = engine::unconfigure(Engine::containerd, config(), by_default, false);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(read_file(config()).value_or("(none)"), v1);
}

// An earlier gpuctk wrote its runtime into config.toml itself: the drop-in run takes it out of config.toml
// (its bytes come back), so that one definition is left; --remove then gives config.toml's original back.
TEST_F(EngineContainerdDropIn, AnEarlierGpuctksRuntimeMovesToTheDropIn) {
  auto in_place = settings();
  in_place.drop_in.clear();
  in_place.set_as_default = true;
  ASSERT_TRUE(engine::configure(Engine::containerd, config(), in_place, false));
  auto moved = settings();
  moved.set_as_default = true;
  auto result = engine::configure(Engine::containerd, config(), moved, false);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->summary, "containerd: runtime \"nvidia\" moves from " + config() + " to " + drop_in() +
                                 ": " + config() + " restored from " + config() +
                                 ".gpuctk-backup; restart containerd\n"
                                 "containerd: runtime \"nvidia\" (/usr/bin/gpuctk-runtime) added, default "
                                 "runtime set to \"nvidia\"; " +
                                 drop_in() + " written; restart containerd\ncontainerd: import " + drop_in() +
                                 " added; " + config() + " written (the original kept as " + config() +
                                 ".gpuctk-backup); restart containerd");
  const std::string text = read_file(config()).value_or("(none)");
  EXPECT_EQ(text.find("nvidia"), std::string::npos) << text;
  EXPECT_EQ(text.find("default_runtime_name"), std::string::npos) << text;
  EXPECT_NE(read_file(drop_in()).value_or("").find("default_runtime_name = \"nvidia\""), std::string::npos);
  result = engine::unconfigure(Engine::containerd, config(), settings(), false);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(read_file(config()).value_or("(none)"), k_config);
  EXPECT_FALSE(exists(drop_in()));
}

// --remove with the drop-in also takes an earlier gpuctk's runtime out of a config.toml edited since (key by
// key: the administrator's key stays).
TEST_F(EngineContainerdDropIn, RemoveTakesAnEarlierRuntimeOutOfAnEditedConfig) {
  auto in_place = settings();
  in_place.drop_in.clear();
  ASSERT_TRUE(engine::configure(Engine::containerd, config(), in_place, false));
  m_dir.write("config.toml", "oom_score = -999\n" + read_file(config()).value_or(""));
  auto result = engine::unconfigure(Engine::containerd, config(), settings(), false);
  ASSERT_TRUE(result) << result.error().message;
  const std::string text = read_file(config()).value_or("(none)");
  EXPECT_EQ(text.find("nvidia"), std::string::npos) << text;
  EXPECT_NE(text.find("oom_score = -999"), std::string::npos) << text;
  EXPECT_NE(text.find("SystemdCgroup = true"), std::string::npos) << text;
}

// --config-source command: a new drop-in's CRI table is containerd's own dump, not config.toml's; the
// program gets `--config <config.toml> config dump`.
TEST_F(EngineContainerdDropIn, ConfigSourceCommandSeedsFromTheDump) {
  const std::string dump =
      "version = 2\n"
      "[plugins.\"io.containerd.grpc.v1.cri\"]\n"
      "sandbox_image = \"from-the-dump\"\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
      "runtime_type = \"io.containerd.runc.v2\"\n";
  m_dir.write("dump.toml", dump);
  m_dir.write("containerd", "#!/bin/sh\n[ \"$*\" = \"--config " + config() +
                                " config dump\" ] || exit 3\nexec cat " + path("dump.toml") + "\n");
  ASSERT_EQ(::chmod(path("containerd").c_str(), 0755), 0);
  auto command = settings();
  command.config_source = engine::ConfigSource::command;
  command.executable_path = path("containerd");
  auto result = engine::configure(Engine::containerd, config(), command, false);
  ASSERT_TRUE(result) << result.error().message;
  const std::string text = read_file(drop_in()).value_or("(none)");
  EXPECT_NE(text.find("sandbox_image = \"from-the-dump\""), std::string::npos) << text;
  EXPECT_EQ(text.find("SystemdCgroup"), std::string::npos) << text;  // config.toml's, not in the dump
  EXPECT_NE(text.find("BinaryName = \"/usr/bin/gpuctk-runtime\""), std::string::npos) << text;
}

// A node with no config.toml yet (containerd runs on its defaults): config.toml becomes `imports` and the
// schema asked for, the drop-in the runtime alone; --remove deletes both, and every state file.
TEST_F(EngineContainerdDropIn, NoConfigYetGetsImportsAndVersionAlone) {
  ASSERT_EQ(::unlink(config().c_str()), 0);
  auto fresh = settings();
  fresh.containerd_version = 3;
  fresh.drop_in_choice = engine::DropIn::by_default;
  auto result = engine::configure(Engine::containerd, config(), fresh, false);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(read_file(config()).value_or("(none)"), "imports = [ \"" + drop_in() + "\" ]\nversion = 3\n");
  EXPECT_EQ(read_file(drop_in()).value_or("(none)"),
            "version = 3\n"
            "\n"
            "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nvidia]\n"
            "runtime_type = \"io.containerd.runc.v2\"\n"
            "\n"
            "    [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nvidia.options]\n"
            "    BinaryName = \"/usr/bin/gpuctk-runtime\"\n");
  result = engine::unconfigure(Engine::containerd, config(), fresh, false);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->summary, "containerd: " + drop_in() +
                                 " deleted (it did not exist before); restart containerd\ncontainerd: " +
                                 config() + " deleted (it did not exist before); restart containerd");
  EXPECT_FALSE(exists(config()));
  EXPECT_FALSE(exists(drop_in()));
  EXPECT_FALSE(exists(config() + ".gpuctk-backup-absent"));
}

TEST_F(EngineContainerdDropIn, ConfigSourceCommandNeedsADropIn) {
  auto command = settings();
  command.drop_in.clear();
  command.config_source = engine::ConfigSource::command;
  const auto result = engine::configure(Engine::containerd, config(), command, true);
  EXPECT_EQ(result ? "(no error)" : result.error().message,
            "config source \"command\": containerd's `config dump` is every file merged, for a drop-in only "
            "(gpuctk never writes it into " +
                config() + ")");
}

TEST_F(EngineContainerdDropIn, OnlyForContainerdAndAbsolute) {
  auto result = engine::configure(Engine::crio, config(), settings(), true);
  EXPECT_EQ(result ? "(no error)" : result.error().message, "a drop-in file is for containerd only");
  auto relative = test::shim_settings([](auto& s) { s.drop_in = "conf.d/99-gpuctk.toml"; });
  result = engine::configure(Engine::containerd, config(), relative, true);
  EXPECT_EQ(result ? "(no error)" : result.error().message,
            "drop-in \"conf.d/99-gpuctk.toml\": not a clean absolute path");
}

}  // namespace
}  // namespace gpuctk
