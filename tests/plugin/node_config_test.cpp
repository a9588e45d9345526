// Per-node configs as NVIDIA's config-manager picks them (cmd/config-manager/main.go: its flags,
// getConfigFileNameMap, updateConfigName): the options, the folder of configs (a ConfigMap mounted), every
// branch of the choice with its message, and the chosen config written where the plugin and the labels
// sidecar read it.
#include "plugin/node_config.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::plugin {
namespace {

using Env = std::map<std::string, std::string>;

Result<NodeConfigOptions> resolve(std::vector<std::string_view> args, const Env& env = {}) {
  auto arguments = parse_arguments(args, [&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  if (!arguments) {
    return std::unexpected(arguments.error());
  }
  return resolve_node_config_options(arguments->overrides);
}

std::string resolve_error(std::vector<std::string_view> args, const Env& env = {}) {
  const auto options = resolve(std::move(args), env);
  EXPECT_FALSE(options);
  return options ? std::string() : options.error().message;
}

TEST(PluginNodeConfig, OffUnlessASourceFolderIsGivenWithConfigManagersDefaults) {
  const auto options = resolve({});
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_FALSE(options->enabled());
  EXPECT_EQ(options->node_label, "nvidia.com/device-plugin.config");
  EXPECT_EQ(options->default_config, "");
  EXPECT_TRUE(options->fallbacks.empty());
  EXPECT_EQ(options->kubeconfig, "");
  EXPECT_EQ(options->destination, "");
  // Off, a node name is not needed.
  EXPECT_TRUE(resolve({"--config-file=/c/config.yaml"}));
}

TEST(PluginNodeConfig, EveryOptionFromItsFlagOrVariable) {
  const auto options = resolve(
      {"--config-file-srcdir", "/available", "--node-label=example.com/config", "--config-file",
       "/config/config.yaml", "--fallback-strategies", "named", "--fallback-strategies=single, empty"},
      {{"NODE_NAME", "gpu-node-1"},
       {"DEFAULT_CONFIG", "a100"},
       {"KUBECONFIG", "/k/config"},
       {"NODE_LABEL", "ignored.example.com/x"}});
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_TRUE(options->enabled());
  EXPECT_EQ(options->srcdir, "/available");
  EXPECT_EQ(options->node_name, "gpu-node-1");
  EXPECT_EQ(options->node_label, "example.com/config");
  EXPECT_EQ(options->default_config, "a100");
  EXPECT_EQ(options->fallbacks, (std::vector<Fallback>{Fallback::named, Fallback::single, Fallback::empty}));
  EXPECT_EQ(options->kubeconfig, "/k/config");
  EXPECT_EQ(options->destination, "/config/config.yaml");
  const auto from_variables =
      resolve({}, {{"CONFIG_FILE_SRCDIR", "/a"}, {"NODE_NAME", "n"}, {"FALLBACK_STRATEGIES", "empty,named"}});
  ASSERT_TRUE(from_variables) << from_variables.error().message;
  EXPECT_EQ(from_variables->fallbacks, (std::vector<Fallback>{Fallback::empty, Fallback::named}));
}

TEST(PluginNodeConfig, RefusalsNameTheFlagOrVariable) {
  EXPECT_EQ(resolve_error({"--fallback-strategies=named,first"}),
            "--fallback-strategies: unknown strategy \"first\" (want named, single or empty)");
  EXPECT_EQ(resolve_error({}, {{"FALLBACK_STRATEGIES", "named,,empty"}}),
            "FALLBACK_STRATEGIES: unknown strategy \"\" (want named, single or empty)");
  EXPECT_EQ(resolve_error({"--config-file-srcdir=/a"}),
            "--node-name: needed with --config-file-srcdir (NODE_NAME)");
  EXPECT_EQ(resolve_error({"--config-file-srcdir=/a"}, {{"NODE_NAME", ""}}),
            "--node-name: needed with --config-file-srcdir (NODE_NAME)");
  EXPECT_EQ(resolve_error({"--config-file-srcdir=/a"}, {{"NODE_NAME", "Node/../x"}}),
            "NODE_NAME: \"Node/../x\" is not a node name (a DNS-1123 subdomain)");
  EXPECT_EQ(resolve_error({"--config-file-srcdir=/a", "--node-name=n", "--node-label="}),
            "--node-label: must not be empty");
}

// A folder as the kubelet mounts a ConfigMap: the files are links into "..data", itself a link to a
// timestamped folder.
class PluginNodeConfigFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_tmp.path().empty());
    m_srcdir = m_tmp.path() + "/available";
    const std::string data = m_srcdir + "/..2026_12_03_00_00_00.1";
    std::filesystem::create_directories(data);
    for (const auto& [name, text] :
         {std::pair{"a100", "version: v1\n"}, std::pair{"default", "flags: {}\n"}}) {
      ASSERT_TRUE(write_file_atomic(data + "/" + name, text, 0644));
      std::filesystem::create_symlink(std::string("..data/") + name, m_srcdir + "/" + name);
    }
    std::filesystem::create_directory_symlink("..2026_12_03_00_00_00.1", m_srcdir + "/..data");
    m_options.srcdir = m_srcdir;
    m_options.destination = m_tmp.path() + "/config.yaml";
  }
  test::TempDir m_tmp{"gpuctk-node-config"};
  std::string m_srcdir;
  NodeConfigOptions m_options;
};

TEST_F(PluginNodeConfigFolderTest, ConfigsAreRegularFilesOrLinksToThemSortedWithoutTheConfigMapsOwn) {
  ASSERT_TRUE(write_file_atomic(m_srcdir + "/h100", "", 0644));
  std::filesystem::create_directory(m_srcdir + "/folder");
  std::filesystem::create_directory_symlink("folder", m_srcdir + "/link-to-folder");
  std::filesystem::create_symlink("gone", m_srcdir + "/dangling");
  ASSERT_EQ(::mkfifo((m_srcdir + "/fifo").c_str(), 0600), 0);
  const auto names = list_configs(m_srcdir);
  ASSERT_TRUE(names) << names.error().message;
  EXPECT_EQ(*names, (std::vector<std::string>{"a100", "default", "h100"}));
}

TEST_F(PluginNodeConfigFolderTest, AMissingOrHugeFolderIsAnError) {
  auto names = list_configs(m_tmp.path() + "/none");
  ASSERT_FALSE(names);
  EXPECT_EQ(names.error().message, "list " + m_tmp.path() + "/none: No such file or directory");
  // 4 entries are there ("a100", "default", "..data" and the data folder); 253 more make 257.
  for (int i = 0; i < 253; ++i) {
    ASSERT_TRUE(write_file_atomic(m_srcdir + "/c" + std::to_string(i), "", 0644, Durability::atomic_only));
  }
  names = list_configs(m_srcdir);
  ASSERT_FALSE(names);
  EXPECT_EQ(names.error().message, "list " + m_srcdir + ": more than 256 entries");
  std::filesystem::remove(m_srcdir + "/c0");
  names = list_configs(m_srcdir);
  ASSERT_TRUE(names) << names.error().message;
  EXPECT_EQ(names->size(), 254U);
}

// select_config, branch by branch of updateConfigName.
std::string choose(const NodeConfigOptions& options, const std::vector<std::string>& available,
                   std::optional<std::string_view> label) {
  const auto chosen = select_config(options, available, label);
  if (!chosen) {
    return "error: " + chosen.error().message;
  }
  return chosen->value_or("(empty)");
}

TEST(PluginNodeConfigSelect, NoConfigAtAllIsAnErrorWhateverTheRest) {
  NodeConfigOptions options;
  options.fallbacks = {Fallback::empty};
  EXPECT_EQ(choose(options, {}, "a100"), "error: no configuration files available");
  EXPECT_EQ(choose(options, {}, std::nullopt), "error: no configuration files available");
}

TEST(PluginNodeConfigSelect, TheLabelNamesAnAvailableConfigOrIsAnError) {
  NodeConfigOptions options;
  options.default_config = "default";
  options.fallbacks = {Fallback::empty};
  EXPECT_EQ(choose(options, {"a100", "default"}, "a100"), "a100");
  EXPECT_EQ(choose(options, {"a100", "default"}, "h100"), "error: specified config \"h100\" does not exist");
  EXPECT_EQ(choose(options, {"a100"}, "a\n\x1b[2J"),
            "error: specified config \"a\\n\\x1b[2J\" does not exist");
}

TEST(PluginNodeConfigSelect, WithoutALabelTheDefaultOrAnError) {
  NodeConfigOptions options;
  options.default_config = "a100";
  options.fallbacks = {Fallback::empty};
  EXPECT_EQ(choose(options, {"a100", "default"}, std::nullopt), "a100");
  EXPECT_EQ(choose(options, {"a100", "default"}, ""), "a100");
  EXPECT_EQ(choose(options, {"default"}, ""), "error: specified config \"a100\" does not exist");
}

TEST(PluginNodeConfigSelect, WithoutLabelOrDefaultTheFallbacksInOrder) {
  NodeConfigOptions options;
  options.fallbacks = {Fallback::named, Fallback::single, Fallback::empty};
  EXPECT_EQ(choose(options, {"a100", "default"}, ""), "default");
  EXPECT_EQ(choose(options, {"a100"}, ""), "a100");
  EXPECT_EQ(choose(options, {"a100", "h100"}, ""), "(empty)");
  options.fallbacks = {Fallback::single, Fallback::named};
  EXPECT_EQ(choose(options, {"default", "h100"}, ""), "default");
  EXPECT_EQ(choose(options, {"a100", "h100"}, ""),
            "error: no config was set, no default was provided, and all fallbacks failed");
  options.fallbacks = {Fallback::empty, Fallback::named};
  EXPECT_EQ(choose(options, {"default"}, std::nullopt), "(empty)");
  options.fallbacks.clear();
  EXPECT_EQ(choose(options, {"default"}, std::nullopt),
            "error: no config was set, no default was provided, and all fallbacks failed");
}

TEST_F(PluginNodeConfigFolderTest, TheChosenConfigIsWrittenOnlyWhenItsBytesChange) {
  auto changed = write_chosen_config(m_options, "a100");
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_TRUE(*changed);
  EXPECT_EQ(read_file(m_options.destination).value_or("?"), "version: v1\n");
  struct stat st {};
  ASSERT_EQ(::lstat(m_options.destination.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0644U);
  changed = write_chosen_config(m_options, "a100");
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_FALSE(*changed);
  changed = write_chosen_config(m_options, std::nullopt);
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_TRUE(*changed);
  EXPECT_EQ(read_file(m_options.destination).value_or("?"), "");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(m_tmp.path()), {}), 2) << "no temporary file";
}

TEST_F(PluginNodeConfigFolderTest, ALinkToDevNullLeftByNvidiasConfigManagerIsReplaced) {
  std::filesystem::create_symlink("/dev/null", m_options.destination);
  const auto changed = write_chosen_config(m_options, "default");
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_TRUE(*changed);
  EXPECT_EQ(read_file(m_options.destination).value_or("?"), "flags: {}\n");
  EXPECT_FALSE(std::filesystem::is_symlink(m_options.destination));
}

TEST_F(PluginNodeConfigFolderTest, OnlyABoundedRegularFileOfTheFolderIsEverRead) {
  const auto error = [&](const std::optional<std::string>& name) {
    const auto changed = write_chosen_config(m_options, name);
    EXPECT_FALSE(changed);
    return changed ? std::string() : changed.error().message;
  };
  ASSERT_EQ(::mkfifo((m_srcdir + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(error("fifo"), "read " + m_srcdir + "/fifo: not a regular file");
  ASSERT_TRUE(write_file_atomic(m_srcdir + "/huge", std::string(1024 * 1024 + 1, '#'), 0644));
  EXPECT_EQ(error("huge"), "read " + m_srcdir + "/huge: larger than 1048576 bytes");
  EXPECT_EQ(error("gone"), "read " + m_srcdir + "/gone: No such file or directory");
  EXPECT_EQ(error("../secret"), "config \"../secret\": not a config name");
  EXPECT_EQ(error("..data"), "config \"..data\": not a config name");
  EXPECT_FALSE(std::filesystem::exists(m_options.destination)) << "nothing written";
  m_options.destination.clear();
  EXPECT_EQ(error("a100"), "--config-file: needed to write the chosen config");
}

}  // namespace
}  // namespace gpuctk::plugin
