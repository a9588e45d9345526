#include "config/config_view.hpp"

#include <cstdlib>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "util/strings.hpp"

namespace gpuctk::config {

namespace {

// A string as YAML flow text: plain when YAML reads the plain scalar back as this same string (letters,
// digits and path characters, not a word YAML gives another type), else double-quoted (JSON's escapes are
// YAML's).
std::string yaml_string(std::string_view text) {
  const bool plain =
      !text.empty() &&
      text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") ==
          std::string_view::npos &&
      text.front() != '-' && text != "true" && text != "false" && text != "null" && text != "~" &&
      text.find_first_not_of("0123456789.") != std::string_view::npos;
  return plain ? std::string(text) : nlohmann::json(std::string(text)).dump();
}

std::string yaml_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i == 0 ? "" : ", ") + yaml_string(items[i]);
  }
  return out + "]";
}

std::string yaml_bool(bool value) {
  return value ? "true" : "false";
}

std::string capabilities(const discover::CapabilitySet& set) {
  if (set == discover::CapabilitySet::all()) {
    return "all";
  }
  std::vector<std::string> names;
  for (auto c = static_cast<uint8_t>(discover::Capability::utility);
       c <= static_cast<uint8_t>(discover::Capability::compat32); ++c) {
    if (set.has(static_cast<discover::Capability>(c))) {
      names.emplace_back(discover::capability_name(static_cast<discover::Capability>(c)));
    }
  }
  return yaml_list(names);
}

std::string log_level(LogLevel level) {
  switch (level) {
    case LogLevel::error:
      return "error";
    case LogLevel::warning:
      return "warning";
    case LogLevel::info:
      return "info";
    case LogLevel::debug:
      break;
  }
  return "debug";
}

// Every key, in etc/config.yaml's order, and its value in a Config as YAML flow text (the row's way of
// printing the field parse_config sets from that key).
struct KeyRow {
  std::string_view key;
  std::string (*value)(const Config& config);
};
const KeyRow k_rows[] = {
    {"spec-dirs", [](const Config& c) { return yaml_list(c.spec_dirs); }},
    {"default-kind", [](const Config& c) { return yaml_string(c.request.default_kind); }},
    {"annotation-prefixes", [](const Config& c) { return yaml_list(c.request.annotation_prefixes); }},
    {"accept-envvar-when-unprivileged",
     [](const Config& c) { return yaml_bool(c.request.accept_envvar_when_unprivileged); }},
    {"accept-volume-mounts", [](const Config& c) { return yaml_bool(c.request.accept_volume_mounts); }},
    {"supported-capabilities",
     [](const Config& c) { return capabilities(c.request.supported_capabilities); }},
    {"disable-require", [](const Config& c) { return yaml_bool(c.request.disable_require); }},
    {"driver-root", [](const Config& c) { return yaml_string(c.driver_root); }},
    {"dev-root", [](const Config& c) { return yaml_string(c.dev_root); }},
    {"hook-path", [](const Config& c) { return yaml_string(c.hook_path); }},
    {"no-additional-gids-for-device-nodes",
     [](const Config& c) { return yaml_bool(c.no_additional_gids_for_device_nodes); }},
    {"allow-ldconfig-from-container",
     [](const Config& c) { return yaml_bool(c.allow_ldconfig_from_container); }},
    {"ld-cache",
     [](const Config& c) { return std::string(c.ld_cache == LdCacheMode::merge ? "merge" : "ldconfig"); }},
    {"runtimes", [](const Config& c) { return yaml_list(c.runtimes); }},
    {"runtime-mode",
     [](const Config& c) { return std::string(c.runtime_mode == RuntimeMode::cdi ? "cdi" : "prestart"); }},
    {"mps-pipe-roots", [](const Config& c) { return yaml_list(c.mps_pipe_roots); }},
    {"mps-log-roots", [](const Config& c) { return yaml_list(c.mps_log_roots); }},
    {"log-file", [](const Config& c) { return yaml_string(c.log_file.value_or(k_default_log_file)); }},
    {"log-level", [](const Config& c) { return log_level(c.log_level); }},
};

const KeyRow* row_of(std::string_view key) {
  for (const auto& row : k_rows) {
    if (row.key == key) {
      return &row;
    }
  }
  return nullptr;
}

// The top-level keys of `text` and the (1-based) line of each; empty when it does not parse as a mapping.
std::vector<std::pair<std::string, size_t>> key_lines(std::string_view text) {
  std::vector<std::pair<std::string, size_t>> out;
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsMap()) {
      return out;
    }
    for (const auto& entry : root) {
      if (entry.first.IsScalar()) {
        out.emplace_back(entry.first.Scalar(), static_cast<size_t>(entry.first.Mark().line) + 1);
      }
    }
  } catch (const YAML::Exception&) {
    out.clear();
  }
  return out;
}

// Whether `key`'s entry in `text`, alone, is a valid setting.
bool entry_is_valid(std::string_view text, const std::string& key) {
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    YAML::Emitter alone;
    alone << YAML::BeginMap << YAML::Key << key << YAML::Value << root[key] << YAML::EndMap;
    return !parse_config_file(alone.c_str(), "").error;
  } catch (const YAML::Exception&) {
    return false;
  }
}

// Where the comment of a "key: value  # comment" line starts (its whitespace included), or npos.
size_t comment_start(std::string_view line) {
  char quote_char = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote_char != 0) {
      quote_char = c == quote_char ? 0 : quote_char;
    } else if (c == '"' || c == '\'') {
      quote_char = c;
    } else if (c == '#' && i > 0 && (line[i - 1] == ' ' || line[i - 1] == '\t')) {
      size_t start = i;
      while (start > 0 && (line[start - 1] == ' ' || line[start - 1] == '\t')) {
        --start;
      }
      return start;
    }
  }
  return std::string_view::npos;
}

// The lines of `text`, each without its '\n'; a last line without one is a line too.
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      out.push_back(text.substr(start));
      break;
    }
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A line that belongs to the block value of the key above it: indented, or a sequence item at column 0;
// blank lines and comments are not (they stay).
bool continues_value(std::string_view line) {
  const auto first = line.find_first_not_of(" \t");
  if (first == std::string_view::npos || line[first] == '#') {
    return false;
  }
  return first > 0 || line.front() == '-';
}

}  // namespace

ConfigSource config_source(const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    return {.path = explicit_path, .origin = "--config"};
  }
  if (const char* env = std::getenv("GPUCTK_CONFIG"); env != nullptr && *env != '\0') {
    return {.path = env, .origin = "$GPUCTK_CONFIG"};
  }
  return {.path = k_default_config_path, .origin = "default"};
}

std::vector<std::string_view> config_keys() {
  std::vector<std::string_view> keys;
  for (const auto& row : k_rows) {
    keys.push_back(row.key);
  }
  return keys;
}

std::vector<Setting> describe_config(const Config& config, std::string_view text, const std::string& name) {
  const auto lines = key_lines(text);
  std::vector<Setting> out;
  for (const auto& row : k_rows) {
    Setting setting{.key = std::string(row.key), .value = row.value(config), .source = "default"};
    // The last line of the key (YAML keeps the last of a key given twice), when that entry applied.
    for (const auto& [key, line] : lines) {
      if (key == row.key) {
        setting.source = name + ":" + std::to_string(line);
      }
    }
    if (setting.source != "default" && !entry_is_valid(text, setting.key)) {
      setting.source = "default";
    }
    out.push_back(std::move(setting));
  }
  return out;
}

Result<std::string> set_config_value(std::string_view text, std::string_view key, std::string_view value,
                                     const std::string& name) {
  if (row_of(key) == nullptr) {
    std::vector<std::string_view> keys = config_keys();
    return fail("unknown key " + quote(key) + " (keys: " + join(keys, ", ") + ")");
  }
  const std::string_view trimmed = trim(value);
  if (trimmed.find_first_of("\n\r") != std::string_view::npos) {
    return fail(std::string(key) + ": a value is one line");
  }
  // Where the key is now: the text must parse for that (an error in it is fixed by hand first).
  size_t at = 0;  // 1-based line of the key; 0: not in the text
  if (!trim(text).empty()) {
    try {
      const YAML::Node root = YAML::Load(std::string(text));
      if (!root.IsNull() && !root.IsMap()) {
        return fail(name + ": not a mapping of settings; fix it by hand first");
      }
    } catch (const YAML::Exception& e) {
      return fail(name + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error (column " +
                  std::to_string(e.mark.column + 1) + "): " + e.msg + "; fix it by hand first");
    }
    for (const auto& [k, line] : key_lines(text)) {
      if (k == key) {
        at = line;  // the last one, which YAML applies
      }
    }
  }
  const std::string entry = std::string(key) + ": " + std::string(trimmed);
  std::string out;
  size_t new_line = 0;
  const auto lines = lines_of(text);
  if (at == 0) {
    out = std::string(text);
    if (!out.empty() && !out.ends_with('\n')) {
      out += '\n';
    }
    out += entry + "\n";
    new_line = lines.size() + 1;
  } else {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i + 1 != at) {
        out += std::string(lines[i]) + "\n";
        continue;
      }
      const std::string_view old_value = lines[i].substr(std::min(lines[i].find(':') + 1, lines[i].size()));
      const size_t comment = comment_start(old_value);
      out += entry + (comment == std::string_view::npos ? "" : std::string(old_value.substr(comment))) + "\n";
      // The old block value's lines go; comments and blank lines among them stay (YAML ends a block
      // value only at a line indented less, so comments do not end it).
      for (; i + 1 < lines.size(); ++i) {
        const std::string_view next = lines[i + 1];
        if (continues_value(next)) {
          continue;
        }
        const auto first = next.find_first_not_of(" \t");
        if (first != std::string_view::npos && next[first] != '#') {
          break;
        }
        out += std::string(next) + "\n";
      }
    }
    if (!text.empty() && !text.ends_with('\n') && out.ends_with('\n')) {
      out.pop_back();
    }
    new_line = at;
  }
  // The new value must be one the key takes; an error elsewhere in the file is the file's, not this one's.
  const auto parsed = parse_config_file(out, name);
  if (parsed.error && parsed.error->message.starts_with(name + ":" + std::to_string(new_line) + ":")) {
    return std::unexpected(*parsed.error);
  }
  if (key_lines(out).empty()) {
    return fail(name + ":" + std::to_string(new_line) + ": " + std::string(key) + ": " + quote(trimmed) +
                " is not a YAML value");
  }
  return out;
}

}  // namespace gpuctk::config
