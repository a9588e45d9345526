#include "config/config.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include <yaml-cpp/yaml.h>

#include "discover/host_fs.hpp"
#include "util/file.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::config {

namespace {

Result<std::string> scalar(const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) {
    return fail(key + ": expected a string");
  }
  return node.Scalar();
}

Result<bool> boolean(const YAML::Node& node, const std::string& key) {
  GPUCTK_TRY_ASSIGN(auto text, scalar(node, key));
  if (text == "true")
    return true;
  if (text == "false")
    return false;
  return fail(key + ": expected true or false, got \"" + text + "\"");
}

Result<std::vector<std::string>> list(const YAML::Node& node, const std::string& key) {
  if (!node.IsSequence()) {
    return fail(key + ": expected a list");
  }
  std::vector<std::string> out;
  for (const auto& item : node) {
    GPUCTK_TRY_ASSIGN(auto text, scalar(item, key + "[]"));
    out.push_back(text);
  }
  return out;
}

Result<std::string> absolute_path(const YAML::Node& node, const std::string& key) {
  auto text = scalar(node, key);
  if (text && (text->empty() || text->front() != '/')) {
    return fail(key + ": \"" + *text + "\" is not an absolute path");
  }
  return text;
}

Result<void> apply_key(Config& c, const std::string& key, const YAML::Node& value) {
  const auto set_list = [&](std::vector<std::string>& out) -> Result<void> {
    GPUCTK_TRY_ASSIGN(auto items, list(value, key));
    out = std::move(items);
    return {};
  };
  const auto set_bool = [&](bool& out) -> Result<void> {
    GPUCTK_TRY_ASSIGN(auto b, boolean(value, key));
    out = b;
    return {};
  };
  const auto set_path = [&](std::string& out) -> Result<void> {
    GPUCTK_TRY_ASSIGN(auto p, absolute_path(value, key));
    out = std::move(p);
    return {};
  };
  if (key == "spec-dirs")
    return set_list(c.spec_dirs);
  if (key == "annotation-prefixes")
    return set_list(c.request.annotation_prefixes);
  if (key == "runtimes") {
    GPUCTK_TRY_ASSIGN(auto runtimes, list(value, key));
    if (runtimes.empty()) {
      return fail(key + ": must name at least one runtime");
    }
    c.runtimes = std::move(runtimes);
    return {};
  }
  if (key == "mps-pipe-roots" || key == "mps-log-roots") {
    GPUCTK_TRY_ASSIGN(auto roots, list(value, key));
    for (const auto& root : roots) {
      // Clean, so that "below a root" is a plain prefix test; never "/", which would be every directory.
      if (root.size() < 2 || !is_clean_path(root)) {
        return fail(key + ": \"" + root + "\" is not a clean absolute directory other than /");
      }
    }
    (key == "mps-pipe-roots" ? c.mps_pipe_roots : c.mps_log_roots) = std::move(roots);
    return {};
  }
  if (key == "accept-envvar-when-unprivileged")
    return set_bool(c.request.accept_envvar_when_unprivileged);
  if (key == "accept-volume-mounts")
    return set_bool(c.request.accept_volume_mounts);
  if (key == "disable-require")
    return set_bool(c.request.disable_require);
  if (key == "driver-root")
    return set_path(c.driver_root);
  if (key == "hook-path")
    return set_path(c.hook_path);
  if (key == "no-additional-gids-for-device-nodes")
    return set_bool(c.no_additional_gids_for_device_nodes);
  if (key == "allow-ldconfig-from-container")
    return set_bool(c.allow_ldconfig_from_container);
  if (key == "dev-root")
    return set_path(c.dev_root);
  if (key == "default-kind") {
    GPUCTK_TRY_ASSIGN(auto kind, scalar(value, key));
    c.request.default_kind = kind;
    return {};
  }
  if (key == "supported-capabilities") {
    std::string joined;
    if (value.IsSequence()) {
      GPUCTK_TRY_ASSIGN(auto items, list(value, key));
      for (const auto& item : items) {
        joined += (joined.empty() ? "" : ",") + item;
      }
    } else {
      GPUCTK_TRY_ASSIGN(auto text, scalar(value, key));
      joined = text;
    }
    auto caps = discover::parse_capabilities(joined);
    if (!caps)
      return fail_with(key, caps.error());
    c.request.supported_capabilities = *caps;
    return {};
  }
  if (key == "runtime-mode") {
    GPUCTK_TRY_ASSIGN(auto text, scalar(value, key));
    if (text == "cdi") {
      c.runtime_mode = RuntimeMode::cdi;
    } else if (text == "prestart") {
      c.runtime_mode = RuntimeMode::prestart;
    } else {
      return fail(key + ": expected cdi or prestart, got \"" + text + "\"");
    }
    return {};
  }
  if (key == "ld-cache") {
    GPUCTK_TRY_ASSIGN(auto text, scalar(value, key));
    if (text == "merge") {
      c.ld_cache = LdCacheMode::merge;
    } else if (text == "ldconfig") {
      c.ld_cache = LdCacheMode::ldconfig;
    } else {
      return fail(key + ": expected merge or ldconfig, got \"" + text + "\"");
    }
    return {};
  }
  if (key == "log-file") {
    GPUCTK_TRY_ASSIGN(auto text, scalar(value, key));
    if (!text.empty() && text.front() != '/') {
      return fail(key + ": \"" + text + "\" is not an absolute path");
    }
    c.log_file = std::move(text);
    return {};
  }
  if (key == "log-level") {
    GPUCTK_TRY_ASSIGN(auto text, scalar(value, key));
    auto level = parse_log_level(text);
    if (!level)
      return fail_with(key, level.error());
    c.log_level = *level;
    return {};
  }
  return fail("unknown key \"" + key + "\"");
}

// The keys apply_key knows, for the nearest-key suggestion of an unknown one (etc/config.yaml documents
// each).
constexpr std::string_view k_keys[] = {
    "spec-dirs",
    "default-kind",
    "annotation-prefixes",
    "accept-envvar-when-unprivileged",
    "accept-volume-mounts",
    "supported-capabilities",
    "disable-require",
    "driver-root",
    "dev-root",
    "hook-path",
    "no-additional-gids-for-device-nodes",
    "allow-ldconfig-from-container",
    "ld-cache",
    "runtimes",
    "runtime-mode",
    "mps-pipe-roots",
    "mps-log-roots",
    "log-file",
    "log-level",
};

// Levenshtein distance, ASCII case folded (a typo may be "Log-File"); keys are short.
size_t edit_distance(std::string_view a, std::string_view b) {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] =
          std::min({row[j] + 1, row[j - 1] + 1, diagonal + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// `c.yaml:3: unknown key "log_file" ignored (did you mean "log-file"?)`; the suggestion only when the
// nearest key is a plausible typo of it (at most a third of its letters wrong, or two).
std::string unknown_key_warning(const std::string& where, const std::string& key) {
  std::string_view nearest;
  size_t best = SIZE_MAX;
  for (const auto known : k_keys) {
    if (const size_t d = edit_distance(key, known); d < best) {
      best = d;
      nearest = known;
    }
  }
  std::string warning = where + "unknown key " + quote(key) + " ignored";
  if (best <= std::max<size_t>(2, key.size() / 3)) {
    warning += " (did you mean " + quote(nearest) + "?)";
  }
  return warning;
}

bool is_known_key(std::string_view key) {
  return std::ranges::find(k_keys, key) != std::end(k_keys);
}

// "c.yaml:3: " for a node of the file (yaml-cpp counts lines from 0).
std::string where(const std::string& name, const YAML::Node& node) {
  return name + ":" + std::to_string(node.Mark().line + 1) + ": ";
}

}  // namespace

ConfigFile parse_config_file(std::string_view text, const std::string& name) {
  ConfigFile file;
  const auto failed = [&file](std::string message) {
    if (!file.error) {
      file.error = Error{std::move(message)};
    }
  };
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    failed(name + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error (column " +
           std::to_string(e.mark.column + 1) + "): " + e.msg);
    return file;
  }
  if (root.IsNull()) {
    return file;  // an empty file: all defaults
  }
  if (!root.IsMap()) {
    failed(where(name, root) + "expected a mapping of settings");
    return file;
  }
  // Each key on its own: a bad one keeps its default (apply_key sets a value only once all of it is
  // valid) and the first error is kept; the others still apply (the shim needs `runtimes` whatever else
  // is wrong).
  for (const auto& entry : root) {
    try {
      const std::string key = entry.first.as<std::string>();
      if (!is_known_key(key)) {
        file.warnings.push_back(unknown_key_warning(where(name, entry.first), key));
      } else if (auto r = apply_key(file.config, key, entry.second); !r) {
        failed(where(name, entry.first) + r.error().message);
      }
    } catch (const YAML::Exception& e) {
      failed(where(name, entry.first) + e.msg);
    }
  }
  return file;
}

Result<Config> parse_config(std::string_view text, const std::string& name) {
  auto file = parse_config_file(text, name);
  if (file.error) {
    return std::unexpected(*file.error);
  }
  return std::move(file.config);
}

ConfigFile read_config(const std::string& explicit_path) {
  std::string path = explicit_path;
  if (path.empty()) {
    if (const char* env = std::getenv("GPUCTK_CONFIG"); env != nullptr && *env != '\0') {
      path = env;
    }
  }
  ConfigFile file;
  const bool is_default = path.empty();
  if (is_default) {
    path = k_default_config_path;
    // Only a missing default file means the defaults; one that cannot be reached is an error.
    auto st = discover::lstat_path(path);
    if (!st) {
      file.error = Error{"config: " + st.error().message};
      return file;
    }
    if (!*st) {
      return file;
    }
  }
  auto text = read_file(path);
  if (!text) {
    file.error = Error{"config: " + text.error().message};
    return file;
  }
  return parse_config_file(*text, path);
}

ConfigLog open_log(const Config& config) {
  ConfigLog out;
  const std::string& path = config.log_file ? *config.log_file : std::string(k_default_log_file);
  auto log = Log::open(path, config.log_level);
  if (log) {
    if (!log->refused().empty()) {
      out.warning = log->refused();
    }
    out.log = std::move(*log);
  } else if (config.log_file) {
    out.error = log.error();
  } else {
    out.warning = log.error().message + "; not logging (set log-file in the config)";
  }
  return out;
}

}  // namespace gpuctk::config
