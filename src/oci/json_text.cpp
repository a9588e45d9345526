#include "oci/json_text.hpp"

#include <algorithm>

namespace gpuctk::oci {

namespace {

// nlohmann's parse_error::what() is "[json.exception.parse_error.101] parse error at line 1,
// column 2: syntax error while ...". The part after the position is what we keep.
std::string_view error_detail(std::string_view what) {
  const auto start = what.find("parse error");
  if (start == std::string_view::npos) {
    return what;
  }
  const auto colon = what.find(": ", start);
  return colon == std::string_view::npos ? what : what.substr(colon + 2);
}

}  // namespace

Result<nlohmann::ordered_json> parse_json(std::string_view text, std::string_view name) {
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::ordered_json::parse_error& e) {
    // e.byte is the 1-based offset of the byte that failed (text.size() + 1 at end of input).
    const size_t offset = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const std::string_view before = text.substr(0, offset);
    const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
    const auto last_newline = before.rfind('\n');
    const size_t column = last_newline == std::string_view::npos ? offset + 1 : offset - last_newline;
    return fail(std::string(name) + ": " + std::string(error_detail(e.what())) + " at line " +
                std::to_string(line) + ", column " + std::to_string(column));
  } catch (const nlohmann::ordered_json::exception& e) {
    return fail(std::string(name) + ": " + e.what());
  }
}

std::string json_type_phrase(const nlohmann::ordered_json& value) {
  const std::string_view type = value.type_name();
  const bool vowel = !type.empty() && std::string_view("aeiou").find(type.front()) != std::string_view::npos;
  return std::string(vowel ? "an " : "a ").append(type);
}

}  // namespace gpuctk::oci
