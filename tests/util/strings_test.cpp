#include "util/strings.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace gpuctk {
namespace {

// trim() and split() return views into their argument: a temporary std::string would be gone before the
// view is read (trim(read_file(...).value()) in a condition), so that call does not compile; a named
// string, a view and a literal do.
template <class T>
concept trimmable = requires(T&& text) { trim(std::forward<T>(text)); };
template <class T>
concept splittable = requires(T&& text) { split(std::forward<T>(text), ','); };
static_assert(!trimmable<std::string>);
static_assert(trimmable<std::string&> && trimmable<const std::string&>);
static_assert(trimmable<std::string_view> && trimmable<const char*>);
static_assert(!splittable<std::string>);
static_assert(splittable<std::string&> && splittable<const std::string&>);
static_assert(splittable<std::string_view> && splittable<const char*>);

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

TEST(Strings, ParseHexWithOrWithoutPrefix) {
  EXPECT_EQ(parse_hex("0x10de"), 0x10deu);
  EXPECT_EQ(parse_hex("0X1002"), 0x1002u);
  EXPECT_EQ(parse_hex("5B01C4A9E8F2D3C7"), 0x5b01c4a9e8f2d3c7u);
  EXPECT_EQ(parse_hex("ffffffffffffffff"), 0xffffffffffffffffu);
  EXPECT_FALSE(parse_hex(""));
  EXPECT_FALSE(parse_hex("0x"));
  EXPECT_FALSE(parse_hex("0x10de\n"));
  EXPECT_FALSE(parse_hex("-1"));
  EXPECT_FALSE(parse_hex("0x0x1"));
  EXPECT_FALSE(parse_hex("10000000000000000"));  // 65 bits
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

TEST(Strings, EscapeForLogKeepsPrintableTextAndUtf8) {
  EXPECT_EQ(escape_for_log("annotation cdi.k8s.io/x: \"a\\b\""), "annotation cdi.k8s.io/x: \"a\\b\"");
  EXPECT_EQ(escape_for_log("Grüße, 東京, 🙂"), "Grüße, 東京, 🙂");
  EXPECT_EQ(escape_for_log(""), "");
}

TEST(Strings, EscapeForLogEscapesControlsSoNoLineCanBeForged) {
  EXPECT_EQ(escape_for_log("a\nb\r\tc"), R"(a\nb\r\tc)");
  EXPECT_EQ(escape_for_log(std::string_view("\x1b[2J\x07\x7f\0z", 8)), R"(\x1b[2J\x07\x7f\x00z)");
  // C1 controls (a one-byte CSI), line/paragraph separators, bidi overrides: valid UTF-8 that terminals act
  // on.
  EXPECT_EQ(escape_for_log("\xc2\x9b"
                           "31m \xe2\x80\xa8 \xe2\x80\xae x \xe2\x81\xa6"),
            R"(\xc2\x9b31m \xe2\x80\xa8 \xe2\x80\xae x \xe2\x81\xa6)");
}

TEST(Strings, EscapeForLogEscapesInvalidUtf8ByteByByte) {
  EXPECT_EQ(escape_for_log("\xff\xfe"), R"(\xff\xfe)");
  EXPECT_EQ(escape_for_log("a\x80"
                           "b"),
            R"(a\x80b)");                                                // stray continuation byte
  EXPECT_EQ(escape_for_log("\xc0\xaf"), R"(\xc0\xaf)");                  // overlong "/"
  EXPECT_EQ(escape_for_log("\xe0\x80\xaf"), R"(\xe0\x80\xaf)");          // overlong, 3 bytes
  EXPECT_EQ(escape_for_log("\xed\xa0\x80"), R"(\xed\xa0\x80)");          // surrogate
  EXPECT_EQ(escape_for_log("\xf4\x90\x80\x80"), R"(\xf4\x90\x80\x80)");  // above U+10FFFF
  EXPECT_EQ(escape_for_log("\xe6\x9d"), R"(\xe6\x9d)");                  // truncated
  EXPECT_EQ(escape_for_log("\xe6\x9d\n"), R"(\xe6\x9d\n)");              // truncated before a newline
  EXPECT_EQ(escape_for_log("\xe6\x9d\xb1\xe6"),
            "\xe6\x9d\xb1"
            R"(\xe6)");  // resynchronises
}

TEST(Strings, EscapeForLogCutsLongMessages) {
  const std::string long_text(10000, 'a');
  EXPECT_EQ(escape_for_log(long_text), std::string(4096, 'a') + "\u2026(5904 bytes cut)");
  EXPECT_EQ(escape_for_log(std::string(4096, 'a')), std::string(4096, 'a'));
  // The limit counts escaped bytes and never splits an escape or a UTF-8 sequence.
  EXPECT_EQ(escape_for_log("ab\ncd", 4), "ab\\n\u2026(2 bytes cut)");
  EXPECT_EQ(escape_for_log("ab\ncd", 3), "ab\u2026(3 bytes cut)");
  EXPECT_EQ(escape_for_log("a\xc3\xa9", 2), "a\u2026(2 bytes cut)");
  EXPECT_EQ(escape_for_log("a\xc3\xa9", 3), "a\xc3\xa9");
}

TEST(Strings, Fnv1a64HexIsTheStandardHashInSixteenDigits) {
  // FNV-1a 64's published values: the offset basis for "", and "a", "foobar".
  EXPECT_EQ(fnv1a64_hex(""), "cbf29ce484222325");
  EXPECT_EQ(fnv1a64_hex("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(fnv1a64_hex("foobar"), "85944171f73967e8");
}

}  // namespace
}  // namespace gpuctk
