#include "util/strings.hpp"

#include <gtest/gtest.h>

namespace gpuctk {
namespace {

TEST(Strings, TrimRemovesSurroundingWhitespaceOnly) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(trim(""), "");
}

TEST(Strings, SplitKeepsEmptyPieces) {
  const auto pieces = split("a,,b,", ',');
  ASSERT_EQ(pieces.size(), 4u);
  EXPECT_EQ(pieces[0], "a");
  EXPECT_EQ(pieces[1], "");
  EXPECT_EQ(pieces[2], "b");
  EXPECT_EQ(pieces[3], "");
  EXPECT_EQ(split("", ',').size(), 1u);
}

TEST(Strings, ParseU32StopsAt32Bits) {
  EXPECT_EQ(parse_u32("0"), 0u);
  EXPECT_EQ(parse_u32("4294967295"), 4294967295u);
  EXPECT_EQ(parse_u32("4294967296"), std::nullopt);  // would wrap to 0 as a uint32_t
  EXPECT_EQ(parse_u32("-1"), std::nullopt);
  EXPECT_EQ(parse_u32(""), std::nullopt);
}

TEST(Strings, ParseUnsignedAcceptsOnlyWholeDecimalNumbers) {
  EXPECT_EQ(parse_unsigned("0"), 0u);
  EXPECT_EQ(parse_unsigned("195"), 195u);
  EXPECT_EQ(parse_unsigned("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(parse_unsigned("18446744073709551616"));
  EXPECT_FALSE(parse_unsigned(""));
  EXPECT_FALSE(parse_unsigned("-1"));
  EXPECT_FALSE(parse_unsigned("+1"));
  EXPECT_FALSE(parse_unsigned("12a"));
  EXPECT_FALSE(parse_unsigned(" 1"));
}

TEST(Strings, QuoteEscapesControlAndNonAscii) {
  EXPECT_EQ(quote("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(quote("x\ny\t\x01\xff"), R"("x\ny\t\x01\xff")");
}

}  // namespace
}  // namespace gpuctk
