#pragma once
// JSON text of the OCI layer (config.json, the state on a hook's stdin): parsing with positions, with
// resource limits, and with the view of the keys that runc has.
//
// nlohmann::ordered_json keeps object keys in document order, so a config read and written back
// keeps the order (and the values) of every key gpuctk does not change. Numbers are kept as parsed:
// integers (up to uint64) exactly, floats as doubles (1e3 is written back as 1000.0).
//
// One parser view with runc. runc decodes config.json with Go's encoding/json into the runtime-spec
// types, and that decoder differs from a plain JSON DOM in two ways an attacker who writes a bundle
// could use to make gpuctk check one config and runc run another:
//   - a key that appears twice: Go decodes both into the same field (for a struct, the second object is
//     merged into the first: {"root":{"path":"/a","readonly":true},"root":{"path":"/b"}} gives runc a
//     read-only /b), a DOM keeps only the last value;
//   - struct fields match keys ignoring case (Unicode simple folding: "Process", "PROCESS" and
//     "proce\u017fs" are all read as `process`), a DOM matches exactly.
// So parse_json refuses a document with a duplicate key in any object, and, given the shape of the Go
// types (oci/spec_shape.hpp), a key of a struct object that matches a field only when case is ignored.
// Keys of maps (annotations, sysctl, ...) are compared exactly by Go too: there "a" and "A" are two keys.
//
// Resource limits. Arrays and objects may nest at most k_max_json_depth levels: nlohmann copies, dumps and
// compares recursively, and a config.json nested 100000 deep used to overflow the stack (SIGSEGV). The
// size of the text is the caller's limit (oci::k_max_config_size for config.json).

#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/error.hpp"

namespace gpuctk::oci {

// The deepest nesting parse_json accepts; the document's own array or object is level 1. An OCI config
// nests 6 levels at most (linux.seccomp.syscalls[].args[]).
inline constexpr size_t k_max_json_depth = 128;

struct JsonShape;

// A field of a Go struct as encoding/json sees it: its JSON name and the shape of its value (nullptr for
// a scalar, a string list or anything whose keys are not checked).
struct JsonField {
  std::string_view name;
  const JsonShape* shape = nullptr;
};

// The shape of a JSON value decoded into a Go type, as far as the key check needs it.
struct JsonShape {
  enum class Kind {
    object,  // a struct: `fields` are its fields; any other key is ignored by Go and by gpuctk
    map,     // a map with string keys: `element` is the shape of each value
    array,   // a slice: `element` is the shape of each item
  };
  Kind kind = Kind::object;
  std::span<const JsonField> fields;
  const JsonShape* element = nullptr;
};

// The JSON document in `text`; `shape`, when given, is the Go type runc decodes it into. Errors read
// "<name>: <what> at line N, column M"; lines and columns count from 1, columns count bytes:
//   config.json: syntax error while parsing value - unexpected ']'; expected '[', '{', or a literal at
//     line 3, column 8
//   config.json: nesting deeper than 128 levels at line 1, column 129   (the bracket that is too deep)
//   config.json: duplicate key "env" at line 4, column 5                (the second one)
//   config.json: key "Process" is read by runc as the OCI field "process" (Go ignores case in keys) at
//     line 1, column 2
// Keys in errors are quoted (quote()): a key is never printed raw.
Result<nlohmann::ordered_json> parse_json(std::string_view text, std::string_view name,
                                          const JsonShape* shape = nullptr);

// True when Go's encoding/json matches the key `key` to the struct field named `field` (an ASCII name)
// while ignoring case: ASCII letters in either case, plus the two non-ASCII runes whose simple case
// folding is an ASCII letter, U+212A KELVIN SIGN (k) and U+017F LATIN SMALL LETTER LONG S (s).
bool go_equal_fold(std::string_view key, std::string_view field);

// "an object", "a string", "a number", ... for messages like "root is a string, expected an object".
std::string json_type_phrase(const nlohmann::ordered_json& value);

}  // namespace gpuctk::oci
