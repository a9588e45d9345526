#pragma once
// Small string helpers for parsers. Everything works on views and allocates only for results.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuctk {

// `text` without leading and trailing spaces, tabs, CR and LF.
std::string_view trim(std::string_view text);
// The view would point into a string destroyed at the end of the full expression (trim(read_file(...)
// .value()) in a condition, read after it): keep the string in a variable first.
template <class String>
  requires std::same_as<String, std::string>
std::string_view trim(String&& text) = delete;

// `text` split at every `separator`; empty pieces are kept ("a,,b" -> {"a", "", "b"}).
std::vector<std::string_view> split(std::string_view text, char separator);
// The pieces would point into a string destroyed at the end of the full expression (in a range-for
// over split(read_file(...)), before the loop body runs): keep the string in a variable first.
template <class String>
  requires std::same_as<String, std::string>
std::vector<std::string_view> split(String&& text, char separator) = delete;

// The items (strings or views) with `separator` between them: join({"a", "b"}, ", ") -> "a, b".
template <class Range>
std::string join(const Range& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) {
      out += separator;
    }
    out += item;
  }
  return out;
}

// The unsigned decimal number that is all of `text`, or nothing (empty, sign, junk or overflow).
std::optional<uint64_t> parse_unsigned(std::string_view text);

// parse_unsigned limited to 32 bits (device numbers, instance ids): nothing above UINT32_MAX.
std::optional<uint32_t> parse_u32(std::string_view text);

// The unsigned hexadecimal number that is all of `text`, with or without a "0x"/"0X" prefix (sysfs writes
// "0x10de", amdgpu's unique_id bare digits), or nothing (empty, junk or overflow).
std::optional<uint64_t> parse_hex(std::string_view text);

// `text` with every character that is not printable ASCII escaped, quoted: "a\nb" -> "\"a\\nb\"".
std::string quote(std::string_view text);

// The most bytes of one message that reach a log line or stderr (escapes included), before the
// "…(N bytes cut)" marker: a container-controlled string must not flood the engine's log.
inline constexpr size_t k_max_log_message = 4096;

// `text` made safe to print as (part of) one line of a log file or a terminal. This is the one escaping
// step of everything that reaches a log: untrusted strings (annotation keys, env values, mount
// destinations, CDI names) are escaped here, at the boundary, not where messages are built.
//   - C0 controls and DEL become \n, \r, \t or \xNN: no forged line breaks, no terminal escape
//     sequences;
//   - bytes that are not valid UTF-8 (stray continuation bytes, overlong forms, surrogates, > U+10FFFF,
//     truncated sequences) become \xNN, one per byte;
//   - valid UTF-8 that a terminal or log viewer acts on also becomes \xNN per byte: C1 controls
//     (U+0080-U+009F, e.g. the one-byte CSI), the line and paragraph separators U+2028/U+2029 and the
//     bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069);
//   - everything else, printable ASCII and UTF-8 included, is kept as is. Quotes and backslashes are
//     kept: they cannot end a line, and the strings that quote() wrapped are already escaped.
// The result holds at most `max_bytes` bytes of escaped text (never half an escape or a UTF-8
// sequence), then "…(N bytes cut)" with N the number of input bytes left out.
std::string escape_for_log(std::string_view text, size_t max_bytes = k_max_log_message);

// FNV-1a, 64 bits, as 16 lower-case hex digits: a short fingerprint of a name, or a checksum against cut
// or edited files; not against someone who can write the file and compute it again.
std::string fnv1a64_hex(std::string_view bytes);

}  // namespace gpuctk
