// The record of what gpuctk replaced (src/engine/replaced.cpp): its JSON both ways, the rules of
// note_runtime and note_default, and what --remove does with an entry and the default runtime.
#include "engine/replaced.hpp"

#include <gtest/gtest.h>

namespace gpuctk::engine {
namespace {

constexpr const char* k_shim = "/usr/bin/gpuctk-runtime";

ReplacedKey key(std::vector<std::string> path, std::optional<std::string> was) {
  return ReplacedKey{.key = std::move(path), .was = std::move(was)};
}

TEST(EngineReplaced, JsonBothWays) {
  Replaced replaced;
  replaced.runtimes["nvidia"] =
      ReplacedRuntime{.created = false,
                      .binary = k_shim,
                      .keys = {key({"options", "BinaryName"}, "/usr/bin/nvidia-container-runtime"),
                               key({"runtime_engine"}, std::nullopt)}};
  replaced.runtimes["gpu"] = ReplacedRuntime{.created = true, .binary = "/opt/gpuctk-runtime", .keys = {}};
  replaced.default_runtime = ReplacedDefault{.set = "nvidia", .was = std::nullopt};
  const std::string text = print_replaced(replaced);
  EXPECT_EQ(text,
            "{\n"
            "    \"runtimes\": {\n"
            "        \"gpu\": {\n"
            "            \"created\": true,\n"
            "            \"binary\": \"/opt/gpuctk-runtime\",\n"
            "            \"keys\": []\n"
            "        },\n"
            "        \"nvidia\": {\n"
            "            \"created\": false,\n"
            "            \"binary\": \"/usr/bin/gpuctk-runtime\",\n"
            "            \"keys\": [\n"
            "                {\n"
            "                    \"key\": [\n"
            "                        \"options\",\n"
            "                        \"BinaryName\"\n"
            "                    ],\n"
            "                    \"was\": \"/usr/bin/nvidia-container-runtime\"\n"
            "                },\n"
            "                {\n"
            "                    \"key\": [\n"
            "                        \"runtime_engine\"\n"
            "                    ],\n"
            "                    \"was\": null\n"
            "                }\n"
            "            ]\n"
            "        }\n"
            "    },\n"
            "    \"default_runtime\": {\n"
            "        \"set\": \"nvidia\",\n"
            "        \"was\": null\n"
            "    }\n"
            "}\n");
  auto parsed = parse_replaced(text);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, replaced);
  EXPECT_EQ(print_replaced(Replaced{}), "{}\n");
}

TEST(EngineReplaced, ParseErrors) {
  const auto error_of = [](std::string_view text) {
    auto parsed = parse_replaced(text);
    return parsed ? std::string("(no error)") : parsed.error().message;
  };
  EXPECT_EQ(error_of("{"),
            "parse error at line 1, column 2: syntax error while parsing object key - unexpected "
            "end of input; expected string literal");
  EXPECT_EQ(error_of(R"({"runtimes": []})"), "not a record of gpuctk's (runtimes is not an object)");
  EXPECT_EQ(error_of(R"({"runtimes": {"nvidia": {"created": true}}})"),
            "not a record of gpuctk's (runtimes.nvidia.binary is not a string)");
  EXPECT_EQ(
      error_of(R"({"runtimes": {"nvidia": {"created": false, "binary": "/x", "keys": [{"key": []}]}}})"),
      "not a record of gpuctk's (runtimes.nvidia.keys[0].key is not a non-empty array)");
  EXPECT_EQ(
      error_of(R"({"runtimes": {"nvidia": {"created": false, "binary": "/x", "keys": [{"key": [1]}]}}})"),
      "not a record of gpuctk's (runtimes.nvidia.keys[0].key is not an array of strings)");
  EXPECT_EQ(
      error_of(
          R"({"runtimes": {"nvidia": {"created": false, "binary": "/x", "keys": [{"key": ["a"], "was": 1}]}}})"),
      "not a record of gpuctk's (runtimes.nvidia.keys[0].was is not a string or null)");
  EXPECT_EQ(error_of(R"({"default_runtime": {"was": "runc"}})"),
            "not a record of gpuctk's (default_runtime.set is not a string)");
  EXPECT_EQ(error_of(std::string(100, '[') + std::string(100, ']')), "nested deeper than 64 levels");
}

TEST(EngineReplaced, ANewEntryIsCreatedAndStaysSoWhileItIsGpuctks) {
  Replaced replaced;
  note_runtime(replaced, "nvidia", k_shim, std::nullopt, {});
  const ReplacedRuntime created{.created = true, .binary = k_shim, .keys = {}};
  EXPECT_EQ(replaced.runtimes.at("nvidia"), created);
  // A later run that moves the shim: still gpuctk's entry, still created.
  note_runtime(replaced, "nvidia", "/opt/gpuctk-runtime", std::string(k_shim), {key({"runtime_type"}, "x")});
  EXPECT_EQ(replaced.runtimes.at("nvidia"),
            (ReplacedRuntime{.created = true, .binary = "/opt/gpuctk-runtime", .keys = {}}));
  EXPECT_EQ(runtime_undo(replaced, "nvidia", "/opt/gpuctk-runtime"), RuntimeUndo::erase);
  EXPECT_EQ(runtime_undo(replaced, "nvidia", "/usr/bin/other"), RuntimeUndo::leave);
  EXPECT_EQ(runtime_undo(replaced, "other", "/usr/bin/other"), RuntimeUndo::erase);  // no record: as always
}

TEST(EngineReplaced, ATakenOverEntryKeepsTheEarliestValues) {
  Replaced replaced;
  note_runtime(replaced, "nvidia", k_shim, "/usr/bin/nvidia-container-runtime",
               {key({"options", "BinaryName"}, "/usr/bin/nvidia-container-runtime")});
  note_runtime(replaced, "nvidia", k_shim, std::string(k_shim),
               {key({"options", "BinaryName"}, k_shim), key({"runtime_root"}, "/run/x")});
  EXPECT_EQ(replaced.runtimes.at("nvidia"),
            (ReplacedRuntime{.created = false,
                             .binary = k_shim,
                             .keys = {key({"options", "BinaryName"}, "/usr/bin/nvidia-container-runtime"),
                                      key({"runtime_root"}, "/run/x")}}));
  EXPECT_EQ(runtime_undo(replaced, "nvidia", std::string(k_shim)), RuntimeUndo::restore);
  // Pointed elsewhere since, then configured again: what is taken over now is that.
  note_runtime(replaced, "nvidia", k_shim, "/opt/other", {key({"options", "BinaryName"}, "/opt/other")});
  EXPECT_EQ(replaced.runtimes.at("nvidia").keys, (std::vector{key({"options", "BinaryName"}, "/opt/other")}));
}

// With no record, an entry that already runs the shim counts as gpuctk's own (deleted by --remove, as
// before the record existed); one that runs anything else is taken over.
TEST(EngineReplaced, WithoutARecord) {
  Replaced replaced;
  note_runtime(replaced, "nvidia", k_shim, std::string(k_shim), {});
  EXPECT_TRUE(replaced.runtimes.at("nvidia").created);
  replaced = {};
  note_runtime(replaced, "nvidia", k_shim, "", {key({"runtime_type"}, std::nullopt)});
  EXPECT_FALSE(replaced.runtimes.at("nvidia").created);
}

TEST(EngineReplaced, TheDefaultRuntime) {
  Replaced replaced;
  EXPECT_EQ(default_undo(replaced, "nvidia"), std::nullopt);
  note_default(replaced, "nvidia", "crun");
  EXPECT_EQ(default_undo(replaced, "nvidia"), "crun");
  EXPECT_EQ(default_undo(replaced, "gpu"), std::nullopt);
  Replaced rest = without(replaced, "nvidia");
  EXPECT_TRUE(rest.empty());
  note_runtime(replaced, "gpu", k_shim, std::nullopt, {});
  rest = without(replaced, "nvidia");
  EXPECT_FALSE(rest.default_runtime);
  EXPECT_EQ(rest.runtimes.size(), 1U);
}

}  // namespace
}  // namespace gpuctk::engine
