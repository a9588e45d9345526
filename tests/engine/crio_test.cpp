// CRI-O's drop-in (src/engine/crio.cpp): the runtime handler, the default runtime, CDI (nothing to write),
// another drop-in kept, removal down to an empty file.
#include <gtest/gtest.h>

#include "engine/configure.hpp"
#include "engine/data.hpp"
#include "engine/toml_doc.hpp"

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

}  // namespace
}  // namespace gpuctk
