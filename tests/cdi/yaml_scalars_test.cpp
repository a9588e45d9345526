#include "cdi/yaml_scalars.hpp"

#include <gtest/gtest.h>

namespace gpuctk::cdi {
namespace {

std::string reading(std::string_view plain) {
  const auto r = plain_scalar_reading(plain);
  return r ? std::string(*r) : "string";
}

std::string integer(std::string_view text) {
  const auto r = parse_yaml_integer(text);
  return r ? (r->negative ? "-" : "") + std::to_string(r->magnitude) : "none";
}

TEST(CdiYamlScalarsTest, PlainScalarsThatStayStrings) {
  for (const char* text :
       {"gpu0", "0", "42", "-7", "4:1", "0:1", "0.5.0", "nvidia.com/gpu", "GPU-1a2b", "A=1",
        "18446744073709551615", "-9223372036854775808", "yesno", "onion", "2024-1-2x", "1-2"}) {
    EXPECT_EQ(reading(text), "string") << text;
  }
}

TEST(CdiYamlScalarsTest, PlainScalarsThatRuntimesReadAsSomethingElse) {
  for (const char* text : {"on", "Off", "YES", "n", "y", "true", "False"}) {
    EXPECT_EQ(reading(text), "a boolean") << text;
  }
  for (const char* text : {"~", "null", "NULL"}) {
    EXPECT_EQ(reading(text), "null") << text;
  }
  for (const char* text : {"0.5", "1.0", "007", "08", "+5", "-0", "0x1f", "0o17", "0b101", "1_000", "1e3",
                           ".5", ".inf", "-.Inf", ".NaN", "18446744073709551616", "-9223372036854775809"}) {
    EXPECT_EQ(reading(text), "a number") << text;
  }
  for (const char* text : {"2024-01-02", "2024-1-2", "2024-01-02T10:00:00Z", "2024-01-02 10:00"}) {
    EXPECT_EQ(reading(text), "a timestamp") << text;
  }
}

TEST(CdiYamlScalarsTest, IntegersInYaml11Syntax) {
  for (const auto& [in, want] : std::vector<std::pair<std::string, std::string>>{
           {"384", "384"},
           {"0640", "416"},  // octal, as CDI runtimes read fileMode: 0640
           {"0o640", "416"},
           {"0x1F", "31"},
           {"0b101", "5"},
           {"-12", "-12"},
           {"+12", "12"},
           {"0", "0"},
           {"18446744073709551615", "18446744073709551615"},
       }) {
    EXPECT_EQ(integer(in), want) << in;
  }
  for (const char* bad : {"", "-", "0x", "08", "1.0", "1e3", "12a", "--1", "+-1", "0x-1",
                          "18446744073709551616", "1_000", " 1"}) {
    EXPECT_EQ(integer(bad), "none") << bad;
  }
}

TEST(CdiYamlScalarsTest, Booleans) {
  EXPECT_EQ(parse_yaml_bool("true"), true);
  EXPECT_EQ(parse_yaml_bool("On"), true);
  EXPECT_EQ(parse_yaml_bool("y"), true);
  EXPECT_EQ(parse_yaml_bool("FALSE"), false);
  EXPECT_EQ(parse_yaml_bool("no"), false);
  EXPECT_EQ(parse_yaml_bool("tRue"), std::nullopt);
  EXPECT_EQ(parse_yaml_bool("1"), std::nullopt);
}

TEST(CdiYamlScalarsTest, QuotesStringsSoEveryReaderReadsTheSame) {
  EXPECT_EQ(yaml_quote(""), R"("")");
  EXPECT_EQ(yaml_quote("0"), R"("0")");
  EXPECT_EQ(yaml_quote(R"(a "b" \c)"), R"("a \"b\" \\c")");
  EXPECT_EQ(yaml_quote("tab\tnl\ncr\r\x01\x7f"), R"("tab\tnl\ncr\x0D\x01\x7F")");
  EXPECT_EQ(yaml_quote("caf\xc3\xa9 \xe6\x97\xa5"), "\"caf\xc3\xa9 \xe6\x97\xa5\"");  // UTF-8 as is
  EXPECT_EQ(yaml_quote("\xc2\x85|\xe2\x80\xa8|\xe2\x80\xa9|\xef\xbb\xbf"), R"("\x85|\u2028|\u2029|\uFEFF")");
  EXPECT_EQ(yaml_quote("bad\xff\xc3"), R"("bad\uFFFD\uFFFD")");
  EXPECT_EQ(yaml_quote("\xed\xa0\x80"), R"("\uFFFD\uFFFD\uFFFD")");  // a UTF-16 surrogate is not UTF-8
}

TEST(CdiYamlScalarsTest, ChecksTheTextOfAStream) {
  EXPECT_TRUE(check_yaml_text("a: \"caf\xc3\xa9\"\r\n\tb: c\n"));
  const auto bad_utf8 = check_yaml_text("a: 1\nb: \"x\xff\"\n");
  ASSERT_FALSE(bad_utf8);
  EXPECT_EQ(bad_utf8.error().message, "invalid UTF-8 at line 2, column 6");
  const auto control = check_yaml_text("a: \"\x07\"");
  ASSERT_FALSE(control);
  EXPECT_EQ(control.error().message, "disallowed character U+0007 at line 1, column 5");
  const auto nul = check_yaml_text(std::string_view("a\0", 2));
  ASSERT_FALSE(nul);
  EXPECT_EQ(nul.error().message, "disallowed character U+0000 at line 1, column 2");
}

}  // namespace
}  // namespace gpuctk::cdi
