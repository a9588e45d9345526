#include "oci/json_text.hpp"

#include <gtest/gtest.h>

namespace gpuctk::oci {
namespace {

std::string error_of(std::string_view text) {
  const auto result = parse_json(text, "config.json");
  return result ? "parsed" : result.error().message;
}

TEST(OciJsonText, SyntaxErrorsGiveLineAndColumnOfTheOffendingByte) {
  EXPECT_EQ(error_of("{bad"),
            "config.json: syntax error while parsing object key - invalid literal; last read: '{b'; "
            "expected string literal at line 1, column 2");
  EXPECT_EQ(error_of("{\n  \"a\": 1,\n  \"b\": ]\n}"),
            "config.json: syntax error while parsing value - unexpected ']'; expected '[', '{', or a literal "
            "at line 3, column 8");
  EXPECT_EQ(error_of("{\"a\":1"),
            "config.json: syntax error while parsing object - unexpected end of input; expected '}' "
            "at line 1, column 7");
  EXPECT_EQ(error_of(""),
            "config.json: syntax error while parsing value - unexpected end of input; expected '[', '{', or a "
            "literal at line 1, column 1");
  EXPECT_EQ(error_of("{}\n\n  x"),
            "config.json: syntax error while parsing value - invalid literal; last read: '{}<U+000A><U+000A>  x'; "
            "expected end of input at line 3, column 3");
}

TEST(OciJsonText, KeepsKeyOrderAndNumbers) {
  const auto doc = parse_json(R"({"z":1,"a":[18446744073709551615,-1,1e3,0.5],"m":{"y":null,"b":true}})", "x");
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc->dump(), R"({"z":1,"a":[18446744073709551615,-1,1000.0,0.5],"m":{"y":null,"b":true}})");
}

TEST(OciJsonText, TypePhrases) {
  using Json = nlohmann::ordered_json;
  EXPECT_EQ(json_type_phrase(Json::object()), "an object");
  EXPECT_EQ(json_type_phrase(Json::array()), "an array");
  EXPECT_EQ(json_type_phrase(Json("x")), "a string");
  EXPECT_EQ(json_type_phrase(Json(1)), "a number");
  EXPECT_EQ(json_type_phrase(Json(true)), "a boolean");
  EXPECT_EQ(json_type_phrase(Json()), "a null");
}

}  // namespace
}  // namespace gpuctk::oci
