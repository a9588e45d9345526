#pragma once
// JSON documents of src/engine: docker's daemon.json and gpuctk's own record (replaced.hpp), through
// nlohmann's ordered_json, which keeps the document's key order. Internal to src/engine.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/error.hpp"

namespace gpuctk::engine::detail {

using Json = nlohmann::ordered_json;

// daemon.json nests 3 levels; nlohmann copies, compares and prints recursively, so a deeper document is
// refused before it is built.
inline constexpr int k_max_json_depth = 64;

// The object in `text` ("" or blanks only: an empty object, as dockerd takes an empty file). Errors:
// "parse error at line 3, column 18: syntax error ...", "nested deeper than 64 levels", "the document is
// an array (want an object)".
Result<Json> parse_json_object(std::string_view text);

// "an object", "a string", "null".
std::string a_type(const Json& value);

}  // namespace gpuctk::engine::detail
