#pragma once
// Reading and writing CDI spec files (YAML and JSON).
//
// Parsing is strict, like the reference library's UnmarshalStrict: an unknown key, a duplicate key
// or a value of the wrong type rejects the whole file. Keys match exactly. The reference (Go
// encoding/json) also accepts keys in any case ("CDIVERSION"); we deliberately do not, so that every
// file we accept is canonical and reads the same everywhere: an upper-case key is reported as an
// unknown field. A key whose value is null counts as absent (as in Go).
//
// YAML is read the way CDI runtimes read it (YAML 1.1 through sigs.k8s.io/yaml):
//  - integers may be written 0x1f, 0o17 or 017 (octal: `fileMode: 0640` is 416);
//  - booleans may be written yes/no/on/off/y/n as well as true/false;
//  - an unquoted value where a string belongs is rejected when runtimes would read it as something
//    else (`name: on` becomes "true", `name: 007` becomes "7", `cdiVersion: 0.5` is a number).
// Parsing never throws: library exceptions become errors here, with line and column where the
// YAML parser gives them.
//
// Writing is deterministic: keys in the order of the reference structs (see cdi/spec.hpp), every
// YAML string double-quoted, and no empty optional key (no `annotations: {}`, no
// `additionalGids: []`, no spec-level `containerEdits` when it is empty). Present optionals are
// written even when empty (`intelRdt: {}`, `schemata: []`): they change the minimum version.
// For every spec whose strings are valid UTF-8, parse_spec(write_spec(s, f), f) == s.

#include <cstdint>
#include <string>
#include <string_view>

#include "cdi/spec.hpp"
#include "util/error.hpp"

namespace gpuctk::cdi {

enum class Format { yaml, json };

// The format CDI uses for `path`: ".json" -> json, ".yaml" -> yaml. Anything else is an error
// (runtimes ignore other files, ".yml" included): `unsupported file extension ".yml" (CDI reads only
// .json and .yaml files)`.
Result<Format> format_for_path(std::string_view path);

// The spec in `text`. Errors:
//   no spec data                                   (empty, whitespace or comments only, or null)
//   YAML syntax error at line 3, column 5: ...     / JSON syntax error at line 1, column 9: ...
//   unknown field "hostpath" in devices[0].containerEdits.deviceNodes[1]
//   duplicate field "kind" at top level            / duplicate key "a" in annotations
//   devices[0].name: expected a string, got a list
Result<Spec> parse_spec(std::string_view text, Format format);

// Refuses a spec of more than 64 MiB (k_max_spec_bytes): "spec too large: N bytes, more than the 64 MiB a
// spec may have". parse_spec checks it; readers check the file's size before reading it.
Result<void> check_spec_size(uint64_t bytes);

// `spec` as a file: YAML starts with "---", JSON is indented by two spaces; both end with a newline.
// Invalid UTF-8 in a string is written as U+FFFD in JSON.
std::string write_spec(const Spec& spec, Format format);

}  // namespace gpuctk::cdi
