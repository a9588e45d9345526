#pragma once
// Small string helpers for parsers. Everything works on views and allocates only for results.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuctk {

// `text` without leading and trailing spaces, tabs, CR and LF.
std::string_view trim(std::string_view text);

// `text` split at every `separator`; empty pieces are kept ("a,,b" -> {"a", "", "b"}).
std::vector<std::string_view> split(std::string_view text, char separator);

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

// `text` with every character that is not printable ASCII escaped, quoted: "a\nb" -> "\"a\\nb\"".
std::string quote(std::string_view text);

}  // namespace gpuctk
