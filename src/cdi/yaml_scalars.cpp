#include "cdi/yaml_scalars.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <span>

namespace gpuctk::cdi {

namespace {

struct CodePoint {
  char32_t value;
  size_t length;
};

// The UTF-8 sequence at the start of `text` (non-empty); nothing when it is invalid (overlong,
// surrogate, beyond U+10FFFF or truncated).
std::optional<CodePoint> decode_utf8(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) {
    return CodePoint{lead, 1};
  }
  size_t length = 0;
  char32_t value = 0;
  unsigned char low = 0x80;  // bounds of the second byte, narrowed to exclude overlongs/surrogates
  unsigned char high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    value = lead & 0x1fu;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    value = lead & 0x0fu;
    low = lead == 0xe0 ? 0xa0 : 0x80;
    high = lead == 0xed ? 0x9f : 0xbf;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    value = lead & 0x07u;
    low = lead == 0xf0 ? 0x90 : 0x80;
    high = lead == 0xf4 ? 0x8f : 0xbf;
  } else {
    return std::nullopt;
  }
  if (text.size() < length) {
    return std::nullopt;
  }
  for (size_t i = 1; i < length; ++i) {
    const unsigned char b = byte(i);
    if (b < (i == 1 ? low : 0x80) || b > (i == 1 ? high : 0xbf)) {
      return std::nullopt;
    }
    value = (value << 6) | (b & 0x3fu);
  }
  return CodePoint{value, length};
}

// YAML's printable set (what go-yaml accepts in a stream).
bool is_yaml_printable(char32_t c) {
  return c == 0x09 || c == 0x0a || c == 0x0d || (c >= 0x20 && c <= 0x7e) || c == 0x85 ||
         (c >= 0xa0 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);
}

std::string hex(char32_t c, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%0*X", digits, static_cast<unsigned>(c));
  return buffer;
}

// go-yaml v2's YAML 1.1 words, by what they resolve to.
constexpr std::array<std::string_view, 11> k_true_words{"y",    "Y",    "yes", "Yes", "YES", "true",
                                                        "True", "TRUE", "on",  "On",  "ON"};
constexpr std::array<std::string_view, 11> k_false_words{"n",     "N",     "no",  "No",  "NO", "false",
                                                         "False", "FALSE", "off", "Off", "OFF"};
constexpr std::array<std::string_view, 5> k_null_words{"", "~", "null", "Null", "NULL"};
constexpr std::array<std::string_view, 12> k_special_floats{
    ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN"};

bool contains(std::span<const std::string_view> words, std::string_view word) {
  for (const auto w : words) {
    if (w == word) {
      return true;
    }
  }
  return false;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Number of leading decimal digits of `text`.
size_t digits(std::string_view text) {
  size_t n = 0;
  while (n < text.size() && is_digit(text[n])) {
    ++n;
  }
  return n;
}

// go-yaml's float syntax: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
bool is_yaml_float(std::string_view text) {
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    text.remove_prefix(1);
  }
  if (text.starts_with('.')) {
    text.remove_prefix(1);
    const size_t n = digits(text);
    if (n == 0) {
      return false;
    }
    text.remove_prefix(n);
  } else {
    const size_t n = digits(text);
    if (n == 0) {
      return false;
    }
    text.remove_prefix(n);
    if (text.starts_with('.')) {
      text.remove_prefix(1);
      text.remove_prefix(digits(text));
    }
  }
  if (!text.empty() && (text.front() == 'e' || text.front() == 'E')) {
    text.remove_prefix(1);
    if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
      text.remove_prefix(1);
    }
    const size_t n = digits(text);
    if (n == 0) {
      return false;
    }
    text.remove_prefix(n);
  }
  return text.empty();
}

// The start of a go-yaml timestamp: YYYY-M-D, then the end or a time after "T", "t" or " ".
// (Conservative: anything shaped like a date is reported, even if go-yaml would fail to parse it.)
bool is_yaml_timestamp(std::string_view text) {
  if (digits(text) != 4 || text.size() < 5 || text[4] != '-') {
    return false;
  }
  text.remove_prefix(5);
  for (int part = 0; part < 2; ++part) {
    const size_t n = digits(text);
    if (n < 1 || n > 2) {
      return false;
    }
    text.remove_prefix(n);
    if (part == 0) {
      if (!text.starts_with('-')) {
        return false;
      }
      text.remove_prefix(1);
    }
  }
  return text.empty() || text.front() == 'T' || text.front() == 't' || text.front() == ' ';
}

// "0", "42", "-7": the form Go prints integers in.
bool is_canonical_decimal(std::string_view text) {
  if (text.starts_with('-')) {
    text.remove_prefix(1);
    if (text == "0") {
      return false;
    }
  }
  return !text.empty() && digits(text) == text.size() && (text.size() == 1 || text.front() != '0');
}

}  // namespace

Result<void> check_yaml_text(std::string_view text) {
  size_t line = 1;
  size_t column = 1;
  for (size_t i = 0; i < text.size();) {
    if (const char c = text[i]; c >= 0x20 && c < 0x7f) {  // printable ASCII: nearly every byte of a spec
      ++column;
      ++i;
      continue;
    }
    const auto cp = decode_utf8(text.substr(i));
    const auto at = [&] { return " at line " + std::to_string(line) + ", column " + std::to_string(column); };
    if (!cp) {
      return fail("invalid UTF-8" + at());
    }
    if (!is_yaml_printable(cp->value)) {
      return fail("disallowed character U+" + hex(cp->value, 4) + at());
    }
    if (cp->value == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += cp->length;
  }
  return {};
}

std::optional<std::string_view> plain_scalar_reading(std::string_view plain) {
  if (parse_yaml_bool(plain)) {
    return "a boolean";
  }
  if (is_yaml_null(plain)) {
    return "null";
  }
  // Every other reading (numbers, .inf/.nan, timestamps) needs a digit or a dot: most plain scalars,
  // field names among them, stop here.
  if (std::ranges::none_of(plain, [](char c) { return (c >= '0' && c <= '9') || c == '.'; })) {
    return std::nullopt;
  }
  if (contains(k_special_floats, plain)) {
    return "a number";
  }
  if (is_yaml_timestamp(plain)) {
    return "a timestamp";
  }
  // go-yaml drops underscores before trying numbers ("1_000" is 1000).
  std::string stripped;
  for (const char c : plain) {
    if (c != '_') {
      stripped.push_back(c);
    }
  }
  if (const auto integer = parse_yaml_integer(stripped)) {
    const bool fits = !integer->negative || integer->magnitude <= (uint64_t{1} << 63);
    if (fits && stripped == plain && is_canonical_decimal(plain)) {
      return std::nullopt;
    }
    return "a number";
  }
  if (is_yaml_float(stripped)) {
    return "a number";
  }
  return std::nullopt;
}

std::optional<YamlInteger> parse_yaml_integer(std::string_view text) {
  YamlInteger result;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    result.negative = text.front() == '-';
    text.remove_prefix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  } else if (text.size() > 2 && text[0] == '0' && (text[1] == 'o' || text[1] == 'O')) {
    base = 8;
    text.remove_prefix(2);
  } else if (text.size() > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) {
    base = 2;
    text.remove_prefix(2);
  } else if (text.size() > 1 && text[0] == '0') {
    base = 8;  // YAML 1.1 / Go: a leading zero means octal
  }
  if (text.empty() || text.front() == '+' || text.front() == '-') {
    return std::nullopt;
  }
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), result.magnitude, base);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return result;
}

bool is_yaml_null(std::string_view plain) {
  return contains(k_null_words, plain);
}

std::optional<bool> parse_yaml_bool(std::string_view plain) {
  if (contains(k_true_words, plain)) {
    return true;
  }
  if (contains(k_false_words, plain)) {
    return false;
  }
  return std::nullopt;
}

void append_yaml_quoted(std::string& out, std::string_view text) {
  out.push_back('"');
  for (size_t i = 0; i < text.size();) {
    // Printable ASCII other than '"' and backslash is copied as it stands, a run at a time.
    const auto plain = [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; };
    size_t run = i;
    while (run < text.size() && plain(text[run])) {
      ++run;
    }
    out.append(text.substr(i, run - i));
    i = run;
    if (i == text.size()) {
      break;
    }
    const auto cp = decode_utf8(text.substr(i));
    if (!cp) {
      out += "\\uFFFD";
      ++i;
      continue;
    }
    const char32_t c = cp->value;
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
      out += "\\x" + hex(c, 2);  // \x escapes are code points, so C1 controls fit too
    } else if (c == 0x2028 || c == 0x2029 || c == 0xfeff || c == 0xfffe || c == 0xffff) {
      out += "\\u" + hex(c, 4);  // line/paragraph separators would fold; BOM and non-characters
    } else {
      out.append(text.substr(i, cp->length));
    }
    i += cp->length;
  }
  out.push_back('"');
}

std::string yaml_quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  append_yaml_quoted(out, text);
  return out;
}

}  // namespace gpuctk::cdi
