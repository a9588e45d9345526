// The TOML helpers of src/engine (toml_doc.cpp), and what toml++ does to a file it prints again.
#include "engine/toml_doc.hpp"

#include <gtest/gtest.h>

namespace gpuctk::engine::detail {
namespace {

TEST(EngineTomlDoc, KeyPathQuotesWhatTomlNeedsQuoted) {
  EXPECT_EQ(key_path("", "plugins"), "plugins");
  EXPECT_EQ(key_path("plugins", "io.containerd.grpc.v1.cri"), "plugins.\"io.containerd.grpc.v1.cri\"");
  EXPECT_EQ(key_path("a", "x_y-Z9"), "a.x_y-Z9");
  EXPECT_EQ(key_path("a", "say \"hi\"\\"), "a.\"say \\\"hi\\\"\\\\\"");
  EXPECT_EQ(key_path("a", ""), "a.\"\"");
}

// Comments are lost, keys sorted, strings double-quoted, integer bases and inline tables kept.
TEST(EngineTomlDoc, PrintingAgainKeepsValuesNotComments) {
  const std::string text =
      "# top\n"
      "zeta = 'literal' # trailing\n"
      "alpha = 0x1F\n"
      "inline = { b = 1, a = 2 }\n"
      "[table] # header comment\n"
      "key = \"v\"\n";
  auto doc = parse_toml(text);
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(print_toml(*doc),
            "alpha = 0x1F\n"
            "inline = { a = 2, b = 1 }\n"
            "zeta = \"literal\"\n"
            "\n"
            "[table]\n"
            "key = \"v\"\n");
  auto again = parse_toml(print_toml(*doc));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *doc);
  EXPECT_EQ(print_toml(toml::table{}), "");
}

TEST(EngineTomlDoc, ParseErrorsHaveLineAndColumn) {
  auto doc = parse_toml("a = 1\nb = \n");
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().message,
            "Error while parsing key-value pair: expected value, saw '\\n' at line 2, column 5");
  doc = parse_toml("a = 1\na = 2\n");  // a key defined twice
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().message,
            "Error while parsing key-value pair: cannot redefine existing integer 'a' at line 2, column 5");
}

TEST(EngineTomlDoc, ChildTableMakesOrRefuses) {
  toml::table doc{{"s", "x"}};
  auto made = child_table(doc, "t", "root");
  ASSERT_TRUE(made);
  EXPECT_TRUE((*made)->empty());
  EXPECT_EQ(doc["t"].as_table(), *made);
  auto refused = child_table(doc, "s", "root");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "root.s is a string (want a table)");
  auto set = set_string(doc, "s", "y", "");
  ASSERT_TRUE(set);
  EXPECT_EQ(*set, "x");
  EXPECT_EQ(doc["s"].value<std::string>(), "y");
  EXPECT_FALSE(set_string(doc, "t", "y", ""));
}

}  // namespace
}  // namespace gpuctk::engine::detail
