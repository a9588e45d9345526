#include "engine/toml_doc.hpp"

#include <algorithm>
#include <sstream>

namespace gpuctk::engine::detail {

namespace {

std::string at_line(const toml::source_region& source) {
  return " at line " + std::to_string(source.begin.line) + ", column " + std::to_string(source.begin.column);
}

bool is_bare_key(std::string_view key) {
  return !key.empty() && std::ranges::all_of(key, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

}  // namespace

Result<toml::table> parse_toml(std::string_view text) {
  toml::parse_result parsed = toml::parse(text);
  if (!parsed) {
    return fail(std::string(parsed.error().description()) + at_line(parsed.error().source()));
  }
  return std::move(parsed).table();
}

std::string print_toml(const toml::table& table) {
  if (table.empty()) {
    return {};
  }
  // Double-quoted strings, as containerd 1.x and CRI-O print their own files; no literal strings.
  constexpr auto flags = toml::toml_formatter::default_flags & ~toml::format_flags::allow_literal_strings;
  std::ostringstream out;
  out << toml::toml_formatter(table, flags) << '\n';
  return std::move(out).str();
}

std::string key_path(std::string_view path, std::string_view key) {
  std::string out(path);
  if (!out.empty()) {
    out += '.';
  }
  if (is_bare_key(key)) {
    out += key;
    return out;
  }
  out += '"';
  for (const char c : key) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  out += '"';
  return out;
}

std::string_view type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date or time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

Error wrong_type(std::string_view path, const toml::node& node, std::string_view want) {
  std::string message(path);
  message.append(" is ").append(type_name(node)).append(" (want ").append(want).append(")");
  if (node.source().begin.line != 0) {
    message += at_line(node.source());
  }
  return Error{std::move(message)};
}

Result<toml::table*> child_table(toml::table& parent, std::string_view key, std::string_view parent_path) {
  toml::node* node = parent.get(key);
  if (node == nullptr) {
    return parent.emplace<toml::table>(key).first->second.as_table();
  }
  if (toml::table* table = node->as_table()) {
    return table;
  }
  return std::unexpected(wrong_type(key_path(parent_path, key), *node, "a table"));
}

toml::table* find_table(toml::table& parent, std::string_view key) {
  toml::node* node = parent.get(key);
  return node != nullptr ? node->as_table() : nullptr;
}

Result<std::string> set_string(toml::table& table, std::string_view key, std::string_view value,
                               std::string_view table_path) {
  std::string before;
  if (const toml::node* node = table.get(key)) {
    const auto* text = node->as_string();
    if (text == nullptr) {
      return std::unexpected(wrong_type(key_path(table_path, key), *node, "a string"));
    }
    before = text->get();
  }
  table.insert_or_assign(key, std::string(value));
  return before;
}

}  // namespace gpuctk::engine::detail
