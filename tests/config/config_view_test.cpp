// `gpuctk config` (src/config/config_view.cpp): every key with its effective value and the line that set
// it; --set rewrites the key's line (and only it) and checks the value as the hooks would read it.
#include "config/config_view.hpp"

#include <gtest/gtest.h>

#include "util/file.hpp"

namespace gpuctk::config {
namespace {

std::vector<std::string> rows(const std::vector<Setting>& settings) {
  std::vector<std::string> out;
  for (const auto& s : settings) {
    out.push_back(s.key + ": " + s.value + "  # " + s.source);
  }
  return out;
}

std::vector<Setting> describe(std::string_view text) {
  return describe_config(parse_config_file(text, "c.yaml").config, text, "c.yaml");
}

TEST(ConfigView, EveryKeyWithItsValueAndWhereItComesFrom) {
  const std::string text =
      "# a comment\n"
      "log-level: debug\n"
      "spec-dirs:\n"
      "  - /etc/cdi\n"
      "  - /run/my cdi\n"
      "accept-volume-mounts: yes   # YAML 1.1's yes is not a boolean here: the default stays\n"
      "supported-capabilities: [compute, utility]\n"
      "log-file: \"\"\n"
      "runtime-mode: prestart\n";
  EXPECT_EQ(rows(describe(text)), (std::vector<std::string>{
                                      "spec-dirs: [/etc/cdi, \"/run/my cdi\"]  # c.yaml:3",
                                      "default-kind: nvidia.com/gpu  # default",
                                      "annotation-prefixes: [cdi.k8s.io/]  # default",
                                      "accept-envvar-when-unprivileged: true  # default",
                                      "accept-volume-mounts: false  # default",
                                      "supported-capabilities: [utility, compute]  # c.yaml:7",
                                      "disable-require: false  # default",
                                      "driver-root: /  # default",
                                      "dev-root: /  # default",
                                      "hook-path: " + std::string(k_default_hook_path) + "  # default",
                                      "no-additional-gids-for-device-nodes: false  # default",
                                      "allow-ldconfig-from-container: false  # default",
                                      "ld-cache: merge  # default",
                                      "runtimes: [runc, crun]  # default",
                                      "runtime-mode: prestart  # c.yaml:9",
                                      "mps-pipe-roots: [/run/nvidia/mps]  # default",
                                      "mps-log-roots: [/run/nvidia/mps]  # default",
                                      "log-file: \"\"  # c.yaml:8",
                                      "log-level: debug  # c.yaml:2",
                                  }));
}

TEST(ConfigView, NothingSetIsEveryDefaultAndTheShippedFileSaysTheSame) {
  const auto defaults = describe("");
  for (const auto& s : defaults) {
    EXPECT_EQ(s.source, "default") << s.key;
  }
  // etc/config.yaml lists every key, in this order, with its default value (hook-path is the install's).
  const auto shipped_text = read_file(std::string(GPUCTK_SOURCE_DIR) + "/etc/config.yaml").value();
  const auto shipped = describe(shipped_text);
  ASSERT_EQ(shipped.size(), defaults.size());
  for (size_t i = 0; i < shipped.size(); ++i) {
    // log-file is shipped commented out: its default (/var/log/gpuctk.log) applies until it is set.
    if (shipped[i].key != "log-file") {
      EXPECT_NE(shipped[i].source, "default") << shipped[i].key << " is not in etc/config.yaml";
    }
    if (shipped[i].key != "hook-path" && shipped[i].key != "log-file") {
      EXPECT_EQ(shipped[i].value, defaults[i].value) << shipped[i].key;
    }
  }
  std::vector<std::string> keys;
  for (const auto key : config_keys()) {
    keys.emplace_back(key);
  }
  std::vector<std::string> in_file;
  for (const auto& s : shipped) {
    in_file.push_back(s.key);
  }
  EXPECT_EQ(keys, in_file);
}

TEST(ConfigView, SetRewritesTheKeysLineAndKeepsEveryOtherByte) {
  const std::string text =
      "# gpuctk\n"
      "spec-dirs: [/etc/cdi]\n"
      "\n"
      "log-level: info   # error, warning, info or debug\n"
      "# the end";
  auto out = set_config_value(text, "log-level", " debug ", "c.yaml");
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(
      *out,
      "# gpuctk\nspec-dirs: [/etc/cdi]\n\nlog-level: debug   # error, warning, info or debug\n# the end");
  out = set_config_value(*out, "hook-path", "/opt/gpuctk/bin/gpuctk", "c.yaml");
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(*out,
            "# gpuctk\nspec-dirs: [/etc/cdi]\n\nlog-level: debug   # error, warning, info or debug\n# the "
            "end\nhook-path: /opt/gpuctk/bin/gpuctk\n");
  EXPECT_EQ(parse_config(*out, "c.yaml")->hook_path, "/opt/gpuctk/bin/gpuctk");
  EXPECT_EQ(set_config_value("", "dev-root", "/host", "c.yaml").value_or("?"), "dev-root: /host\n");
}

// A block value's lines go with the key's; comments among them, and everything after, stay.
TEST(ConfigView, SetReplacesABlockValue) {
  const auto at_column_zero = set_config_value("spec-dirs:\n- /etc/cdi\n- /var/run/cdi\nlog-level: info\n",
                                               "spec-dirs", "[/opt/cdi]", "c.yaml");
  EXPECT_EQ(at_column_zero.value_or("?"), "spec-dirs: [/opt/cdi]\nlog-level: info\n");
  const std::string text =
      "spec-dirs:\n"
      "  - /etc/cdi\n"
      "  # the runtime's\n"
      "  - /var/run/cdi\n"
      "runtimes: [crun]\n";
  const auto out = set_config_value(text, "spec-dirs", "[/opt/cdi]", "c.yaml");
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(*out, "spec-dirs: [/opt/cdi]\n  # the runtime's\nruntimes: [crun]\n");
  EXPECT_EQ(parse_config(*out, "c.yaml")->spec_dirs, std::vector<std::string>{"/opt/cdi"});
}

TEST(ConfigView, SetRefusesWhatTheHooksWouldRefuse) {
  const std::string text = "log-level: info\nruntimes: [runc]\n";
  auto out = set_config_value(text, "log-level", "loud", "c.yaml");
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().message, parse_config("log-level: loud\n", "c.yaml").error().message);
  EXPECT_TRUE(out.error().message.starts_with("c.yaml:1: log-level: ")) << out.error().message;
  out = set_config_value(text, "log_level", "debug", "c.yaml");
  ASSERT_FALSE(out);
  EXPECT_TRUE(out.error().message.starts_with("unknown key \"log_level\" (keys: spec-dirs, default-kind, "))
      << out.error().message;
  out = set_config_value(text, "log-level", "debug\nhook-path: /tmp/x", "c.yaml");
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().message, "log-level: a value is one line");
  out = set_config_value(text, "runtimes", "[runc", "c.yaml");
  ASSERT_FALSE(out);
  EXPECT_TRUE(out.error().message.starts_with("c.yaml:")) << out.error().message;
  out = set_config_value("log-level: [\n", "log-level", "debug", "c.yaml");
  ASSERT_FALSE(out);
  EXPECT_TRUE(out.error().message.ends_with("; fix it by hand first")) << out.error().message;
  // Another key's error is the file's: the set goes through (the CLI warns).
  out = set_config_value("accept-volume-mounts: yes\nlog-level: info\n", "log-level", "debug", "c.yaml");
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(*out, "accept-volume-mounts: yes\nlog-level: debug\n");
}

}  // namespace
}  // namespace gpuctk::config
