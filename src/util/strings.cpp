#include "util/strings.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include "util/utf8.hpp"

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

std::optional<uint64_t> parse_hex(std::string_view text) {
  if (text.starts_with("0x") || text.starts_with("0X")) {
    text.remove_prefix(2);
  }
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::string quote(std::string_view text) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
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

namespace {

// Valid code points that a terminal or log viewer acts on rather than prints.
bool is_active_code_point(char32_t c) {
  return (c >= 0x80 && c <= 0x9f) ||      // C1 controls (0x9b is a one-byte CSI)
         c == 0x2028 || c == 0x2029 ||    // line and paragraph separators
         (c >= 0x202a && c <= 0x202e) ||  // bidirectional embeddings and overrides
         (c >= 0x2066 && c <= 0x2069);    // bidirectional isolates
}

void append_hex_escapes(std::string& out, std::string_view bytes) {
  static constexpr char k_hex[] = "0123456789abcdef";
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\x";
        out.push_back(k_hex[u >> 4]);
        out.push_back(k_hex[u & 0xf]);
    }
  }
}

}  // namespace

std::string escape_for_log(std::string_view text, size_t max_bytes) {
  const bool plain = std::ranges::all_of(text, [](char c) { return c >= 0x20 && c < 0x7f; });
  if (plain && text.size() <= max_bytes) {
    return std::string(text);  // the common case: nothing to escape or cut
  }
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 32);
  std::string piece;
  size_t pos = 0;
  while (pos < text.size()) {
    const auto u = static_cast<unsigned char>(text[pos]);
    size_t length = 1;
    piece.clear();
    if (u >= 0x20 && u < 0x7f) {
      piece.push_back(text[pos]);
    } else if (u < 0x80) {
      append_hex_escapes(piece, text.substr(pos, 1));  // C0 control or DEL
    } else {
      char32_t code_point = 0;
      length = utf8_sequence_length(text.substr(pos), code_point);
      if (length == 0) {
        length = 1;  // not UTF-8: this byte alone, then resynchronise on the next one
        append_hex_escapes(piece, text.substr(pos, 1));
      } else if (is_active_code_point(code_point)) {
        append_hex_escapes(piece, text.substr(pos, length));
      } else {
        piece.append(text.substr(pos, length));
      }
    }
    if (out.size() + piece.size() > max_bytes) {
      break;
    }
    out += piece;
    pos += length;
  }
  if (pos < text.size()) {
    out += "\u2026(" + std::to_string(text.size() - pos) + " bytes cut)";
  }
  return out;
}

std::string fnv1a64_hex(std::string_view bytes) {
  uint64_t hash = 14695981039346656037ULL;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (size_t i = 16; i-- > 0; hash >>= 4U) {
    out[i] = k_digits[hash & 0xfU];
  }
  return out;
}

}  // namespace gpuctk
