#pragma once
// JSON text of the OCI layer (config.json, the state on a hook's stdin): parsing with positions.
//
// nlohmann::ordered_json keeps object keys in document order, so a config read and written back
// keeps the order (and the values) of every key gpuctk does not change. Numbers are kept as parsed:
// integers (up to uint64) exactly, floats as doubles (1e3 is written back as 1000.0).

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/error.hpp"

namespace gpuctk::oci {

// The JSON document in `text`. A syntax error reads "<name>: <what> at line N, column M", e.g.
// "config.json: syntax error while parsing value - unexpected ']'; expected '[', '{', or a literal
// at line 3, column 8". Lines and columns count from 1; columns count bytes.
Result<nlohmann::ordered_json> parse_json(std::string_view text, std::string_view name);

// "an object", "a string", "a number", ... for messages like "root is a string, expected an object".
std::string json_type_phrase(const nlohmann::ordered_json& value);

}  // namespace gpuctk::oci
