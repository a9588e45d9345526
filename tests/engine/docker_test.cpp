// docker's daemon.json (src/engine/docker.cpp): key order kept, runtimes, default-runtime, features.cdi,
// errors, removal.
#include <gtest/gtest.h>

#include "engine/configure.hpp"
#include "engine/data.hpp"

namespace gpuctk {
namespace {

using engine::Engine;

std::string configured_ok(const std::optional<std::string>& old,
                          const engine::RuntimeSettings& settings = test::shim_settings()) {
  auto text = engine::configured_text(Engine::docker, old, settings);
  EXPECT_TRUE(text) << text.error().message;
  return text.value_or("");
}

std::string error_of(const std::string& old,
                     const engine::RuntimeSettings& settings = test::shim_settings()) {
  auto text = engine::configured_text(Engine::docker, old, settings);
  EXPECT_FALSE(text);
  return text ? std::string("(no error)") : text.error().message;
}

std::string removed_ok(const std::string& old) {
  auto text = engine::removed_text(Engine::docker, old, test::shim_settings());
  EXPECT_TRUE(text) << text.error().message;
  return text.value_or("(error)");
}

constexpr std::string_view k_new =
    "{\n"
    "    \"runtimes\": {\n"
    "        \"nvidia\": {\n"
    "            \"path\": \"/usr/bin/gpuctk-runtime\"\n"
    "        }\n"
    "    }\n"
    "}\n";

TEST(EngineDocker, NewOrEmptyFile) {
  EXPECT_EQ(configured_ok(std::nullopt), k_new);
  EXPECT_EQ(configured_ok(""), k_new);
  EXPECT_EQ(configured_ok(" \n"), k_new);
  EXPECT_EQ(configured_ok("{}"), k_new);
}

TEST(EngineDocker, KeepsEveryKeyInItsPlace) {
  EXPECT_EQ(configured_ok(test::engine_data("daemon-typical.json")),
            "{\n"
            "    \"log-driver\": \"json-file\",\n"
            "    \"log-opts\": {\n"
            "        \"max-size\": \"10m\",\n"
            "        \"max-file\": \"3\"\n"
            "    },\n"
            "    \"storage-driver\": \"overlay2\",\n"
            "    \"registry-mirrors\": [\n"
            "        \"https://mirror.example.com\"\n"
            "    ],\n"
            "    \"exec-opts\": [\n"
            "        \"native.cgroupdriver=systemd\"\n"
            "    ],\n"
            "    \"runtimes\": {\n"
            "        \"nvidia\": {\n"
            "            \"path\": \"/usr/bin/gpuctk-runtime\"\n"
            "        }\n"
            "    }\n"
            "}\n");
}

TEST(EngineDocker, SetAsDefaultAndCdi) {
  const std::string old =
      R"({"features": {"buildkit": true}, "runtimes": {"kata": {"path": "/usr/bin/kata-runtime"}}})";
  EXPECT_EQ(configured_ok(old, test::shim_settings([](auto& s) {
                            s.set_as_default = true;
                            s.enable_cdi = true;
                          })),
            "{\n"
            "    \"features\": {\n"
            "        \"buildkit\": true,\n"
            "        \"cdi\": true\n"
            "    },\n"
            "    \"runtimes\": {\n"
            "        \"kata\": {\n"
            "            \"path\": \"/usr/bin/kata-runtime\"\n"
            "        },\n"
            "        \"nvidia\": {\n"
            "            \"path\": \"/usr/bin/gpuctk-runtime\"\n"
            "        }\n"
            "    },\n"
            "    \"default-runtime\": \"nvidia\"\n"
            "}\n");
}

TEST(EngineDocker, NvidiaCtksEntryGetsOurPathAndKeepsItsArgs) {
  EXPECT_EQ(configured_ok(test::engine_data("daemon-nvidia-ctk.json")),
            "{\n"
            "    \"runtimes\": {\n"
            "        \"nvidia\": {\n"
            "            \"args\": [],\n"
            "            \"path\": \"/usr/bin/gpuctk-runtime\"\n"
            "        }\n"
            "    }\n"
            "}\n");
}

TEST(EngineDocker, AlreadyConfiguredIsUnchangedToTheByte) {
  const std::string compact =
      R"({"runtimes":{"nvidia":{"path":"/usr/bin/gpuctk-runtime"}},"default-runtime":"nvidia","features":{"cdi":true}})";
  EXPECT_EQ(configured_ok(compact, test::shim_settings([](auto& s) {
                            s.set_as_default = true;
                            s.enable_cdi = true;
                          })),
            compact);
  const std::string once = configured_ok(test::engine_data("daemon-typical.json"));
  EXPECT_EQ(configured_ok(once), once);
}

TEST(EngineDocker, ErrorsNameTheKeyOrTheLine) {
  EXPECT_EQ(
      error_of(test::engine_data("daemon-malformed.json")),
      "parse error at line 3, column 18: syntax error while parsing object - unexpected string literal; "
      "expected '}'");
  EXPECT_EQ(error_of(test::engine_data("daemon-wrong-type.json")), "runtimes is a string (want an object)");
  EXPECT_EQ(error_of(R"({"runtimes": {"nvidia": ["x"]}})"), "runtimes.nvidia is an array (want an object)");
  EXPECT_EQ(error_of(R"({"runtimes": {"nvidia": {"path": 1}}})"),
            "runtimes.nvidia.path is a number (want a string)");
  EXPECT_EQ(
      error_of(R"({"default-runtime": null})", test::shim_settings([](auto& s) { s.set_as_default = true; })),
      "default-runtime is null (want a string)");
  EXPECT_EQ(error_of(R"({"features": []})", test::shim_settings([](auto& s) { s.enable_cdi = true; })),
            "features is an array (want an object)");
  EXPECT_EQ(
      error_of(R"({"features": {"cdi": "yes"}})", test::shim_settings([](auto& s) { s.enable_cdi = true; })),
      "features.cdi is a string (want a boolean)");
  EXPECT_EQ(error_of("[]"), "the document is an array (want an object)");
  EXPECT_EQ(error_of(std::string(100, '[') + std::string(100, ']')), "nested deeper than 64 levels");
}

TEST(EngineDocker, RemoveTakesOnlyGpuctksKeys) {
  const std::string old =
      R"({"default-runtime": "nvidia", "features": {"cdi": true}, "runtimes": {"nvidia": {"path": "/x"}, "kata": {"path": "/k"}}, "debug": true})";
  EXPECT_EQ(removed_ok(old),
            "{\n"
            "    \"features\": {\n"
            "        \"cdi\": true\n"
            "    },\n"
            "    \"runtimes\": {\n"
            "        \"kata\": {\n"
            "            \"path\": \"/k\"\n"
            "        }\n"
            "    },\n"
            "    \"debug\": true\n"
            "}\n");
  const std::string other_default = R"({"default-runtime": "runc"})";
  EXPECT_EQ(removed_ok(other_default), other_default);
  auto refused = engine::removed_text(Engine::docker, "{", test::shim_settings());
  ASSERT_FALSE(refused);
}

}  // namespace
}  // namespace gpuctk
