// CRI-O's drop-in (src/engine/crio.cpp): the runtime handler, the default runtime, CDI (nothing to write),
// another drop-in kept, removal down to an empty file; what the handler inherits from CRI-O's other
// files, read in CRI-O's order (src/engine/crio_sources.cpp), and the odd files there.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "engine/configure.hpp"
#include "engine/data.hpp"
#include "engine/toml_doc.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk {
namespace {

using engine::Engine;

constexpr std::string_view k_header =
    "# The CRI-O runtime handler of gpuctk's runtime shim, written by `gpuctk runtime configure --runtime "
    "crio`;\n# `gpuctk runtime configure --runtime crio --remove` undoes it.\n";

std::string configured_ok(const std::optional<std::string>& old,
                          const engine::RuntimeSettings& settings = test::shim_settings()) {
  auto text = engine::configured_text(Engine::crio, old, settings);
  EXPECT_TRUE(text) << text.error().message;
  return text.value_or("");
}

std::string removed_ok(const std::string& old) {
  auto text = engine::removed_text(Engine::crio, old, test::shim_settings());
  EXPECT_TRUE(text) << text.error().message;
  return text.value_or("(error)");
}

toml::table table_of(const std::string& text) {
  auto parsed = engine::detail::parse_toml(text);
  EXPECT_TRUE(parsed) << parsed.error().message;
  return parsed ? std::move(*parsed) : toml::table{};
}

TEST(EngineCrio, NewDropIn) {
  EXPECT_EQ(configured_ok(std::nullopt), std::string(k_header) +
                                             "[crio.runtime.runtimes.nvidia]\n"
                                             "runtime_path = \"/usr/bin/gpuctk-runtime\"\n"
                                             "runtime_root = \"/run/gpuctk-runtime\"\n"
                                             "runtime_type = \"oci\"\n");
  EXPECT_EQ(configured_ok(""), configured_ok(std::nullopt));
}

TEST(EngineCrio, SetAsDefaultAndCdiWhichNeedsNothing) {
  const std::string expected = std::string(k_header) +
                               "[crio.runtime]\n"
                               "default_runtime = \"nvidia\"\n"
                               "\n"
                               "    [crio.runtime.runtimes.nvidia]\n"
                               "    runtime_path = \"/usr/bin/gpuctk-runtime\"\n"
                               "    runtime_root = \"/run/gpuctk-runtime\"\n"
                               "    runtime_type = \"oci\"\n";
  EXPECT_EQ(configured_ok(std::nullopt, test::shim_settings([](auto& s) { s.set_as_default = true; })),
            expected);
  EXPECT_EQ(configured_ok(std::nullopt, test::shim_settings([](auto& s) {
                            s.set_as_default = true;
                            s.enable_cdi = true;
                          })),
            expected);
}

TEST(EngineCrio, AlreadyConfiguredIsUnchanged) {
  const std::string once = configured_ok(std::nullopt);
  EXPECT_EQ(configured_ok(once), once);
  const std::string hand_written =
      "# mine\n[crio.runtime.runtimes.nvidia]\nruntime_path = \"/usr/bin/gpuctk-runtime\"\nruntime_type = "
      "\"oci\"\n"
      "runtime_root = \"/run/gpuctk-runtime\"\n";
  EXPECT_EQ(configured_ok(hand_written), hand_written);
}

TEST(EngineCrio, AnotherDropInKeepsItsKeysAndGetsNoHeader) {
  const std::string old = test::engine_data("crio-other.conf");
  const std::string text = configured_ok(old, test::shim_settings([](auto& s) { s.set_as_default = true; }));
  EXPECT_FALSE(text.starts_with("#")) << text;
  toml::table after = table_of(text);
  EXPECT_EQ(after["crio"]["runtime"]["default_runtime"].value<std::string>(), "nvidia");
  EXPECT_EQ(after["crio"]["runtime"]["runtimes"]["nvidia"]["runtime_path"].value<std::string>(),
            test::k_shim);
  toml::table before = table_of(old);
  after["crio"]["runtime"]["runtimes"].as_table()->erase("nvidia");
  after["crio"]["runtime"].as_table()->insert_or_assign("default_runtime", "crun");
  EXPECT_EQ(after, before);
}

TEST(EngineCrio, AnotherBinaryIsReplaced) {
  const std::string old =
      "[crio.runtime.runtimes.nvidia]\nruntime_path = \"/usr/bin/nvidia-container-runtime\"\nruntime_type = "
      "\"oci\"\nmonitor_path = \"/usr/libexec/crio/conmon\"\n";
  toml::table after = table_of(configured_ok(old));
  EXPECT_EQ(after["crio"]["runtime"]["runtimes"]["nvidia"]["runtime_path"].value<std::string>(),
            test::k_shim);
  EXPECT_EQ(after["crio"]["runtime"]["runtimes"]["nvidia"]["monitor_path"].value<std::string>(),
            "/usr/libexec/crio/conmon");
}

TEST(EngineCrio, WrongTypesAndSyntax) {
  auto text =
      engine::configured_text(Engine::crio, "[crio.runtime]\nruntimes = \"runc\"\n", test::shim_settings());
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().message, "crio.runtime.runtimes is a string (want a table) at line 2, column 12");
  text = engine::configured_text(Engine::crio, "[crio.runtime.runtimes.nvidia]\nruntime_path = 7\n",
                                 test::shim_settings());
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().message,
            "crio.runtime.runtimes.nvidia.runtime_path is an integer (want a string) at line 2, column 16");
  text = engine::configured_text(Engine::crio, "[crio.runtime\n", test::shim_settings());
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().message,
            "Error while parsing table header: expected ']', saw '\\n' at line 1, column 14");
}

TEST(EngineCrio, RemoveLeavesNothingOfItsOwnDropIn) {
  EXPECT_EQ(
      removed_ok(configured_ok(std::nullopt, test::shim_settings([](auto& s) { s.set_as_default = true; }))),
      "");
}

TEST(EngineCrio, RemoveFromAnotherDropInKeepsTheRest) {
  const std::string old = test::engine_data("crio-other.conf");
  const std::string with = configured_ok(old);
  EXPECT_EQ(table_of(removed_ok(with)), table_of(old));
  EXPECT_EQ(removed_ok(old), old);  // nothing of gpuctk's: the same bytes
  // default_runtime names gpuctk's runtime: it goes (CRI-O falls back to its built-in default).
  const std::string as_default =
      configured_ok(old, test::shim_settings([](auto& s) { s.set_as_default = true; }));
  toml::table expected = table_of(old);
  expected["crio"]["runtime"].as_table()->erase("default_runtime");
  EXPECT_EQ(table_of(removed_ok(as_default)), expected);
}

// CRI-O's files on a host: crio.conf with runc (the packaged default), a drop-in that makes crun the
// default; gpuctk's drop-in is written in crio.conf.d beside them.
class EngineCrioFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_dir.path().empty());
    m_dir.write("crio.conf",
                "[crio.runtime]\n"
                "default_runtime = \"runc\"\n"
                "\n"
                "[crio.runtime.runtimes.runc]\n"
                "runtime_path = \"/usr/libexec/crio/runc\"\n"
                "runtime_type = \"oci\"\n"
                "runtime_root = \"/run/runc\"\n"
                "monitor_path = \"/usr/libexec/crio/conmon\"\n"
                "monitor_cgroup = \"system.slice\"\n"
                "monitor_env = [\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"]\n"
                "allowed_annotations = [\"io.containers.trace-syscall\"]\n"
                "platform_runtime_paths = { \"linux/arm64\" = \"/usr/libexec/crio/runc-arm64\" }\n");
    m_dir.write("crio.conf.d/10-crun.conf",
                "[crio.runtime]\n"
                "default_runtime = \"crun\"\n"
                "\n"
                "[crio.runtime.runtimes.crun]\n"
                "runtime_path = \"/usr/bin/crun\"\n"
                "runtime_root = \"/run/crun\"\n"
                "monitor_path = \"/usr/libexec/crio/conmon\"\n"
                "allowed_annotations = [\"io.kubernetes.cri-o.Devices\"]\n"
                "container_min_memory = \"500KiB\"\n");
  }

  std::string path(std::string_view relative) const { return m_dir.path() + "/" + std::string(relative); }
  std::string dropin() const { return path("crio.conf.d/99-gpuctk.conf"); }

  // The drop-in gpuctk writes with `settings`; "(error) <message>" when configure fails.
  std::string configured(const engine::RuntimeSettings& settings = test::shim_settings()) {
    auto result = engine::configure(Engine::crio, dropin(), settings, false);
    if (!result) {
      return "(error) " + result.error().message;
    }
    return read_file(dropin()).value_or("(no file)");
  }

  std::string error_of(const std::string& target) {
    auto result = engine::configure(Engine::crio, target, test::shim_settings(), true);
    return result ? std::string("(no error)") : result.error().message;
  }

  test::TempDir m_dir;
};

// The default runtime is crun (10-crun.conf, read after crio.conf): the handler takes crun's keys.
TEST_F(EngineCrioFiles, TheHandlerInheritsTheDefaultRuntimesKeys) {
  EXPECT_EQ(configured(), std::string(k_header) +
                              "[crio.runtime.runtimes.nvidia]\n"
                              "allowed_annotations = [ \"io.kubernetes.cri-o.Devices\" ]\n"
                              "container_min_memory = \"500KiB\"\n"
                              "monitor_path = \"/usr/libexec/crio/conmon\"\n"
                              "runtime_path = \"/usr/bin/gpuctk-runtime\"\n"
                              "runtime_root = \"/run/gpuctk-runtime\"\n"
                              "runtime_type = \"oci\"\n");
}

// Every key of the default runtime's handler is inherited, those gpuctk knows nothing of too (a key a later
// CRI-O adds): only runtime_path, runtime_type and runtime_root are gpuctk's.
TEST_F(EngineCrioFiles, TheHandlerInheritsKeysGpuctkDoesNotKnow) {
  m_dir.write("crio.conf.d/10-crun.conf",
              "[crio.runtime]\n"
              "default_runtime = \"crun\"\n"
              "[crio.runtime.runtimes.crun]\n"
              "runtime_path = \"/usr/bin/crun\"\n"
              "runtime_root = \"/run/crun\"\n"
              "monitor_exec_cgroup = \"container\"\n"
              "runtime_config_path = \"/etc/crun/vm.toml\"\n"
              "a_future_key = { nested = [ 1, 2 ] }\n");
  EXPECT_EQ(configured(), std::string(k_header) +
                              "[crio.runtime.runtimes.nvidia]\n"
                              "a_future_key = { nested = [ 1, 2 ] }\n"
                              "monitor_exec_cgroup = \"container\"\n"
                              "runtime_config_path = \"/etc/crun/vm.toml\"\n"
                              "runtime_path = \"/usr/bin/gpuctk-runtime\"\n"
                              "runtime_root = \"/run/gpuctk-runtime\"\n"
                              "runtime_type = \"oci\"\n");
}

// Without the drop-in, runc (crio.conf's default) is the model; platform_runtime_paths would bypass the
// shim and is not taken.
TEST_F(EngineCrioFiles, RuncOfCrioConfWithoutItsPlatformPaths) {
  ASSERT_EQ(::unlink(path("crio.conf.d/10-crun.conf").c_str()), 0);
  EXPECT_EQ(configured(),
            std::string(k_header) +
                "[crio.runtime.runtimes.nvidia]\n"
                "allowed_annotations = [ \"io.containers.trace-syscall\" ]\n"
                "monitor_cgroup = \"system.slice\"\n"
                "monitor_env = [ \"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\" ]\n"
                "monitor_path = \"/usr/libexec/crio/conmon\"\n"
                "runtime_path = \"/usr/bin/gpuctk-runtime\"\n"
                "runtime_root = \"/run/gpuctk-runtime\"\n"
                "runtime_type = \"oci\"\n");
}

// A later drop-in replaces crun whole (CRI-O decodes each handler afresh): its crun is the model. A drop-in
// read later that makes another runtime the default, or defines gpuctk's handler, wins: said in the summary.
TEST_F(EngineCrioFiles, LaterFilesCountAndWhatTheyOverrideIsSaid) {
  m_dir.write("crio.conf.d/zz-late.conf",
              "[crio.runtime]\n"
              "default_runtime = \"crun\"\n"
              "[crio.runtime.runtimes.crun]\n"
              "runtime_path = \"/usr/local/bin/crun\"\n"
              "monitor_env = [\"LOG=1\"]\n");
  const auto settings = test::shim_settings([](auto& s) { s.set_as_default = true; });
  auto result = engine::configure(Engine::crio, dropin(), settings, false);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(read_file(dropin()).value_or(""), std::string(k_header) +
                                                  "[crio.runtime]\n"
                                                  "default_runtime = \"nvidia\"\n"
                                                  "\n"
                                                  "    [crio.runtime.runtimes.nvidia]\n"
                                                  "    monitor_env = [ \"LOG=1\" ]\n"
                                                  "    runtime_path = \"/usr/bin/gpuctk-runtime\"\n"
                                                  "    runtime_root = \"/run/gpuctk-runtime\"\n"
                                                  "    runtime_type = \"oci\"\n");
  EXPECT_EQ(result->summary,
            "crio: runtime \"nvidia\" (/usr/bin/gpuctk-runtime) added, default runtime set to \"nvidia\"; " +
                dropin() + " written; default_runtime \"crun\" of " + path("crio.conf.d/zz-late.conf") +
                " wins: CRI-O reads that file later; restart crio");
}

// gpuctk's drop-in does not feed itself: its own default_runtime and handler are no model, the other
// files' default is; and an entry an earlier gpuctk wrote with three keys gets the keys it lacks.
TEST_F(EngineCrioFiles, OwnDropInIsNoSourceAndAnOldEntryIsCompleted) {
  m_dir.write("crio.conf.d/99-gpuctk.conf", std::string(k_header) +
                                                "[crio.runtime]\n"
                                                "default_runtime = \"nvidia\"\n"
                                                "[crio.runtime.runtimes.nvidia]\n"
                                                "runtime_path = \"/usr/bin/gpuctk-runtime\"\n"
                                                "runtime_root = \"/run/gpuctk-runtime\"\n"
                                                "runtime_type = \"oci\"\n");
  EXPECT_EQ(configured(), std::string(k_header) +
                              "[crio.runtime]\n"
                              "default_runtime = \"nvidia\"\n"
                              "\n"
                              "    [crio.runtime.runtimes.nvidia]\n"
                              "    allowed_annotations = [ \"io.kubernetes.cri-o.Devices\" ]\n"
                              "    container_min_memory = \"500KiB\"\n"
                              "    monitor_path = \"/usr/libexec/crio/conmon\"\n"
                              "    runtime_path = \"/usr/bin/gpuctk-runtime\"\n"
                              "    runtime_root = \"/run/gpuctk-runtime\"\n"
                              "    runtime_type = \"oci\"\n");
  const std::string once = read_file(dropin()).value_or("");
  auto again = engine::configure(Engine::crio, dropin(), test::shim_settings(), false);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->changed);
  EXPECT_EQ(read_file(dropin()).value_or(""), once);
}

// A handler of gpuctk's name in crio.conf (NVIDIA's toolkit put it there) is what gpuctk's stands in for:
// its keys are kept in the drop-in, which CRI-O reads instead; --remove brings crio.conf's back.
TEST_F(EngineCrioFiles, AHandlerOfTheSameNameReadBeforeIsTakenOver) {
  m_dir.write("crio.conf.d/50-nvidia.conf",
              "[crio.runtime.runtimes.nvidia]\n"
              "runtime_path = \"/usr/bin/nvidia-container-runtime\"\n"
              "runtime_type = \"oci\"\n"
              "monitor_path = \"/usr/libexec/crio/conmon\"\n"
              "privileged_without_host_devices = true\n");
  EXPECT_EQ(configured(), std::string(k_header) +
                              "[crio.runtime.runtimes.nvidia]\n"
                              "monitor_path = \"/usr/libexec/crio/conmon\"\n"
                              "privileged_without_host_devices = true\n"
                              "runtime_path = \"/usr/bin/gpuctk-runtime\"\n"
                              "runtime_root = \"/run/gpuctk-runtime\"\n"
                              "runtime_type = \"oci\"\n");
}

// A vm runtime (kata) as the default is no model: runc is.
TEST_F(EngineCrioFiles, OnlyAnOciHandlerIsAModel) {
  m_dir.write("crio.conf.d/10-crun.conf",
              "[crio.runtime]\n"
              "default_runtime = \"kata\"\n"
              "[crio.runtime.runtimes.kata]\n"
              "runtime_path = \"/usr/bin/containerd-shim-kata-v2\"\n"
              "runtime_type = \"vm\"\n"
              "runtime_config_path = \"/etc/kata/configuration.toml\"\n");
  const std::string text = configured();
  EXPECT_NE(text.find("monitor_cgroup = \"system.slice\""), std::string::npos) << text;
  EXPECT_EQ(text.find("runtime_config_path"), std::string::npos) << text;
}

// Odd files in CRI-O's configuration: one error naming the file, no hang, nothing written.
TEST_F(EngineCrioFiles, SourceErrorsNameTheFileAndTheLine) {
  m_dir.write("crio.conf.d/50-bad.conf", "[crio.runtime\n");
  EXPECT_EQ(error_of(dropin()), path("crio.conf.d/50-bad.conf") +
                                    ": Error while parsing table header: expected ']', saw '\\n' at line 1, "
                                    "column 14");
  m_dir.write("crio.conf.d/50-bad.conf", "[crio.runtime]\nruntimes = 1\n");
  EXPECT_EQ(error_of(dropin()), path("crio.conf.d/50-bad.conf") +
                                    ": crio.runtime.runtimes is an integer (want a table) at line 2, "
                                    "column 12");
  m_dir.write("crio.conf.d/50-bad.conf", "[crio.runtime]\ndefault_runtime = [\"crun\"]\n");
  EXPECT_EQ(error_of(dropin()), path("crio.conf.d/50-bad.conf") +
                                    ": crio.runtime.default_runtime is an array (want a string) at line 2, "
                                    "column 19");
  m_dir.write("crio.conf.d/50-bad.conf", "[crio.runtime.runtimes]\nrunc = \"x\"\n");
  EXPECT_EQ(error_of(dropin()),
            path("crio.conf.d/50-bad.conf") +
                ": crio.runtime.runtimes.runc is a string (want a table) at line 2, column 8");
  EXPECT_NE(::access(dropin().c_str(), F_OK), 0);  // dry runs: nothing written
}

TEST_F(EngineCrioFiles, HugeFifoDanglingAndLoopingSourcesAreErrors) {
  const std::string big = m_dir.write("crio.conf.d/50-big.conf", "");
  ASSERT_EQ(::truncate(big.c_str(), off_t{100} << 20), 0);  // 100 MiB, sparse
  EXPECT_EQ(error_of(dropin()), "read " + big + ": larger than 16777216 bytes");
  ASSERT_EQ(::unlink(big.c_str()), 0);

  const std::string fifo = path("crio.conf.d/50-fifo.conf");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_EQ(error_of(dropin()), "read " + fifo + ": not a regular file");
  ASSERT_EQ(::unlink(fifo.c_str()), 0);

  const std::string dangling = path("crio.conf.d/50-dangling.conf");
  ASSERT_EQ(::symlink("/nonexistent/gpuctk.conf", dangling.c_str()), 0);
  EXPECT_EQ(error_of(dropin()), "read " + dangling + ": No such file or directory");
  ASSERT_EQ(::unlink(dangling.c_str()), 0);

  const std::string loop = path("crio.conf.d/50-loop.conf");
  ASSERT_EQ(::symlink("50-loop.conf", loop.c_str()), 0);
  EXPECT_EQ(error_of(dropin()), "read " + loop + ": Too many levels of symbolic links");
  ASSERT_EQ(::unlink(loop.c_str()), 0);

  // The drop-in directory itself a link to itself: gpuctk's own file cannot be read either.
  ASSERT_EQ(::rename(path("crio.conf.d").c_str(), path("elsewhere").c_str()), 0);
  ASSERT_EQ(::symlink("crio.conf.d", path("crio.conf.d").c_str()), 0);
  EXPECT_EQ(error_of(dropin()), "read " + dropin() + ": Too many levels of symbolic links");
  // With crio.conf as the written file, the looping crio.conf.d is its drop-in directory.
  EXPECT_EQ(error_of(path("crio.conf")),
            "read " + path("crio.conf.d") + ": Too many levels of symbolic links");
}

TEST_F(EngineCrioFiles, TooManyOrTooDeepSourcesAreErrors) {
  std::string deep = "crio.conf.d";
  for (int i = 0; i < 9; ++i) {
    deep += "/d";
  }
  m_dir.write(deep + "/x.conf", "");
  EXPECT_EQ(error_of(dropin()),
            "read " + path("crio.conf.d/d/d/d/d/d/d/d/d/d") + ": directories nested deeper than 8 levels");
  std::filesystem::remove_all(path("crio.conf.d/d"));
  for (int i = 0; i < 1024; ++i) {
    m_dir.write("crio.conf.d/many/" + std::to_string(10000 + i) + ".conf", "");
  }
  EXPECT_EQ(error_of(dropin()), "read " + path("crio.conf.d/many/11022.conf") +
                                    ": more than 1024 files in CRI-O's configuration");
}

TEST_F(EngineCrioFiles, UnreadableSourceIsAnError) {
  const std::string secret = m_dir.write("crio.conf.d/50-secret.conf", "[crio.runtime]\n");
  ASSERT_EQ(::chmod(secret.c_str(), 0), 0);
  const std::string expected = "read " + secret + ": Permission denied";
  if (::geteuid() != 0) {
    EXPECT_EQ(error_of(dropin()), expected);
    return;
  }
  // Root reads files whatever their mode: the configure runs in a child that has dropped to nobody (the
  // directories on the way let nobody through).
  ASSERT_EQ(::chmod(m_dir.path().c_str(), 0755), 0);
  EXPECT_EXIT(
      {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
          std::_Exit(2);
        }
        std::_Exit(error_of(dropin()) == expected ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// CRI-O's order: crio.conf, then crio.conf.d by name, a subdirectory where its name sorts, links to files
// followed; gpuctk's drop-in splits them into read before and after it, and is not read itself.
TEST_F(EngineCrioFiles, SourcesInCriosOrder) {
  m_dir.write("crio.conf.d/99-gpuctk.conf", "[crio.runtime]\n");
  m_dir.write("crio.conf.d/50-sub/b.conf", "");
  m_dir.write("crio.conf.d/50-sub/a.conf", "");
  m_dir.write("crio.conf.d/99-zz.conf", "");
  m_dir.write("real.conf", "");
  ASSERT_EQ(::symlink("../real.conf", path("crio.conf.d/60-link.conf").c_str()), 0);
  auto sources = engine::read_sources(Engine::crio, dropin());
  ASSERT_TRUE(sources) << sources.error().message;
  const auto paths = [](const std::vector<engine::SourceFile>& files) {
    std::vector<std::string> out;
    for (const auto& file : files) {
      out.push_back(file.path);
    }
    return out;
  };
  EXPECT_EQ(paths(sources->before),
            (std::vector<std::string>{path("crio.conf"), path("crio.conf.d/10-crun.conf"),
                                      path("crio.conf.d/50-sub/a.conf"), path("crio.conf.d/50-sub/b.conf"),
                                      path("crio.conf.d/60-link.conf")}));
  EXPECT_EQ(paths(sources->after), (std::vector<std::string>{path("crio.conf.d/99-zz.conf")}));
  // crio.conf written itself: every drop-in is read after it.
  sources = engine::read_sources(Engine::crio, path("crio.conf"));
  ASSERT_TRUE(sources) << sources.error().message;
  EXPECT_TRUE(sources->before.empty());
  EXPECT_EQ(sources->after.size(), 6U);
  // Other engines read nothing else.
  sources = engine::read_sources(Engine::containerd, path("config.toml"));
  ASSERT_TRUE(sources);
  EXPECT_TRUE(sources->before.empty() && sources->after.empty());
}

// The pure form: the sources given as text.
TEST(EngineCrio, InheritsFromTheSourcesGiven) {
  const engine::Sources sources{
      .before = {{.path = "/etc/crio/crio.conf",
                  .text = "[crio.runtime.runtimes.runc]\nmonitor_path = \"/usr/libexec/crio/conmon\"\n"}},
      .after = {}};
  EXPECT_EQ(engine::configured_text(Engine::crio, std::nullopt, test::shim_settings(), sources),
            std::string(k_header) +
                "[crio.runtime.runtimes.nvidia]\n"
                "monitor_path = \"/usr/libexec/crio/conmon\"\n"
                "runtime_path = \"/usr/bin/gpuctk-runtime\"\n"
                "runtime_root = \"/run/gpuctk-runtime\"\n"
                "runtime_type = \"oci\"\n");
  const engine::Sources bad{.before = {{.path = "/etc/crio/crio.conf", .text = "x"}}, .after = {}};
  auto text = engine::configured_text(Engine::crio, std::nullopt, test::shim_settings(), bad);
  ASSERT_FALSE(text);
  EXPECT_EQ(
      text.error().message,
      "/etc/crio/crio.conf: Error while parsing key-value pair: encountered end-of-file at line 1, column 2");
}

// --remove after someone else edited gpuctk's drop-in: the handler goes, so crio.conf's and the other
// drop-ins' settings hold again (nothing of theirs was copied anywhere else).
TEST_F(EngineCrioFiles, RemoveAfterAnEditDeletesTheInheritedHandler) {
  ASSERT_NE(configured().find("container_min_memory"), std::string::npos);
  m_dir.write("crio.conf.d/99-gpuctk.conf", read_file(dropin()).value_or("") + "# touched\n");
  auto removed = engine::unconfigure(Engine::crio, dropin(), test::shim_settings(), false);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_NE(::access(dropin().c_str(), F_OK), 0);
}

}  // namespace
}  // namespace gpuctk
