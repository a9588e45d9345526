#include "oci/json_text.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "util/file.hpp"

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
  EXPECT_EQ(
      error_of(""),
      "config.json: syntax error while parsing value - unexpected end of input; expected '[', '{', or a "
      "literal at line 1, column 1");
  EXPECT_EQ(
      error_of("{}\n\n  x"),
      "config.json: syntax error while parsing value - invalid literal; last read: '{}<U+000A><U+000A>  x'; "
      "expected end of input at line 3, column 3");
}

TEST(OciJsonText, KeepsKeyOrderAndNumbers) {
  const auto doc =
      parse_json(R"({"z":1,"a":[18446744073709551615,-1,1e3,0.5],"m":{"y":null,"b":true}})", "x");
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

// parse_json builds its DOM from SAX events itself; nlohmann::ordered_json::parse is the reference. For any
// text, both give the same document, or the same syntax error (as "at line N, column M"), except for what
// parse_json refuses on purpose.
std::string reference(std::string_view text) {
  try {
    return "parsed " + nlohmann::ordered_json::parse(text).dump();
  } catch (const nlohmann::ordered_json::parse_error& e) {
    const size_t offset = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const std::string_view before = text.substr(0, offset);
    const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
    const auto newline = before.rfind('\n');
    const size_t column = newline == std::string_view::npos ? offset + 1 : offset - newline;
    const std::string what = e.what();
    return "config.json: " + what.substr(what.find(": ", what.find("parse error")) + 2) + " at line " +
           std::to_string(line) + ", column " + std::to_string(column);
  } catch (const nlohmann::ordered_json::exception& e) {
    return std::string("config.json: ") + e.what();
  }
}

std::string candidate(std::string_view text) {
  const auto result = parse_json(text, "config.json");
  return result ? "parsed " + result->dump() : result.error().message;
}

TEST(OciJsonText, SameDocumentsAndErrorsAsNlohmann) {
  for (const std::string_view text : std::initializer_list<std::string_view>{
           R"({})",
           R"([])",
           R"("s")",
           "1",
           "-0",
           "1.5e-3",
           "18446744073709551616",
           "true",
           "null",
           " \t\n{ } ",
           "\xef\xbb\xbf{\"bom\":1}",
           R"({"a":[1,{"b":[[],{}]},"\u00e9\ud83d\ude00"],"c":null})",
           R"([1,2,)",
           R"({"a" 1})",
           "{\"a\":\"\x01\"}",
           R"(["\u12"])",
           "\xff",
           "[1]x",
           std::string_view("{}\0garbage", 10),
           "{\"a\":1,}",
           "[--1]",
       }) {
    EXPECT_EQ(candidate(text), reference(text)) << text;
  }
  // Mutations of a real config: every byte replaced, inserted or removed at random places.
  const std::string config =
      read_file(std::string(GPUCTK_SOURCE_DIR) + "/tests/data/oci/runc-spec-config.json").value();
  std::mt19937 random(20240611);
  const std::string alphabet = "{}[]:,\"\\ \n0123456789.-+eEtrufalsn\x01\xc3\xa9u";
  for (int i = 0; i < 1500; ++i) {
    std::string text = config;
    for (int edits = 1 + static_cast<int>(random() % 3); edits > 0; --edits) {
      const size_t at = random() % text.size();
      const char c = alphabet[random() % alphabet.size()];
      switch (random() % 3) {
        case 0:
          text[at] = c;
          break;
        case 1:
          text.insert(at, 1, c);
          break;
        default:
          text.erase(at, 1);
      }
    }
    const std::string got = candidate(text);
    if (got.find("duplicate key") != std::string::npos) {
      continue;  // refused on purpose (a mutation can repeat a key)
    }
    EXPECT_EQ(got, reference(text)) << text;
  }
}

TEST(OciJsonText, NestingDeeperThanTheLimitIsOneErrorNotACrash) {
  // 100000 levels used to parse, then overflow the stack in a recursive copy or dump (SIGSEGV).
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(error_of(deep), "config.json: nesting deeper than 128 levels at line 1, column 129");
  std::string objects;
  for (size_t i = 0; i < 200; ++i) {
    objects += i == 0 ? "{\n\"a\":" : "{\"a\":";
  }
  objects += "1" + std::string(200, '}');
  EXPECT_EQ(error_of(objects), "config.json: nesting deeper than 128 levels at line 2, column 640");
  // 128 levels are fine, and copy and dump.
  const std::string limit = std::string(k_max_json_depth, '[') + std::string(k_max_json_depth, ']');
  const auto doc = parse_json(limit, "config.json");
  ASSERT_TRUE(doc) << doc.error().message;
  const nlohmann::ordered_json copy = *doc;
  EXPECT_EQ(copy.dump(), limit);
}

TEST(OciJsonText, DuplicateKeysAreRefusedInEveryObject) {
  // nlohmann would keep the last value (and the first position); Go merges a repeated struct. Neither is
  // what a reader of the file expects, so the document is refused.
  EXPECT_EQ(error_of(R"({"a":1,"a":2})"), R"(config.json: duplicate key "a" at line 1, column 8)");
  EXPECT_EQ(error_of("[{\"x\":[{\"b\\\"c\":1,\n  \"b\\u0022c\":2}]}]"),
            R"(config.json: duplicate key "b\"c" at line 2, column 3)");
  EXPECT_EQ(error_of(R"({"a":{"b":1},"c":{"b":1}})"), "parsed");
}

// An object of many keys (annotations are the container's) keeps its order and still refuses a duplicate,
// wherever it is. Parsing it was quadratic (100000 annotations: 11 s in the hook); it is n log n now, and
// a regression shows as a test that takes seconds.
TEST(OciJsonText, LargeObjectsKeepOrderAndRefuseDuplicatesAnywhere) {
  std::string text = "{";
  for (int i = 0; i < 100'000; ++i) {
    text += (i == 0 ? "\"k" : ",\"k") + std::to_string(i) + "\":" + std::to_string(i);
  }
  auto parsed = parse_json(text + "}", "config.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_EQ(parsed->size(), 100'000u);
  EXPECT_EQ(parsed->begin().key(), "k0");
  EXPECT_EQ((--parsed->end()).key(), "k99999");
  EXPECT_EQ((*parsed)["k5000"], 5000);
  EXPECT_EQ(error_of(text + ",\"k0\":1}"),
            "config.json: duplicate key \"k0\" at line 1, column " + std::to_string(text.size() + 2));
  EXPECT_EQ(
      error_of(
          R"({"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"g":0})"),
      R"(config.json: duplicate key "g" at line 1, column 112)");
}

TEST(OciJsonText, NumberOverflowIsAnError) {
  EXPECT_EQ(error_of("[1e500]"),
            "config.json: [json.exception.out_of_range.406] number overflow parsing '1e500'");
}

TEST(OciJsonText, GoEqualFold) {
  EXPECT_TRUE(go_equal_fold("process", "process"));
  EXPECT_TRUE(go_equal_fold("PROCESS", "process"));
  EXPECT_TRUE(go_equal_fold("proce\xc5\xbfs", "process"));  // U+017F long s
  EXPECT_TRUE(
      go_equal_fold("\xe2\x84\xaa"
                    "ernel",
                    "kernel"));  // U+212A Kelvin sign
  EXPECT_TRUE(go_equal_fold("DNSsearchlist", "DNSSearchList"));
  EXPECT_FALSE(go_equal_fold("proces", "process"));
  EXPECT_FALSE(go_equal_fold("processs", "process"));
  EXPECT_FALSE(
      go_equal_fold("pr\xc3\xb6"
                    "cess",
                    "process"));
  EXPECT_FALSE(go_equal_fold("\xe2\x84\xaa", "s"));
  EXPECT_FALSE(go_equal_fold("root_", "root"));
}

}  // namespace
}  // namespace gpuctk::oci
