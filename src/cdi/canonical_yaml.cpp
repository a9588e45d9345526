// The fast path of the YAML reader: the exact layout write_spec produces, in one pass over the lines.
// Anything else returns nothing and goes to yaml-cpp, so every rule here only has to be strict, never
// complete. tests/cdi/canonical_yaml_test.cpp checks it against yaml-cpp on generated and mutated
// documents.
#include <array>

#include "cdi/doc_tree.hpp"
#include "cdi/yaml_scalars.hpp"

namespace gpuctk::cdi {
namespace {

// Past k_max_doc_nodes the fast path gives up: read_yaml_document then refuses the document, with a
// message.
constexpr size_t k_max_nodes = k_max_doc_nodes;

// Characters of the plain scalars the writer uses: decimal numbers and true/false.
bool is_plain_char(char c) {
  return is_plain_key_char(c) || c == '-' || c == '+' || c == '.';
}

DocNode plain_node(std::string_view text) {
  if (is_yaml_null(text)) {  // yaml-cpp reads these as null too
    return DocNode{};
  }
  return DocNode{DocNode::Kind::plain, std::string(text), {}, {}};
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

// The double-quoted scalar starting at text[pos] == '"', on one line and with only the escapes
// yaml_quote writes (\" \\ \n \t \xHH \uHHHH). Sets `end` to the index after the closing quote.
std::optional<std::string> quoted(std::string_view text, size_t pos, size_t& end) {
  std::string out;
  size_t i = pos + 1;
  for (;;) {
    size_t run = i;
    while (run < text.size()) {
      const auto u = static_cast<unsigned char>(text[run]);
      if (u == '"' || u == '\\' || u < 0x20 || u == 0x7f) {
        break;
      }
      // Raw U+0085, U+2028, U+2029 and U+FEFF are line breaks or marks to some readers: not canonical.
      if ((u == 0xc2 && run + 1 < text.size() && static_cast<unsigned char>(text[run + 1]) == 0x85) ||
          (u == 0xe2 && text.substr(run).starts_with("\xe2\x80\xa8")) ||
          (u == 0xe2 && text.substr(run).starts_with("\xe2\x80\xa9")) ||
          (u == 0xef && text.substr(run).starts_with("\xef\xbb\xbf"))) {
        return std::nullopt;
      }
      ++run;
    }
    out.append(text.substr(i, run - i));
    i = run;
    if (i >= text.size()) {
      return std::nullopt;  // unterminated on this line
    }
    const char c = text[i];
    if (c == '"') {
      end = i + 1;
      return out;
    }
    if (c != '\\' || i + 1 >= text.size()) {
      return std::nullopt;  // a raw control character
    }
    const char e = text[i + 1];
    i += 2;
    if (e == '"' || e == '\\') {
      out.push_back(e);
    } else if (e == 'n') {
      out.push_back('\n');
    } else if (e == 't') {
      out.push_back('\t');
    } else if (e == 'x' || e == 'u') {
      const size_t digits = e == 'x' ? 2 : 4;
      if (i + digits > text.size()) {
        return std::nullopt;
      }
      char32_t cp = 0;
      for (size_t k = 0; k < digits; ++k) {
        const int v = hex_value(text[i + k]);
        if (v < 0) {
          return std::nullopt;
        }
        cp = (cp << 4) | static_cast<char32_t>(v);
      }
      if (cp >= 0xd800 && cp <= 0xdfff) {
        return std::nullopt;  // a lone surrogate: readers disagree
      }
      append_utf8(out, cp);
      i += digits;
    } else {
      return std::nullopt;
    }
  }
}

class Reader {
 public:
  explicit Reader(std::string_view text) : m_text(text) { load_line(); }

  std::optional<DocNode> read() {
    if (m_at_end || m_line != "---") {
      return std::nullopt;
    }
    next();
    if (m_at_end) {
      return std::nullopt;
    }
    DocNode root;
    if (leading_spaces() != 0 || !block(0, 0, root, 0) || !m_at_end) {
      return std::nullopt;
    }
    return root;
  }

 private:
  void load_line() {
    m_at_end = m_pos >= m_text.size();
    if (m_at_end) {
      m_line = {};
      return;
    }
    const auto newline = m_text.find('\n', m_pos);
    const auto end = newline == std::string_view::npos ? m_text.size() : newline;
    m_line = m_text.substr(m_pos, end - m_pos);
  }
  void next() {
    m_pos += m_line.size() + 1;
    load_line();
  }
  [[nodiscard]] size_t leading_spaces() const {
    size_t n = 0;
    while (n < m_line.size() && m_line[n] == ' ') {
      ++n;
    }
    return n;
  }
  [[nodiscard]] static bool is_item(std::string_view content) { return content.starts_with("- "); }

  // After a finished entry of a block at `indent`: whether the current line continues that block with
  // another entry of kind `item` (a "- " line or a key line). A shallower line (or the end) ends the
  // block; anything else (deeper, or the wrong kind at this indent) is not canonical.
  enum class After { more, done, bad };
  [[nodiscard]] After after_entry(size_t indent, bool item) const {
    if (m_at_end) {
      return After::done;
    }
    const size_t n = leading_spaces();
    if (n < indent) {
      return After::done;
    }
    if (n == indent && is_item(m_line.substr(n)) == item) {
      return After::more;
    }
    return After::bad;
  }

  // The block whose first entry starts at column `col` of the current line (col > indent right after a
  // "- "); its later entries start at column `indent` of their own lines.
  bool block(size_t indent, size_t col, DocNode& out, size_t depth) {
    if (depth > k_max_doc_depth || !counted(1)) {
      return false;
    }
    return is_item(m_line.substr(col)) ? list(indent, col, out, depth) : object(indent, col, out, depth);
  }

  bool list(size_t indent, size_t col, DocNode& out, size_t depth) {
    out.kind = DocNode::Kind::list;
    for (;;) {
      const size_t item_col = col + 2;
      const auto rest = m_line.substr(item_col);
      DocNode item;
      if (is_item(rest) || starts_key(rest)) {
        if (!block(indent + 2, item_col, item, depth + 1)) {
          return false;
        }
      } else if (!counted(1) || !scalar_to_end(rest, item)) {
        return false;
      }
      out.items.push_back(std::move(item));
      switch (after_entry(indent, true)) {
        case After::more:
          col = indent;
          continue;
        case After::done:
          return true;
        case After::bad:
          return false;
      }
    }
  }

  bool object(size_t indent, size_t col, DocNode& out, size_t depth) {
    out.kind = DocNode::Kind::object;
    for (;;) {
      const auto content = m_line.substr(col);
      DocNode key;
      size_t colon = 0;
      if (!read_key(content, key, colon) || !counted(1)) {
        return false;
      }
      DocNode value;
      const auto rest = content.substr(colon + 1);
      if (rest.empty()) {  // a nested block, two spaces deeper, on the next line
        next();
        if (m_at_end || leading_spaces() != indent + 2 || !block(indent + 2, indent + 2, value, depth + 1)) {
          return false;
        }
      } else if (rest.front() != ' ' || !counted(1) || !scalar_to_end(rest.substr(1), value)) {
        return false;
      }
      out.members.emplace_back(std::move(key), std::move(value));
      switch (after_entry(indent, false)) {
        case After::more:
          col = indent;
          continue;
        case After::done:
          return true;
        case After::bad:
          return false;
      }
    }
  }

  // Whether `text` starts with a key and its ':' (a mapping inside a "- " item).
  [[nodiscard]] static bool starts_key(std::string_view text) {
    DocNode key;
    size_t colon = 0;
    return read_key(text, key, colon);
  }

  // A plain key ([A-Za-z0-9]+) or a double-quoted one, followed by ':' at `colon`.
  static bool read_key(std::string_view text, DocNode& key, size_t& colon) {
    if (text.starts_with('"')) {
      size_t end = 0;
      auto value = quoted(text, 0, end);
      if (!value || end >= text.size() || text[end] != ':') {
        return false;
      }
      key = DocNode{DocNode::Kind::string, std::move(*value), {}, {}};
      colon = end;
      return true;
    }
    size_t n = 0;
    while (n < text.size() && is_plain_key_char(text[n])) {
      ++n;
    }
    if (n == 0 || n >= text.size() || text[n] != ':') {
      return false;
    }
    key = plain_node(text.substr(0, n));
    colon = n;
    return true;
  }

  // A scalar filling the rest of the line: "{}", "[]", a double-quoted string, or a plain number or
  // word. Consumes the line.
  bool scalar_to_end(std::string_view text, DocNode& out) {
    if (text == "{}") {
      out = DocNode{DocNode::Kind::object, {}, {}, {}};
    } else if (text == "[]") {
      out = DocNode{DocNode::Kind::list, {}, {}, {}};
    } else if (text.starts_with('"')) {
      size_t end = 0;
      auto value = quoted(text, 0, end);
      if (!value || end != text.size()) {
        return false;
      }
      out = DocNode{DocNode::Kind::string, std::move(*value), {}, {}};
    } else {
      // A leading '-' must start a number ("-1", "-.5"), never stand for a sequence entry.
      if (text.empty()) {
        return false;
      }
      const bool lone_dash =
          text.front() == '-' && (text.size() == 1 || !(is_plain_key_char(text[1]) || text[1] == '.'));
      if (lone_dash) {
        return false;
      }
      for (const char c : text) {
        if (!is_plain_char(c)) {
          return false;
        }
      }
      out = plain_node(text);
    }
    next();
    return true;
  }

  // Counts `n` more nodes; false past k_max_nodes.
  bool counted(size_t n) {
    m_nodes += n;
    return m_nodes <= k_max_nodes;
  }

  std::string_view m_text;
  size_t m_nodes = 0;
  size_t m_pos = 0;
  std::string_view m_line;
  bool m_at_end = false;
};

}  // namespace

std::optional<DocNode> read_canonical_yaml(std::string_view text) {
  return Reader(text).read();
}

}  // namespace gpuctk::cdi
