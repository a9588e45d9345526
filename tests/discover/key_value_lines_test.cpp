#include "discover/key_value_lines.hpp"

#include <gtest/gtest.h>

namespace gpuctk::discover {
namespace {

TEST(KeyValueLines, SplitsAtTheFirstColonAndTrims) {
  const auto lines =
      parse_key_value_lines("Model: \t\t NVIDIA A100\n\nBus Location: \t 0000:07:00.0\r\nEmpty:\n");
  ASSERT_TRUE(lines) << lines.error().message;
  ASSERT_EQ(lines->size(), 3u);
  EXPECT_EQ((*lines)[0].line, 1u);
  EXPECT_EQ((*lines)[0].key, "Model");
  EXPECT_EQ((*lines)[0].value, "NVIDIA A100");
  EXPECT_EQ((*lines)[1].line, 3u);
  EXPECT_EQ((*lines)[1].key, "Bus Location");
  EXPECT_EQ((*lines)[1].value, "0000:07:00.0");
  EXPECT_EQ((*lines)[2].key, "Empty");
  EXPECT_EQ((*lines)[2].value, "");
}

TEST(KeyValueLines, EmptyAndBlankInputHaveNoLines) {
  EXPECT_TRUE(parse_key_value_lines("")->empty());
  EXPECT_TRUE(parse_key_value_lines("\n \t\n\r\n")->empty());
}

TEST(KeyValueLines, LinesWithoutKeyAreErrors) {
  EXPECT_EQ(parse_key_value_lines("a: 1\nb\n").error().message, "line 2: expected \"Key: value\", got \"b\"");
  EXPECT_EQ(parse_key_value_lines("  : 1\n").error().message, "line 1: expected \"Key: value\", got \": 1\"");
}

}  // namespace
}  // namespace gpuctk::discover
