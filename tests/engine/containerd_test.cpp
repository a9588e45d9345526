// containerd's config.toml (src/engine/containerd.cpp): schema versions 1, 2 and 3, new files, real-world
// files kept key for key, already configured, comments, other runtimes, errors, removal.
#include <gtest/gtest.h>

#include "engine/configure.hpp"
#include "engine/data.hpp"
#include "engine/toml_doc.hpp"

namespace gpuctk {
namespace {

using engine::Engine;
using engine::RuntimeSettings;

constexpr std::string_view k_v1 = "cri";
constexpr std::string_view k_v2 = "io.containerd.grpc.v1.cri";
constexpr std::string_view k_v3 = "io.containerd.cri.v1.runtime";

toml::table table_of(const std::string& text) {
  auto parsed = engine::detail::parse_toml(text);
  EXPECT_TRUE(parsed) << parsed.error().message;
  return parsed ? std::move(*parsed) : toml::table{};
}

Result<std::string> configured(const std::optional<std::string>& old, const RuntimeSettings& settings) {
  return engine::configured_text(Engine::containerd, old, settings);
}

std::string configured_ok(const std::optional<std::string>& old,
                          const RuntimeSettings& settings = test::shim_settings()) {
  auto text = configured(old, settings);
  EXPECT_TRUE(text) << text.error().message;
  return text.value_or("");
}

std::string error_of(const std::optional<std::string>& old,
                     const RuntimeSettings& settings = test::shim_settings()) {
  auto text = configured(old, settings);
  EXPECT_FALSE(text);
  return text ? std::string("(no error)") : text.error().message;
}

// plugins.<plugin>.containerd of `doc`.
toml::table* containerd_table(toml::table& doc, std::string_view plugin) {
  return doc["plugins"][plugin]["containerd"].as_table();
}

TEST(EngineContainerd, NewFileIsVersion2) {
  EXPECT_EQ(configured_ok(std::nullopt),
            "version = 2\n"
            "\n"
            "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
            "runtime_type = \"io.containerd.runc.v2\"\n"
            "\n"
            "    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
            "    BinaryName = \"/usr/bin/gpuctk-runtime\"\n");
}

TEST(EngineContainerd, NewFileOfVersion3) {
  EXPECT_EQ(configured_ok(std::nullopt, test::shim_settings([](auto& s) { s.containerd_version = 3; })),
            "version = 3\n"
            "\n"
            "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nvidia]\n"
            "runtime_type = \"io.containerd.runc.v2\"\n"
            "\n"
            "    [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nvidia.options]\n"
            "    BinaryName = \"/usr/bin/gpuctk-runtime\"\n");
}

TEST(EngineContainerd, NewFileWithDefaultAndCdi) {
  const auto settings = test::shim_settings([](auto& s) {
    s.set_as_default = true;
    s.enable_cdi = true;
  });
  EXPECT_EQ(configured_ok(std::nullopt, settings),
            "version = 2\n"
            "\n"
            "[plugins.\"io.containerd.grpc.v1.cri\"]\n"
            "cdi_spec_dirs = [ \"/etc/cdi\", \"/var/run/cdi\" ]\n"
            "enable_cdi = true\n"
            "\n"
            "    [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
            "    default_runtime_name = \"nvidia\"\n"
            "\n"
            "        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
            "        runtime_type = \"io.containerd.runc.v2\"\n"
            "\n"
            "            [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
            "            BinaryName = \"/usr/bin/gpuctk-runtime\"\n");
}

TEST(EngineContainerd, EmptyOrCommentOnlyFileIsANewFile) {
  const std::string fresh = configured_ok(std::nullopt);
  EXPECT_EQ(configured_ok(""), fresh);
  EXPECT_EQ(configured_ok("\n# containerd config\n\n"), fresh);
  EXPECT_EQ(error_of(std::nullopt, test::shim_settings([](auto& s) { s.containerd_version = 1; })),
            "containerd config version 1 is not supported (want 2 or 3)");
}

// Everything of `containerd config default` (1.6.20) stays; the new entry is runc's with our BinaryName.
TEST(EngineContainerd, Default16KeepsEveryOtherKey) {
  const std::string old = test::engine_data("containerd-1.6-default.toml");
  toml::table before = table_of(old);
  toml::table after = table_of(configured_ok(old));
  toml::table* runtimes = (*containerd_table(after, k_v2))["runtimes"].as_table();
  ASSERT_NE(runtimes, nullptr);
  toml::table expected = *(*containerd_table(before, k_v2))["runtimes"]["runc"].as_table();
  expected["options"].as_table()->insert_or_assign("BinaryName", std::string(test::k_shim));
  EXPECT_EQ(*(*runtimes)["nvidia"].as_table(), expected);
  runtimes->erase("nvidia");
  EXPECT_EQ(after, before);
}

TEST(EngineContainerd, Version3FileKeepsEveryOtherKey) {
  const std::string old = test::engine_data("containerd-2-default.toml");
  toml::table before = table_of(old);
  toml::table after = table_of(configured_ok(old, test::shim_settings([](auto& s) { s.enable_cdi = true; })));
  toml::table* runtimes = (*containerd_table(after, k_v3))["runtimes"].as_table();
  ASSERT_NE(runtimes, nullptr);
  EXPECT_EQ((*runtimes)["nvidia"]["options"]["BinaryName"].value<std::string>(), test::k_shim);
  EXPECT_EQ((*runtimes)["nvidia"]["sandboxer"].value<std::string>(), "podsandbox");  // runc's, copied
  runtimes->erase("nvidia");
  // enable_cdi and cdi_spec_dirs were there already (containerd 2 turns CDI on by default).
  EXPECT_EQ(after, before);
  EXPECT_EQ(after["plugins"][k_v2]["containerd"].node(), nullptr);
}

TEST(EngineContainerd, AlreadyConfiguredIsUnchangedToTheByte) {
  const std::string old = test::engine_data("containerd-configured.toml");
  EXPECT_EQ(configured_ok(old), old);  // its comment included
}

TEST(EngineContainerd, SecondRunChangesNothing) {
  for (const char* name :
       {"containerd-1.6-default.toml", "containerd-2-default.toml", "containerd-comments.toml",
        "containerd-kata.toml", "containerd-configured.toml", "containerd-1.6-default-v1.toml"}) {
    const auto settings = test::shim_settings([](auto& s) {
      s.set_as_default = true;
      s.enable_cdi = true;
    });
    const std::string once = configured_ok(test::engine_data(name), settings);
    EXPECT_EQ(configured_ok(once, settings), once) << name;
  }
}

// toml++ keeps no comments: a file that changes loses them (NVIDIA's nvidia-ctk does the same).
TEST(EngineContainerd, ChangedFileLosesItsComments) {
  const std::string old = test::engine_data("containerd-comments.toml");
  ASSERT_NE(old.find("# default_runtime_name is the default runtime name to use."), std::string::npos);
  const std::string text = configured_ok(old);
  EXPECT_EQ(text.find('#'), std::string::npos) << text;
  toml::table after = table_of(text);
  (*containerd_table(after, k_v2))["runtimes"].as_table()->erase("nvidia");
  EXPECT_EQ(after, table_of(old));
}

TEST(EngineContainerd, OtherRuntimesStayAndTheNewOneTakesRuncsOptions) {
  const std::string old = test::engine_data("containerd-kata.toml");
  toml::table before = table_of(old);
  toml::table after = table_of(configured_ok(old));
  toml::table& runtimes = *(*containerd_table(after, k_v2))["runtimes"].as_table();
  // SystemdCgroup: the node's cgroup driver holds for every runc runtime.
  EXPECT_EQ(runtimes["nvidia"]["options"]["SystemdCgroup"].value<bool>(), true);
  EXPECT_EQ(runtimes["nvidia"]["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
  EXPECT_EQ(*runtimes["kata"].as_table(), *(*containerd_table(before, k_v2))["runtimes"]["kata"].as_table());
  runtimes.erase("nvidia");
  EXPECT_EQ(after, before);
}

// The model is the first runc runtime of: the default, runc, crun. A kata default is no model, but runc is.
TEST(EngineContainerd, AKataDefaultIsNoModelButRuncIs) {
  std::string old = test::engine_data("containerd-kata.toml");
  const std::string runc = "default_runtime_name = \"runc\"";
  const auto at = old.find(runc);
  ASSERT_NE(at, std::string::npos);
  old.replace(at, runc.size(), "default_runtime_name = \"kata\"");
  toml::table after = table_of(configured_ok(old));
  toml::table expected{{"runtime_type", "io.containerd.runc.v2"},
                       {"options", toml::table{{"BinaryName", test::k_shim}, {"SystemdCgroup", true}}}};
  EXPECT_EQ(*(*containerd_table(after, k_v2))["runtimes"]["nvidia"].as_table(), expected);
}

TEST(EngineContainerd, WithoutARuncRuntimeTheEntryStartsEmpty) {
  const std::string old =
      "version = 2\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
      "default_runtime_name = \"kata\"\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.kata]\n"
      "runtime_type = \"io.containerd.kata.v2\"\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.crun]\n"
      "runtime_type = \"io.containerd.runsc.v1\"\n";
  toml::table after = table_of(configured_ok(old));
  toml::table expected{{"runtime_type", "io.containerd.runc.v2"},
                       {"options", toml::table{{"BinaryName", test::k_shim}}}};
  EXPECT_EQ(*(*containerd_table(after, k_v2))["runtimes"]["nvidia"].as_table(), expected);
}

// crun as containerd runs it: the runc v2 shim with crun as its BinaryName; its options are a model too.
TEST(EngineContainerd, CrunIsTheLastModel) {
  const std::string old =
      "version = 2\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
      "default_runtime_name = \"crun\"\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.crun]\n"
      "runtime_type = \"io.containerd.runc.v2\"\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.crun.options]\n"
      "BinaryName = \"/usr/bin/crun\"\n"
      "SystemdCgroup = true\n";
  toml::table after = table_of(configured_ok(old));
  toml::table expected{{"runtime_type", "io.containerd.runc.v2"},
                       {"options", toml::table{{"BinaryName", test::k_shim}, {"SystemdCgroup", true}}}};
  EXPECT_EQ(*(*containerd_table(after, k_v2))["runtimes"]["nvidia"].as_table(), expected);
}

// Schema 1 (no version key: containerd 1.x's first schema; 1.6 and 1.7 read it, 2.x migrates it): the
// CRI plugin's table is plugins.cri; the file stays schema 1 (no version key is added).
TEST(EngineContainerd, Version1FileGetsTheRuntimeUnderPluginsCri) {
  const std::string old =
      "root = \"/var/lib/containerd\"\n"
      "\n"
      "[plugins.cri.containerd]\n"
      "  snapshotter = \"overlayfs\"\n"
      "  [plugins.cri.containerd.runtimes.runc]\n"
      "    runtime_type = \"io.containerd.runc.v2\"\n"
      "    [plugins.cri.containerd.runtimes.runc.options]\n"
      "      SystemdCgroup = true\n";
  EXPECT_EQ(configured_ok(old),
            "root = \"/var/lib/containerd\"\n"
            "\n"
            "[plugins.cri.containerd]\n"
            "snapshotter = \"overlayfs\"\n"
            "\n"
            "    [plugins.cri.containerd.runtimes.nvidia]\n"
            "    runtime_type = \"io.containerd.runc.v2\"\n"
            "\n"
            "        [plugins.cri.containerd.runtimes.nvidia.options]\n"
            "        BinaryName = \"/usr/bin/gpuctk-runtime\"\n"
            "        SystemdCgroup = true\n"
            "\n"
            "    [plugins.cri.containerd.runtimes.runc]\n"
            "    runtime_type = \"io.containerd.runc.v2\"\n"
            "\n"
            "        [plugins.cri.containerd.runtimes.runc.options]\n"
            "        SystemdCgroup = true\n");
  const auto settings = test::shim_settings([](auto& s) {
    s.set_as_default = true;
    s.enable_cdi = true;
  });
  EXPECT_EQ(configured_ok("version = 1\n", settings),
            "version = 1\n"
            "\n"
            "[plugins.cri]\n"
            "cdi_spec_dirs = [ \"/etc/cdi\", \"/var/run/cdi\" ]\n"
            "enable_cdi = true\n"
            "\n"
            "    [plugins.cri.containerd]\n"
            "    default_runtime_name = \"nvidia\"\n"
            "\n"
            "        [plugins.cri.containerd.runtimes.nvidia]\n"
            "        runtime_type = \"io.containerd.runc.v2\"\n"
            "\n"
            "            [plugins.cri.containerd.runtimes.nvidia.options]\n"
            "            BinaryName = \"/usr/bin/gpuctk-runtime\"\n");
}

// containerd 1.6's `config default` written as schema 1 (plugins by their short IDs, no version key).
TEST(EngineContainerd, Version1DefaultKeepsEveryOtherKey) {
  const std::string old = test::engine_data("containerd-1.6-default-v1.toml");
  toml::table before = table_of(old);
  ASSERT_EQ(before.get("version"), nullptr);
  toml::table after = table_of(configured_ok(old));
  ASSERT_NE(containerd_table(after, k_v1), nullptr);
  toml::table* runtimes = (*containerd_table(after, k_v1))["runtimes"].as_table();
  ASSERT_NE(runtimes, nullptr);
  toml::table expected = *(*containerd_table(before, k_v1))["runtimes"]["runc"].as_table();
  expected["options"].as_table()->insert_or_assign("BinaryName", std::string(test::k_shim));
  EXPECT_EQ(*(*runtimes)["nvidia"].as_table(), expected);
  runtimes->erase("nvidia");
  EXPECT_EQ(after, before);
}

// The entry standing in for the default runtime inherits every key of it, known to gpuctk or not (a key a
// later containerd adds, the schema-1 options.Runtime, empty runtime_engine and runtime_root): only
// options.BinaryName is gpuctk's. Schema 1 and schema 2 alike.
TEST(EngineContainerd, TheEntryInheritsEveryKeyOfTheDefaultRuntime) {
  for (const std::string_view plugin : {k_v1, k_v2}) {
    SCOPED_TRACE(std::string(plugin));
    const std::string prefix = plugin == k_v1 ? "" : "version = 2\n";
    const std::string table = plugin == k_v1 ? "cri" : "\"io.containerd.grpc.v1.cri\"";
    const std::string old = prefix + "[plugins." + table +
                            ".containerd]\n"
                            "default_runtime_name = \"main\"\n"
                            "[plugins." +
                            table +
                            ".containerd.runtimes.main]\n"
                            "runtime_type = \"io.containerd.runc.v2\"\n"
                            "runtime_engine = \"\"\n"
                            "runtime_root = \"\"\n"
                            "privileged_without_host_devices = true\n"
                            "future_key = { depth = 2, list = [ \"a\" ] }\n"
                            "[plugins." +
                            table +
                            ".containerd.runtimes.main.options]\n"
                            "BinaryName = \"/usr/local/bin/runc\"\n"
                            "Runtime = \"/usr/local/bin/runc\"\n"
                            "SystemdCgroup = true\n"
                            "Root = \"/run/runc-main\"\n";
    toml::table before = table_of(old);
    toml::table after = table_of(configured_ok(old));
    toml::table expected = *(*containerd_table(before, plugin))["runtimes"]["main"].as_table();
    expected["options"].as_table()->insert_or_assign("BinaryName", std::string(test::k_shim));
    ASSERT_NE(containerd_table(after, plugin), nullptr);
    EXPECT_EQ(*(*containerd_table(after, plugin))["runtimes"]["nvidia"].as_table(), expected);
  }
  // The one exception: a non-empty runtime_engine or runtime_root, which containerd 1.x refuses beside a
  // runc runtime_type (ValidatePluginConfig), is not inherited.
  EXPECT_EQ(configured_ok("[plugins.cri.containerd.runtimes.runc]\n"
                          "runtime_type = \"io.containerd.runc.v2\"\n"
                          "runtime_engine = \"/usr/bin/runc\"\n"
                          "runtime_root = \"/run/runc\"\n"
                          "future_key = 1\n"),
            "[plugins.cri.containerd.runtimes.nvidia]\n"
            "future_key = 1\n"
            "runtime_type = \"io.containerd.runc.v2\"\n"
            "\n"
            "    [plugins.cri.containerd.runtimes.nvidia.options]\n"
            "    BinaryName = \"/usr/bin/gpuctk-runtime\"\n"
            "\n"
            "[plugins.cri.containerd.runtimes.runc]\n"
            "future_key = 1\n"
            "runtime_engine = \"/usr/bin/runc\"\n"
            "runtime_root = \"/run/runc\"\n"
            "runtime_type = \"io.containerd.runc.v2\"\n");
}

// containerd 1.x refuses runtime_engine and runtime_root beside any runtime_type but the old
// io.containerd.runtime.v1.linux (ValidatePluginConfig), so a taken-over entry of that kind loses them.
TEST(EngineContainerd, ATakenOverLinuxV1EntryLosesItsEngineAndRoot) {
  const std::string old =
      "[plugins.cri.containerd.runtimes.nvidia]\n"
      "runtime_type = \"io.containerd.runtime.v1.linux\"\n"
      "runtime_engine = \"/usr/bin/nvidia-container-runtime\"\n"
      "runtime_root = \"\"\n"
      "privileged_without_host_devices = false\n";
  EXPECT_EQ(configured_ok(old),
            "[plugins.cri.containerd.runtimes.nvidia]\n"
            "privileged_without_host_devices = false\n"
            "runtime_root = \"\"\n"
            "runtime_type = \"io.containerd.runc.v2\"\n"
            "\n"
            "    [plugins.cri.containerd.runtimes.nvidia.options]\n"
            "    BinaryName = \"/usr/bin/gpuctk-runtime\"\n");
}

// The deprecated containerd.default_runtime table with a runtime_type is containerd 1.x's default runtime
// whatever default_runtime_name says: --set-as-default could not take effect, so it is refused.
TEST(EngineContainerd, DeprecatedDefaultRuntimeTableRefusesSetAsDefault) {
  const std::string old = test::engine_data("containerd-v1.toml");
  EXPECT_EQ(error_of(old, test::shim_settings([](auto& s) { s.set_as_default = true; })),
            "plugins.cri.containerd.default_runtime.runtime_type is set (at line 7, column 20): containerd "
            "1.x makes that deprecated table its default runtime whatever default_runtime_name says; define "
            "it under plugins.cri.containerd.runtimes instead to make another runtime the default");
  toml::table after = table_of(configured_ok(old));
  EXPECT_EQ(after["plugins"][k_v1]["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"]
                .value<std::string>(),
            test::k_shim);
  // containerd 1.6's own `config default` has the table with an empty runtime_type: no refusal.
  EXPECT_TRUE(configured(test::engine_data("containerd-1.6-default.toml"),
                         test::shim_settings([](auto& s) { s.set_as_default = true; })));
}

TEST(EngineContainerd, SetAsDefault) {
  toml::table after = table_of(configured_ok(test::engine_data("containerd-1.6-default.toml"),
                                             test::shim_settings([](auto& s) { s.set_as_default = true; })));
  EXPECT_EQ((*containerd_table(after, k_v2))["default_runtime_name"].value<std::string>(), "nvidia");
}

TEST(EngineContainerd, CdiOnTheCriPluginKeepsChosenSpecDirs) {
  const auto settings = test::shim_settings([](auto& s) { s.enable_cdi = true; });
  toml::table after = table_of(configured_ok(test::engine_data("containerd-1.6-default.toml"), settings));
  EXPECT_EQ(after["plugins"][k_v2]["enable_cdi"].value<bool>(), true);
  EXPECT_EQ(*after["plugins"][k_v2]["cdi_spec_dirs"].as_array(), (toml::array{"/etc/cdi", "/var/run/cdi"}));

  const std::string chosen =
      "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\ncdi_spec_dirs = [\"/opt/cdi\"]\n";
  after = table_of(configured_ok(chosen, settings));
  EXPECT_EQ(after["plugins"][k_v2]["enable_cdi"].value<bool>(), true);
  EXPECT_EQ(*after["plugins"][k_v2]["cdi_spec_dirs"].as_array(), (toml::array{"/opt/cdi"}));
}

TEST(EngineContainerd, AnotherBinaryIsReplacedAndTheEntrysOtherKeysStay) {
  const std::string old =
      "version = 2\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
      "privileged_without_host_devices = true\n"
      "runtime_type = \"io.containerd.runc.v2\"\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
      "BinaryName = \"/usr/bin/nvidia-container-runtime\"\n"
      "SystemdCgroup = true\n";
  toml::table after = table_of(configured_ok(old));
  toml::table expected = table_of(old);
  (*containerd_table(expected, k_v2))["runtimes"]["nvidia"]["options"].as_table()->insert_or_assign(
      "BinaryName", std::string(test::k_shim));
  EXPECT_EQ(after, expected);
}

TEST(EngineContainerd, ErrorsNameTheKeyOrTheLine) {
  EXPECT_EQ(error_of(test::engine_data("containerd-malformed.toml")),
            "Error while parsing table header: expected ']', saw '\\n' at line 5, column 62");
  EXPECT_EQ(error_of("version = 4\n"), "containerd config version 4 is not supported (want 1, 2 or 3)");
  EXPECT_EQ(error_of("version = 0\n"), "containerd config version 0 is not supported (want 1, 2 or 3)");
  EXPECT_EQ(error_of("version = \"2\"\n"), "version is a string (want an integer) at line 1, column 11");
  EXPECT_EQ(error_of(test::engine_data("containerd-wrong-type.toml")),
            "plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes is a string (want a table) at line 5, "
            "column 14");
  EXPECT_EQ(error_of("version = 2\nplugins = 1\n"),
            "plugins is an integer (want a table) at line 2, column 11");
  EXPECT_EQ(
      error_of("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes]\nnvidia = [1]\n"),
      "plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia is an array (want a table) at line "
      "3, column 10");
  EXPECT_EQ(
      error_of("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
               "options = \"x\"\n"),
      "plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options is a string (want a table) "
      "at line 3, column 11");
  EXPECT_EQ(
      error_of("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndefault_runtime_name = 5\n",
               test::shim_settings([](auto& s) { s.set_as_default = true; })),
      "plugins.\"io.containerd.grpc.v1.cri\".containerd.default_runtime_name is an integer (want a string) "
      "at line 3, column 24");
  EXPECT_EQ(
      error_of("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = \"yes\"\n",
               test::shim_settings([](auto& s) { s.enable_cdi = true; })),
      "plugins.\"io.containerd.grpc.v1.cri\".enable_cdi is a string (want a boolean) at line 3, column 14");
}

TEST(EngineContainerd, SettingsAreChecked) {
  EXPECT_EQ(error_of(std::nullopt, test::shim_settings([](auto& s) { s.runtime_path = "gpuctk-runtime"; })),
            "runtime path \"gpuctk-runtime\": not an absolute path");
  EXPECT_EQ(
      error_of(std::nullopt, test::shim_settings([](auto& s) { s.name = "nv idia"; })),
      "runtime name \"nv idia\": want 1 to 63 letters, digits, '-', '_' or '.', starting and ending with a "
      "letter or digit");
}

TEST(EngineContainerd, RemoveTakesOnlyGpuctksKeys) {
  const std::string old = test::engine_data("containerd-kata.toml");
  const auto settings = test::shim_settings([](auto& s) {
    s.set_as_default = true;
    s.enable_cdi = true;
  });
  const std::string with = configured_ok(old, settings);
  auto removed = engine::removed_text(Engine::containerd, with, settings);
  ASSERT_TRUE(removed) << removed.error().message;
  toml::table expected = table_of(old);
  // default_runtime_name named gpuctk's runtime: gone (containerd's default is runc); CDI stays on.
  containerd_table(expected, k_v2)->erase("default_runtime_name");
  expected["plugins"][k_v2].as_table()->insert_or_assign("enable_cdi", true);
  expected["plugins"][k_v2].as_table()->insert_or_assign("cdi_spec_dirs",
                                                         toml::array{"/etc/cdi", "/var/run/cdi"});
  EXPECT_EQ(table_of(*removed), expected);
}

TEST(EngineContainerd, RemoveKeepsAnotherDefaultAndAFileWithoutOurRuntime) {
  const std::string old = test::engine_data("containerd-comments.toml");
  auto removed = engine::removed_text(Engine::containerd, old, test::shim_settings());
  ASSERT_TRUE(removed);
  EXPECT_EQ(*removed, old);  // nothing to remove: not even printed again

  const std::string with = configured_ok(test::engine_data("containerd-2-default.toml"));
  removed = engine::removed_text(Engine::containerd, with, test::shim_settings());
  ASSERT_TRUE(removed);
  toml::table after = table_of(*removed);
  EXPECT_EQ(after, table_of(test::engine_data("containerd-2-default.toml")));
  EXPECT_EQ((*containerd_table(after, k_v3))["default_runtime_name"].value<std::string>(), "runc");

  removed = engine::removed_text(Engine::containerd, test::engine_data("containerd-v1.toml"),
                                 test::shim_settings());
  ASSERT_TRUE(removed);
  EXPECT_EQ(*removed, test::engine_data("containerd-v1.toml"));
}

TEST(EngineContainerd, RemoveFromAVersion1File) {
  const std::string old = test::engine_data("containerd-1.6-default-v1.toml");
  const auto settings = test::shim_settings([](auto& s) { s.set_as_default = true; });
  auto removed = engine::removed_text(Engine::containerd, configured_ok(old, settings), settings);
  ASSERT_TRUE(removed) << removed.error().message;
  toml::table expected = table_of(old);
  containerd_table(expected, k_v1)->erase("default_runtime_name");  // it was "runc", containerd's default
  EXPECT_EQ(table_of(*removed), expected);
}

}  // namespace
}  // namespace gpuctk
