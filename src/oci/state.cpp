#include "oci/state.hpp"

#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "oci/json_text.hpp"
#include "oci/spec_shape.hpp"

namespace gpuctk::oci {

namespace {

using Json = nlohmann::ordered_json;

std::unexpected<Error> state_error(std::string_view message) {
  return fail("OCI state: " + std::string(message));
}

// doc[key] into `out` when present and not null; a non-string is an error.
Result<void> read_string(const Json& doc, const char* key, std::string& out) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) {
    return {};
  }
  if (!it->is_string()) {
    // Built by appending: g++ 12 at -O3 warns falsely (-Wrestrict) on "literal" + std::string&&.
    std::string message = "\"";
    message.append(key).append("\" is ").append(json_type_phrase(*it)).append(", expected a string");
    return state_error(message);
  }
  out = it->get<std::string>();
  return {};
}

Result<void> read_pid(const Json& doc, int& out) {
  const auto it = doc.find("pid");
  if (it == doc.end() || it->is_null()) {
    return {};
  }
  int64_t value = -1;
  if (it->is_number_unsigned()) {
    value = it->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int>::max()) ? it->get<int64_t>()
                                                                                          : -1;
  } else if (it->is_number_integer()) {
    value = it->get<int64_t>();
  }
  if (value < 0 || value > std::numeric_limits<int>::max()) {
    // A number is shown as written ("-1", "1.5"), anything else by its type.
    const std::string what = it->is_number() ? it->dump() : json_type_phrase(*it);
    return state_error("\"pid\" is " + what + ", expected a non-negative integer");
  }
  out = static_cast<int>(value);
  return {};
}

Result<void> read_annotations(const Json& doc, std::map<std::string, std::string>& out) {
  const auto it = doc.find("annotations");
  if (it == doc.end() || it->is_null()) {
    return {};
  }
  if (!it->is_object()) {
    return state_error("\"annotations\" is " + json_type_phrase(*it) + ", expected an object");
  }
  for (const auto& [key, value] : it->items()) {
    if (!value.is_string()) {
      return state_error("annotation \"" + key + "\" is " + json_type_phrase(value) + ", expected a string");
    }
    out[key] = value.get<std::string>();
  }
  return {};
}

}  // namespace

Result<State> parse_state(std::string_view json) {
  GPUCTK_TRY_ASSIGN(const auto doc, parse_json(json, "OCI state", &state_shape()));
  if (!doc.is_object()) {
    return state_error("the document is " + json_type_phrase(doc) + ", expected an object");
  }
  State state;
  std::string bundle_path;
  for (const auto& [key, out] : {std::pair<const char*, std::string*>{"ociVersion", &state.oci_version},
                                 {"id", &state.id},
                                 {"status", &state.status},
                                 {"bundle", &state.bundle},
                                 {"bundlePath", &bundle_path},
                                 {"root", &state.root}}) {
    GPUCTK_TRY(read_string(doc, key, *out));
  }
  GPUCTK_TRY(read_pid(doc, state.pid));
  GPUCTK_TRY(read_annotations(doc, state.annotations));
  if (state.bundle.empty()) {
    state.bundle = std::move(bundle_path);  // OCI before 1.0 (docker < 17.06)
  }
  if (state.id.empty()) {
    return state_error("missing \"id\"");
  }
  if (state.bundle.empty()) {
    return state_error("missing \"bundle\"");
  }
  return state;
}

}  // namespace gpuctk::oci
