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

void collect_changes(const toml::table& before, const toml::table& after, std::vector<std::string>& path,
                     std::vector<ReplacedKey>& out) {
  for (const auto& [key, value] : before) {
    path.emplace_back(key.str());
    const toml::node* now = after.get(key);
    if (value.is_table() && now != nullptr && now->is_table()) {
      collect_changes(*value.as_table(), *now->as_table(), path, out);
    } else if (value.is_string() && (now == nullptr || toml::node_view<const toml::node>(now) !=
                                                           toml::node_view<const toml::node>(&value))) {
      out.push_back(ReplacedKey{.key = path, .was = value.as_string()->get()});
    }
    path.pop_back();
  }
  for (const auto& [key, value] : after) {
    if (before.get(key) == nullptr) {
      path.emplace_back(key.str());
      out.push_back(ReplacedKey{.key = path, .was = std::nullopt});
      path.pop_back();
    }
  }
}

// Deletes `key` from the table at `path[depth]...`, and the tables on the way that it leaves empty.
void erase_key(toml::table& table, const std::vector<std::string>& key, size_t depth) {
  if (depth + 1 == key.size()) {
    table.erase(key[depth]);
    return;
  }
  toml::table* child = find_table(table, key[depth]);
  if (child == nullptr) {
    return;
  }
  erase_key(*child, key, depth + 1);
  if (child->empty()) {
    table.erase(key[depth]);
  }
}

// Sets `key` (a path) to `value`, making the tables on the way; a non-table on the way is replaced.
void put_key(toml::table& table, const std::vector<std::string>& key, const std::string& value) {
  toml::table* at = &table;
  for (size_t i = 0; i + 1 < key.size(); ++i) {
    toml::table* child = find_table(*at, key[i]);
    at = child != nullptr ? child : at->insert_or_assign(key[i], toml::table{}).first->second.as_table();
  }
  at->insert_or_assign(key.back(), value);
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

std::vector<ReplacedKey> changed_keys(const toml::table& before, const toml::table& after) {
  std::vector<ReplacedKey> out;
  std::vector<std::string> path;
  collect_changes(before, after, path, out);
  return out;
}

std::optional<std::string> string_at(const toml::table& table, std::span<const std::string_view> key) {
  const toml::table* at = &table;
  for (size_t i = 0; i + 1 < key.size(); ++i) {
    const toml::node* child = at->get(key[i]);
    at = child != nullptr ? child->as_table() : nullptr;
    if (at == nullptr) {
      return std::nullopt;
    }
  }
  const toml::node* leaf = key.empty() ? nullptr : at->get(key.back());
  if (leaf == nullptr || !leaf->is_string()) {
    return std::nullopt;
  }
  return leaf->as_string()->get();
}

void note_entry(Replaced& replaced, const RuntimeSettings& settings, const toml::table* before,
                const toml::table& after, std::span<const std::string_view> binary_key) {
  if (before == nullptr) {
    note_runtime(replaced, settings.name, settings.runtime_path, std::nullopt, {});
    return;
  }
  // An entry with no binary key (or another type there) is not gpuctk's: "" never equals a shim path.
  note_runtime(replaced, settings.name, settings.runtime_path, string_at(*before, binary_key).value_or(""),
               changed_keys(*before, after));
}

Result<void> set_default(toml::table& table, std::string_view key, const std::string& name,
                         std::string_view table_path, Edit& edit) {
  const bool had = table.get(key) != nullptr;
  GPUCTK_TRY_ASSIGN(const std::string before, set_string(table, key, name, table_path));
  if (before != name) {
    edit.changes.push_back(default_phrase(name, before));
    note_default(edit.replaced, name, had ? std::optional<std::string>(before) : std::nullopt);
  }
  return {};
}

void undo_runtime(toml::table& runtimes, const std::string& name,
                  std::span<const std::string_view> binary_key, const Replaced& replaced, Edit& edit) {
  toml::table* entry = find_table(runtimes, name);
  if (entry == nullptr) {
    // Not there, or not a table: nothing of gpuctk's; a non-table is deleted as it always was.
    if (runtimes.erase(name) != 0) {
      edit.changes.push_back(removed_phrase(name));
    }
    return;
  }
  const std::optional<std::string> binary = string_at(*entry, binary_key);
  switch (runtime_undo(replaced, name, binary)) {
    case RuntimeUndo::erase:
      runtimes.erase(name);
      edit.changes.push_back(removed_phrase(name));
      return;
    case RuntimeUndo::restore: {
      const ReplacedRuntime& record = replaced.runtimes.at(name);
      restore_keys(*entry, record.keys);
      edit.changes.push_back(restored_phrase(name, string_at(*entry, binary_key).value_or("")));
      return;
    }
    case RuntimeUndo::leave:
      edit.notes.push_back(
          left_alone_note(name, binary.value_or("nothing"), replaced.runtimes.at(name).binary));
      return;
  }
}

void undo_default(toml::table& table, std::string_view key, const std::string& name, const Replaced& replaced,
                  Edit& edit) {
  const toml::node* node = table.get(key);
  if (node == nullptr || node->value_or(std::string_view()) != name) {
    return;
  }
  if (const std::optional<std::string> was = default_undo(replaced, name)) {
    table.insert_or_assign(key, *was);
    edit.changes.push_back(default_restored_phrase(*was));
  } else {
    table.erase(key);
    edit.changes.push_back(default_unset_phrase(name));
  }
}

void restore_keys(toml::table& entry, const std::vector<ReplacedKey>& keys) {
  for (const ReplacedKey& key : keys) {
    if (key.key.empty()) {
      continue;
    }
    if (key.was) {
      put_key(entry, key.key, *key.was);
    } else {
      erase_key(entry, key.key, 0);
    }
  }
}

}  // namespace gpuctk::engine::detail
