#include "hook/config.hpp"

#include <cstdlib>

#include <yaml-cpp/yaml.h>

#include "discover/host_fs.hpp"
#include "util/file.hpp"
#include "util/path.hpp"

namespace gpuctk::hook {

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
  if (key == "runtimes")
    return set_list(c.runtimes);
  if (key == "mps-pipe-roots" || key == "mps-log-roots") {
    auto& roots = key == "mps-pipe-roots" ? c.mps_pipe_roots : c.mps_log_roots;
    if (auto r = set_list(roots); !r)
      return r;
    for (const auto& root : roots) {
      // Clean, so that "below a root" is a plain prefix test; never "/", which would be every directory.
      if (root.size() < 2 || !is_clean_path(root)) {
        return fail(key + ": \"" + root + "\" is not a clean absolute directory other than /");
      }
    }
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
  if (key == "log-file") {
    GPUCTK_TRY_ASSIGN(auto text, scalar(value, key));
    if (!text.empty() && text.front() != '/') {
      return fail(key + ": \"" + text + "\" is not an absolute path");
    }
    c.log_file = text;
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

}  // namespace

Result<Config> parse_config(std::string_view text, const std::string& name) {
  Config config;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return fail(name + ": YAML syntax error at line " + std::to_string(e.mark.line + 1) + ", column " +
                std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  if (root.IsNull()) {
    return config;  // an empty file: all defaults
  }
  if (!root.IsMap()) {
    return fail(name + ": expected a mapping of settings");
  }
  try {
    for (const auto& entry : root) {
      const std::string key = entry.first.as<std::string>();
      if (auto r = apply_key(config, key, entry.second); !r) {
        return fail_with(name, r.error());
      }
    }
  } catch (const YAML::Exception& e) {
    return fail(name + ": " + e.msg);
  }
  if (config.runtimes.empty()) {
    return fail(name + ": runtimes: must name at least one runtime");
  }
  return config;
}

Result<Config> load_config(const std::string& explicit_path) {
  std::string path = explicit_path;
  if (path.empty()) {
    if (const char* env = std::getenv("GPUCTK_CONFIG"); env != nullptr && *env != '\0') {
      path = env;
    }
  }
  const bool is_default = path.empty();
  if (is_default) {
    path = k_default_config_path;
    // Only a missing default file means the defaults; one that cannot be reached is an error.
    GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(path));
    if (!st) {
      return Config{};
    }
  }
  auto text = read_file(path);
  if (!text) {
    return fail("config: " + text.error().message);
  }
  return parse_config(*text, path);
}

}  // namespace gpuctk::hook
