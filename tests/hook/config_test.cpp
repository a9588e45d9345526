#include "hook/config.hpp"

#include <gtest/gtest.h>

#include "util/file.hpp"

namespace gpuctk::hook {
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
log-file: /var/log/gpuctk.log
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
            "c.yaml: mps-pipe-roots: \"/\" is not a clean absolute directory other than /");
  EXPECT_EQ(error("mps-log-roots: [/run/nvidia/../mps]"),
            "c.yaml: mps-log-roots: \"/run/nvidia/../mps\" is not a clean absolute directory other than /");
  EXPECT_EQ(error("mps-pipe-roots: [/run/nvidia/mps/]"),
            "c.yaml: mps-pipe-roots: \"/run/nvidia/mps/\" is not a clean absolute directory other than /");
  EXPECT_EQ(error("mps-log-roots: [run/mps]"),
            "c.yaml: mps-log-roots: \"run/mps\" is not a clean absolute directory other than /");
}

TEST(HookConfig, InvalidFilesNameTheFileAndKey) {
  const auto error = [](std::string_view text) { return parse_config(text, "c.yaml").error().message; };
  EXPECT_EQ(error("spec-dir: [/a]"), "c.yaml: unknown key \"spec-dir\"");
  EXPECT_EQ(error("accept-volume-mounts: yes"),
            "c.yaml: accept-volume-mounts: expected true or false, got \"yes\"");
  EXPECT_EQ(error("driver-root: relative"), "c.yaml: driver-root: \"relative\" is not an absolute path");
  EXPECT_EQ(error("spec-dirs: /a"), "c.yaml: spec-dirs: expected a list");
  EXPECT_EQ(error("log-level: loud"),
            "c.yaml: log-level: unknown log level \"loud\" (want error, warning, info or debug)");
  EXPECT_EQ(error("runtimes: []"), "c.yaml: runtimes: must name at least one runtime");
  EXPECT_EQ(error("runtime-mode: legacy"), "c.yaml: runtime-mode: expected cdi or prestart, got \"legacy\"");
  EXPECT_EQ(error("- a\n- b"), "c.yaml: expected a mapping of settings");
  EXPECT_TRUE(error("a: [b").starts_with("c.yaml: YAML syntax error at line ")) << error("a: [b");
  EXPECT_EQ(
      error("supported-capabilities: [utility, magic]"),
      "c.yaml: supported-capabilities: unknown driver capability \"magic\" (known: utility, compute, video, "
      "graphics, display, ngx, compat32, all)");
}

TEST(HookConfig, EmptyFileIsDefaultsAndMissingExplicitFileIsAnError) {
  auto config = parse_config("", "c.yaml");
  ASSERT_TRUE(config);
  EXPECT_EQ(config->runtimes, (std::vector<std::string>{"runc", "crun"}));
  EXPECT_EQ(config->runtime_mode, RuntimeMode::cdi);
  EXPECT_EQ(parse_config("runtime-mode: prestart", "c.yaml")->runtime_mode, RuntimeMode::prestart);
  EXPECT_EQ(parse_config("runtime-mode: cdi", "c.yaml")->runtime_mode, RuntimeMode::cdi);
  auto missing = load_config("/nonexistent/gpuctk.yaml");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "config: read /nonexistent/gpuctk.yaml: No such file or directory");
}

}  // namespace
}  // namespace gpuctk::hook
