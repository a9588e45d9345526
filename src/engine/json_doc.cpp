#include "engine/json_doc.hpp"

#include "util/strings.hpp"

namespace gpuctk::engine::detail {

std::string a_type(const Json& value) {
  const std::string_view name = value.type_name();
  if (value.is_null()) {
    return std::string(name);
  }
  return (value.is_object() || value.is_array() ? "an " : "a ") + std::string(name);
}

Result<Json> parse_json_object(std::string_view text) {
  if (trim(text).empty()) {
    return Json::object();
  }
  bool too_deep = false;
  const Json::parser_callback_t limit = [&too_deep](int depth, Json::parse_event_t /*event*/,
                                                    Json& /*value*/) {
    if (depth > k_max_json_depth) {
      too_deep = true;
      return false;  // not kept
    }
    return true;
  };
  Json doc;
  try {
    doc = Json::parse(text, limit);
  } catch (const Json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 3, column 1: syntax error ..." -> from "parse".
    const std::string_view what = e.what();
    const auto start = what.find("parse error");
    return fail(std::string(start == std::string_view::npos ? what : what.substr(start)));
  }
  if (too_deep) {
    return fail("nested deeper than " + std::to_string(k_max_json_depth) + " levels");
  }
  if (!doc.is_object()) {
    return fail("the document is " + a_type(doc) + " (want an object)");
  }
  return doc;
}

}  // namespace gpuctk::engine::detail
