#include "config/config.hpp"

#include <gtest/gtest.h>

#include "util/file.hpp"

namespace gpuctk::config {
namespace {

// etc/config.yaml holds every default; the build writes the installed one with the install prefix's
// binary as hook-path (packaging/CMakeLists.txt), the path compiled in as the default.
void expect_default_config(const std::string& path, const std::string& hook_path) {
  auto config = parse_config(read_file(path).value(), path);
  ASSERT_TRUE(config) << config.error().message;
  const Config defaults;
  EXPECT_EQ(config->spec_dirs, defaults.spec_dirs);
  EXPECT_EQ(config->request.default_kind, defaults.request.default_kind);
  EXPECT_EQ(config->request.annotation_prefixes, defaults.request.annotation_prefixes);
  EXPECT_EQ(config->request.accept_envvar_when_unprivileged,
            defaults.request.accept_envvar_when_unprivileged);
  EXPECT_EQ(config->request.accept_volume_mounts, defaults.request.accept_volume_mounts);
  EXPECT_EQ(config->request.supported_capabilities, defaults.request.supported_capabilities);
  EXPECT_EQ(config->request.disable_require, defaults.request.disable_require);
  EXPECT_EQ(config->driver_root, defaults.driver_root);
  EXPECT_EQ(config->runtime_mode, defaults.runtime_mode);
  EXPECT_EQ(config->dev_root, defaults.dev_root);
  EXPECT_EQ(config->runtimes, defaults.runtimes);
  EXPECT_EQ(config->mps_pipe_roots, defaults.mps_pipe_roots);
  EXPECT_EQ(config->mps_log_roots, defaults.mps_log_roots);
  EXPECT_EQ(config->log_file, defaults.log_file);
  EXPECT_EQ(config->log_level, defaults.log_level);
  EXPECT_EQ(config->hook_path, hook_path);
}

TEST(HookConfig, ShippedConfigFileIsExactlyTheDefaults) {
  expect_default_config(std::string(GPUCTK_SOURCE_DIR) + "/etc/config.yaml", "/usr/bin/gpuctk");
}

TEST(HookConfig, InstalledConfigFileIsExactlyTheDefaults) {
  expect_default_config(GPUCTK_INSTALLED_CONFIG, k_default_hook_path);
}

TEST(HookConfig, EveryKeyIsRead) {
  auto config = parse_config(R"(
spec-dirs: [/a, /b]
default-kind: example.com/gpu
annotation-prefixes: [x.io/]
accept-envvar-when-unprivileged: false
accept-volume-mounts: true
supported-capabilities: [utility, compute]
disable-require: true
driver-root: /run/nvidia/driver
dev-root: /host
runtimes: [/usr/bin/crun]
log-file: /var/log/gpuctk-test.log
log-level: debug
mps-pipe-roots: [/run/mps/pipes, /var/run/mps]
mps-log-roots: []
)",
                             "c.yaml");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->spec_dirs, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(config->request.default_kind, "example.com/gpu");
  EXPECT_FALSE(config->request.accept_envvar_when_unprivileged);
  EXPECT_TRUE(config->request.accept_volume_mounts);
  EXPECT_TRUE(config->request.supported_capabilities.has(discover::Capability::compute));
  EXPECT_FALSE(config->request.supported_capabilities.has(discover::Capability::video));
  EXPECT_TRUE(config->request.disable_require);
  EXPECT_EQ(config->driver_root, "/run/nvidia/driver");
  EXPECT_EQ(config->runtimes, (std::vector<std::string>{"/usr/bin/crun"}));
  EXPECT_EQ(config->log_file, std::optional<std::string>("/var/log/gpuctk-test.log"));
  EXPECT_EQ(config->log_level, LogLevel::debug);
  EXPECT_EQ(config->mps_pipe_roots, (std::vector<std::string>{"/run/mps/pipes", "/var/run/mps"}));
  EXPECT_TRUE(config->mps_log_roots.empty());
}

// The MPS roots bound what a container may have mounted from the host: no /tmp (anyone can create
// /tmp/nvidia-mps first), never "/", and clean so that "below a root" is a prefix test.
TEST(HookConfig, MpsRoots) {
  const Config defaults;
  EXPECT_EQ(defaults.mps_pipe_roots, std::vector<std::string>{"/run/nvidia/mps"});
  EXPECT_EQ(defaults.mps_log_roots, std::vector<std::string>{"/run/nvidia/mps"});
  const auto error = [](std::string_view text) {
    auto config = parse_config(text, "c.yaml");
    return config ? std::string("(no error)") : config.error().message;
  };
  EXPECT_EQ(error("mps-pipe-roots: [/]"),
            "c.yaml:1: mps-pipe-roots: \"/\" is not a clean absolute directory other than /");
  EXPECT_EQ(error("mps-log-roots: [/run/nvidia/../mps]"),
            "c.yaml:1: mps-log-roots: \"/run/nvidia/../mps\" is not a clean absolute directory other than /");
  EXPECT_EQ(error("mps-pipe-roots: [/run/nvidia/mps/]"),
            "c.yaml:1: mps-pipe-roots: \"/run/nvidia/mps/\" is not a clean absolute directory other than /");
  EXPECT_EQ(error("mps-log-roots: [run/mps]"),
            "c.yaml:1: mps-log-roots: \"run/mps\" is not a clean absolute directory other than /");
}

// One line naming the file, the line and the key: what a GPU container fails with.
TEST(HookConfig, InvalidFilesNameTheFileLineAndKey) {
  const auto error = [](std::string_view text) { return parse_config(text, "c.yaml").error().message; };
  EXPECT_EQ(error("accept-volume-mounts: yes"),
            "c.yaml:1: accept-volume-mounts: expected true or false, got \"yes\"");
  EXPECT_EQ(error("spec-dirs: [/a]\n\ndriver-root: relative"),
            "c.yaml:3: driver-root: \"relative\" is not an absolute path");
  EXPECT_EQ(error("spec-dirs: /a"), "c.yaml:1: spec-dirs: expected a list");
  EXPECT_EQ(error("log-level: loud"),
            "c.yaml:1: log-level: unknown log level \"loud\" (want error, warning, info or debug)");
  EXPECT_EQ(error("log-file: [/a]"), "c.yaml:1: log-file: expected a string");
  EXPECT_EQ(error("runtimes: []"), "c.yaml:1: runtimes: must name at least one runtime");
  EXPECT_EQ(error("ld-cache: ldconfg"), "c.yaml:1: ld-cache: expected merge or ldconfig, got \"ldconfg\"");
  EXPECT_EQ(error("runtime-mode: legacy"),
            "c.yaml:1: runtime-mode: expected cdi or prestart, got \"legacy\"");
  EXPECT_EQ(error("- a\n- b"), "c.yaml:1: expected a mapping of settings");
  EXPECT_EQ(error("a: 1\nb: [c"), "c.yaml:2: YAML syntax error (column 1): end of sequence flow not found");
  EXPECT_EQ(error("supported-capabilities: [utility, magic]"),
            "c.yaml:1: supported-capabilities: unknown driver capability \"magic\" (known: utility, compute, "
            "video, "
            "graphics, display, ngx, compat32, all)");
}

// NVIDIA's toolkit ignores keys it does not know: gpuctk warns, naming the key it probably meant.
TEST(HookConfig, UnknownKeysAreWarningsNamingTheNearestKnownKey) {
  const auto file = parse_config_file(
      "log_file: /x.log\nspec-dir: [/a]\nLog-Level: debug\nfrobnicate: 1\n"
      "spec-dirs: [/b]\n",
      "c.yaml");
  EXPECT_FALSE(file.error) << file.error->message;
  EXPECT_EQ(file.warnings, (std::vector<std::string>{
                               "c.yaml:1: unknown key \"log_file\" ignored (did you mean \"log-file\"?)",
                               "c.yaml:2: unknown key \"spec-dir\" ignored (did you mean \"spec-dirs\"?)",
                               "c.yaml:3: unknown key \"Log-Level\" ignored (did you mean \"log-level\"?)",
                               "c.yaml:4: unknown key \"frobnicate\" ignored",
                           }));
  EXPECT_EQ(file.config.spec_dirs, std::vector<std::string>{"/b"});
  EXPECT_EQ(file.config.log_file, std::nullopt);
  ASSERT_TRUE(parse_config("spec-dir: [/a]", "c.yaml"));
}

// A bad key keeps its default; every valid key still applies, so that the shim still finds the runtime
// the node uses and a container without a GPU still starts.
TEST(HookConfig, ABadKeyKeepsItsDefaultAndTheOthersApply) {
  const auto file = parse_config_file(
      "runtimes: [/opt/crun]\naccept-volume-mounts: ture\nmps-pipe-roots: [/ok, /]\nspec-dirs: [/a]\n"
      "runtimes: []\n",
      "c.yaml");
  ASSERT_TRUE(file.error);
  EXPECT_EQ(file.error->message, "c.yaml:2: accept-volume-mounts: expected true or false, got \"ture\"");
  EXPECT_EQ(file.config.runtimes, std::vector<std::string>{"/opt/crun"});
  EXPECT_FALSE(file.config.request.accept_volume_mounts);
  EXPECT_EQ(file.config.mps_pipe_roots, Config{}.mps_pipe_roots);
  EXPECT_EQ(file.config.spec_dirs, std::vector<std::string>{"/a"});
  // Bad YAML: nothing of the file can be trusted, all defaults.
  const auto bad = parse_config_file("runtimes: [/opt/crun]\nspec-dirs: [/a\n", "c.yaml");
  ASSERT_TRUE(bad.error);
  EXPECT_EQ(bad.config.runtimes, Config{}.runtimes);
}

// The default log is /var/log/gpuctk.log; "" logs nothing; a log-file the config names that cannot be
// opened is an error, for the hooks to fail GPU containers with.
TEST(HookConfig, TheLogIsTheDefaultUnlessNamed) {
  EXPECT_EQ(std::string(k_default_log_file), "/var/log/gpuctk.log");
  EXPECT_EQ(Config{}.log_file, std::nullopt);
  auto none = parse_config("log-file: \"\"", "c.yaml");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->log_file, std::optional<std::string>(""));
  const auto silent = open_log(*none);
  EXPECT_FALSE(silent.error);
  EXPECT_FALSE(silent.warning);
  EXPECT_FALSE(silent.log.enabled(LogLevel::error));
  auto missing = parse_config("log-file: /nonexistent/dir/gpuctk.log", "c.yaml");
  ASSERT_TRUE(missing);
  const auto failed = open_log(*missing);
  ASSERT_TRUE(failed.error);
  EXPECT_EQ(failed.error->message, "open log file /nonexistent/dir/gpuctk.log: No such file or directory");
}

TEST(HookConfig, EmptyFileIsDefaultsAndMissingExplicitFileIsAnError) {
  auto config = parse_config("", "c.yaml");
  ASSERT_TRUE(config);
  EXPECT_EQ(config->runtimes, (std::vector<std::string>{"runc", "crun"}));
  EXPECT_EQ(config->runtime_mode, RuntimeMode::cdi);
  EXPECT_EQ(parse_config("runtime-mode: prestart", "c.yaml")->runtime_mode, RuntimeMode::prestart);
  EXPECT_EQ(parse_config("", "c.yaml")->ld_cache, LdCacheMode::merge);
  EXPECT_EQ(parse_config("ld-cache: ldconfig", "c.yaml")->ld_cache, LdCacheMode::ldconfig);
  EXPECT_EQ(parse_config("ld-cache: merge", "c.yaml")->ld_cache, LdCacheMode::merge);
  EXPECT_EQ(parse_config("runtime-mode: cdi", "c.yaml")->runtime_mode, RuntimeMode::cdi);
  auto missing = read_config("/nonexistent/gpuctk.yaml");
  ASSERT_TRUE(missing.error);
  EXPECT_EQ(missing.error->message, "config: read /nonexistent/gpuctk.yaml: No such file or directory");
  EXPECT_EQ(missing.config.runtimes, (std::vector<std::string>{"runc", "crun"}));
}

}  // namespace
}  // namespace gpuctk::config
