#include "oci/state.hpp"

#include <gtest/gtest.h>

namespace gpuctk::oci {
namespace {

std::string error_of(std::string_view json) {
  const auto result = parse_state(json);
  return result ? "parsed" : result.error().message;
}

// Verbatim from runc 1.1.5 at prestart (Debian 12).
TEST(OciState, RuncPrestart) {
  const auto state = parse_state(
      R"({"ociVersion":"1.0.2-dev","id":"h-runc","status":"creating","pid":8808,"bundle":"/lab/bundle-hooks",)"
      R"("annotations":{"com.example.test":"hello-annotation"}})");
  ASSERT_TRUE(state) << state.error().message;
  EXPECT_EQ(state->oci_version, "1.0.2-dev");
  EXPECT_EQ(state->id, "h-runc");
  EXPECT_EQ(state->status, "creating");
  EXPECT_EQ(state->pid, 8808);
  EXPECT_EQ(state->bundle, "/lab/bundle-hooks");
  EXPECT_EQ(state->annotations,
            (std::map<std::string, std::string>{{"com.example.test", "hello-annotation"}}));
  EXPECT_EQ(state->root, "");
}

// Verbatim from crun 1.8.1 at prestart: "root" added, "created" status, other key order.
TEST(OciState, CrunPrestart) {
  const auto state = parse_state(
      R"({"ociVersion":"1.0","id":"h-crun","pid":10046,"root":"rootfs","bundle":"/lab/bundle-hooks",)"
      R"("status":"created","annotations":{"com.example.test":"hello-annotation"}})");
  ASSERT_TRUE(state) << state.error().message;
  EXPECT_EQ(state->oci_version, "1.0");
  EXPECT_EQ(state->id, "h-crun");
  EXPECT_EQ(state->status, "created");
  EXPECT_EQ(state->pid, 10046);
  EXPECT_EQ(state->bundle, "/lab/bundle-hooks");
  EXPECT_EQ(state->root, "rootfs");
  EXPECT_EQ(state->annotations.size(), 1u);
}

TEST(OciState, NoAnnotationsAndNoPid) {
  // runc without annotations; runc's poststop has no pid.
  const auto created = parse_state(
      R"({"ociVersion":"1.0.2-dev","id":"inj-runc","status":"creating","pid":11909,"bundle":"/lab/bundle-inject"})");
  ASSERT_TRUE(created);
  EXPECT_TRUE(created->annotations.empty());
  const auto stopped = parse_state(R"({"ociVersion":"1.0.2-dev","id":"h","status":"stopped","bundle":"/b"})");
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->pid, 0);
  EXPECT_EQ(stopped->status, "stopped");
}

TEST(OciState, BundlePathOfOldRuntimesAndUnknownKeys) {
  const auto old =
      parse_state(R"({"ociVersion":"1.0.0-rc2","id":"d","pid":1,"bundlePath":"/old/b","x":[1]})");
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->bundle, "/old/b");
  const auto both = parse_state(R"({"id":"d","bundlePath":"/old","bundle":"/new"})");
  ASSERT_TRUE(both);
  EXPECT_EQ(both->bundle, "/new");
}

TEST(OciState, MalformedStatesAreErrors) {
  EXPECT_EQ(error_of(""),
            "OCI state: syntax error while parsing value - unexpected end of input; expected '[', '{', or a "
            "literal at line 1, column 1");
  EXPECT_EQ(error_of("[1]"), "OCI state: the document is an array, expected an object");
  EXPECT_EQ(error_of(R"({"id":"x"})"), R"(OCI state: missing "bundle")");
  EXPECT_EQ(error_of(R"({"bundle":"/b"})"), R"(OCI state: missing "id")");
  EXPECT_EQ(error_of(R"({"id":"x","bundle":7})"), R"(OCI state: "bundle" is a number, expected a string)");
  EXPECT_EQ(error_of(R"({"id":"x","bundle":"/b","pid":"12"})"),
            R"(OCI state: "pid" is a string, expected a non-negative integer)");
  EXPECT_EQ(error_of(R"({"id":"x","bundle":"/b","pid":-1})"),
            R"(OCI state: "pid" is -1, expected a non-negative integer)");
  EXPECT_EQ(error_of(R"({"id":"x","bundle":"/b","pid":2147483648})"),
            R"(OCI state: "pid" is 2147483648, expected a non-negative integer)");
  EXPECT_EQ(error_of(R"({"id":"x","bundle":"/b","pid":1.5})"),
            R"(OCI state: "pid" is 1.5, expected a non-negative integer)");
  EXPECT_EQ(error_of(R"({"id":"x","bundle":"/b","annotations":[]})"),
            R"(OCI state: "annotations" is an array, expected an object)");
  EXPECT_EQ(error_of(R"({"id":"x","bundle":"/b","annotations":{"a":1}})"),
            R"(OCI state: annotation "a" is a number, expected a string)");
}

TEST(OciState, NullCountsAsAbsentAndLargestPidIsAccepted) {
  const auto state =
      parse_state(R"({"id":"x","bundle":"/b","pid":2147483647,"annotations":null,"root":null})");
  ASSERT_TRUE(state) << state.error().message;
  EXPECT_EQ(state->pid, 2147483647);
}

TEST(OciState, DuplicateAndCaseVariantKeysAreRefused) {
  EXPECT_EQ(error_of(R"({"id":"c","bundle":"/b","bundle":"/evil"})"),
            R"(OCI state: duplicate key "bundle" at line 1, column 25)");
  EXPECT_EQ(
      error_of(R"({"id":"c","Bundle":"/evil","bundle":"/b"})"),
      R"(OCI state: key "Bundle" is read by runc as the OCI field "bundle" (Go ignores case in keys) at line 1, column 11)");
  // crun's "root" and the old "bundlePath" are no State fields: read by gpuctk, not checked for case.
  EXPECT_EQ(error_of(R"({"id":"c","bundlePath":"/b","Root":"r"})"), "parsed");
}

}  // namespace
}  // namespace gpuctk::oci
