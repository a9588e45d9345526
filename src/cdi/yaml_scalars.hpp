#pragma once
// YAML scalar rules as CDI runtimes apply them.
//
// Runtimes read spec files with sigs.k8s.io/yaml on go-yaml v2, which resolves unquoted scalars by
// YAML 1.1: `on`/`yes`/`y` are booleans, `017` is octal, `2024-01-02` is a timestamp, and where a
// string belongs the resolved value is printed back (`name: on` -> "true", `name: 007` -> "7").
// yaml-cpp (YAML 1.2-ish) would keep the text, so the codec uses these helpers to read what the
// runtimes read, and to write strings that every reader reads the same (double-quoted, escaped).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace gpuctk::cdi {

// Success when `text` is UTF-8 without control characters other than tab, LF and CR (what YAML
// allows in a stream); else `invalid UTF-8 at line 2, column 7` / `control character 0x07 at ...`.
Result<void> check_yaml_text(std::string_view text);

// What go-yaml v2 makes of the unquoted scalar `plain` when that differs from the text itself:
// "a boolean", "null", "a number", "a timestamp"; nothing when it reads as the same string.
// A canonical decimal integer ("0", "42", "-7") reads as the same string and yields nothing.
std::optional<std::string_view> plain_scalar_reading(std::string_view plain);

// An integer in YAML 1.1 syntax: optional sign, then decimal, 0x hex, 0o or leading-0 octal, or 0b
// binary. Nothing when `text` is not such an integer or its magnitude exceeds 64 bits.
struct YamlInteger {
  bool negative = false;
  uint64_t magnitude = 0;
};
std::optional<YamlInteger> parse_yaml_integer(std::string_view text);

// Whether the plain scalar `plain` is null to YAML readers: empty, "~", "null", "Null" or "NULL".
bool is_yaml_null(std::string_view plain);

// The characters of a key the spec writer leaves unquoted (and the canonical reader reads unquoted):
// ASCII letters and digits.
constexpr bool is_plain_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// The YAML 1.1 boolean `plain` (true/false, yes/no, on/off, y/n in three cases); nothing otherwise.
std::optional<bool> parse_yaml_bool(std::string_view plain);

// `text` as a YAML double-quoted scalar: `"`, `\`, control characters, C1 controls and the Unicode
// line and paragraph separators escaped; other UTF-8 as is; invalid UTF-8 as U+FFFD.
std::string yaml_quote(std::string_view text);
// yaml_quote(text) appended to `out`.
void append_yaml_quoted(std::string& out, std::string_view text);

}  // namespace gpuctk::cdi
