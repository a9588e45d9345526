#include "util/strings.hpp"

#include <charconv>
#include <limits>

namespace gpuctk {

std::string_view trim(std::string_view text) {
  constexpr std::string_view k_space = " \t\r\n";
  const auto first = text.find_first_not_of(k_space);
  if (first == std::string_view::npos) {
    return {};
  }
  const auto last = text.find_last_not_of(k_space);
  return text.substr(first, last - first + 1);
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  for (;;) {
    const auto pos = text.find(separator);
    pieces.push_back(text.substr(0, pos));
    if (pos == std::string_view::npos) {
      return pieces;
    }
    text.remove_prefix(pos + 1);
  }
}

std::optional<uint64_t> parse_unsigned(std::string_view text) {
  uint64_t value = 0;
  if (text.empty() || text.front() < '0' || text.front() > '9') {
    return std::nullopt;
  }
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::optional<uint32_t> parse_u32(std::string_view text) {
  const auto value = parse_unsigned(text);
  if (!value || *value > std::numeric_limits<uint32_t>::max()) {
    return std::nullopt;
  }
  return static_cast<uint32_t>(*value);
}

std::string quote(std::string_view text) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20 || u >= 0x7f) {
          out += "\\x";
          out.push_back(k_hex[u >> 4]);
          out.push_back(k_hex[u & 0xf]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace gpuctk
