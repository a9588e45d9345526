#include "plugin/node_config.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "util/file.hpp"
#include "util/k8s_names.hpp"
#include "util/strings.hpp"

namespace gpuctk::plugin {

namespace {

// A ConfigMap holds a few named configs; a folder of more entries than this is not one, and is refused
// rather than read without end.
constexpr size_t k_max_entries = 256;
// A device plugin config is a few KiB (the plugin reads --config-file with the same bound).
constexpr size_t k_max_config_bytes = 1024 * 1024;
// What the "named" fallback looks for (config-manager's NamedConfigFallback).
constexpr std::string_view k_named_fallback = "default";
// A ConfigMap volume's own entries ("..data", "..2024_01_01_00_00_00.1234") start with this.
constexpr std::string_view k_configmap_internal = "..";

// One row per fallback strategy (config-manager's FallbackStrategy* constants).
struct FallbackRow {
  Fallback value;
  std::string_view name;
};
constexpr FallbackRow k_fallbacks[] = {
    {Fallback::named, "named"},    // the config called "default"
    {Fallback::single, "single"},  // the only config
    {Fallback::empty, "empty"},    // no config: the built-in defaults
};

const Given* given(const Overrides& overrides, std::string_view name) {
  const auto it = overrides.find(name);
  return it == overrides.end() ? nullptr : &it->second;
}

std::string value_or(const Overrides& overrides, std::string_view name, std::string_view fallback) {
  const Given* g = given(overrides, name);
  return g != nullptr ? g->value : std::string(fallback);
}

// "named,single" (a list flag's values joined); "" is none.
Result<std::vector<Fallback>> fallbacks(const Given& given) {
  std::vector<Fallback> out;
  if (given.value.empty()) {
    return out;
  }
  for (const auto item : split(given.value, ',')) {
    const std::string_view name = trim(item);
    const auto* row = std::ranges::find(k_fallbacks, name, &FallbackRow::name);
    if (row == std::end(k_fallbacks)) {
      return fail(given.origin + ": unknown strategy " + quote(name) + " (want named, single or empty)");
    }
    out.push_back(row->value);
  }
  return out;
}

// A name list_configs can return: one path component, none of the ConfigMap's own.
bool is_config_name(std::string_view name) {
  return !name.empty() && name != "." && name.find('/') == std::string_view::npos &&
         !name.starts_with(k_configmap_internal);
}

// Whether the entry `name` of `dir` is a regular file, links followed; a dangling link is not.
Result<bool> is_regular(int dir, const std::string& name, const std::string& srcdir) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, 0) != 0) {
    if (errno == ENOENT || errno == ELOOP) {
      return false;
    }
    return fail_errno("stat " + srcdir + "/" + escape_for_log(name), errno);
  }
  return S_ISREG(st.st_mode);
}

// The config's text: the regular file `name` of srcdir, links followed (a ConfigMap's files are links
// into its "..data" folder), bounded.
Result<std::string> read_config(const std::string& srcdir, const std::string& name) {
  if (!is_config_name(name)) {
    return fail("config " + quote(name) + ": not a config name");
  }
  const std::string path = srcdir + "/" + name;
  GPUCTK_TRY_ASSIGN(auto text, read_regular_at(AT_FDCWD, path.c_str(), path, k_max_config_bytes));
  if (!text) {
    return fail("read " + path + ": No such file or directory");
  }
  return std::move(*text);
}

}  // namespace

Result<NodeConfigOptions> resolve_node_config_options(const Overrides& overrides) {
  NodeConfigOptions out;
  out.srcdir = value_or(overrides, "config-file-srcdir", "");
  out.node_name = value_or(overrides, "node-name", "");
  out.node_label = value_or(overrides, "node-label", out.node_label);
  out.default_config = value_or(overrides, "default-config", "");
  out.kubeconfig = value_or(overrides, "kubeconfig", "");
  out.destination = value_or(overrides, "config-file", "");
  if (const Given* g = given(overrides, "fallback-strategies")) {
    GPUCTK_TRY_ASSIGN(out.fallbacks, fallbacks(*g));
  }
  if (!out.enabled()) {
    return out;
  }
  if (out.node_name.empty()) {
    return fail("--node-name: needed with --config-file-srcdir (NODE_NAME)");
  }
  // The name goes into the API's requests: only what Kubernetes accepts as a node's name.
  if (!is_dns_subdomain(out.node_name)) {
    return fail(given(overrides, "node-name")->origin + ": " + quote(out.node_name) +
                " is not a node name (a DNS-1123 subdomain)");
  }
  if (out.node_label.empty()) {
    return fail(given(overrides, "node-label")->origin + ": must not be empty");
  }
  return out;
}

Result<std::vector<std::string>> list_configs(const std::string& srcdir) {
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(srcdir.c_str()), ::closedir);
  if (!dir) {
    return fail_errno("list " + srcdir, errno);
  }
  std::vector<std::string> names;
  size_t entries = 0;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") {
      continue;
    }
    if (++entries > k_max_entries) {
      return fail("list " + srcdir + ": more than " + std::to_string(k_max_entries) + " entries");
    }
    if (!is_config_name(name)) {
      continue;
    }
    GPUCTK_TRY_ASSIGN(const bool regular, is_regular(::dirfd(dir.get()), name, srcdir));
    if (regular) {
      names.push_back(name);
    }
  }
  std::ranges::sort(names);
  return names;
}

Result<std::optional<std::string>> select_config(const NodeConfigOptions& options,
                                                 const std::vector<std::string>& available,
                                                 std::optional<std::string_view> label) {
  if (available.empty()) {
    return fail("no configuration files available");
  }
  const auto has = [&](std::string_view name) {
    return std::ranges::find(available, name) != available.end();
  };
  // A label's value comes from the API: quoted and escaped in the message.
  if (label && !label->empty()) {
    if (!has(*label)) {
      return fail("specified config " + quote(*label) + " does not exist");
    }
    return std::string(*label);
  }
  if (!options.default_config.empty()) {
    if (!has(options.default_config)) {
      return fail("specified config " + quote(options.default_config) + " does not exist");
    }
    return options.default_config;
  }
  for (const Fallback fallback : options.fallbacks) {
    if (fallback == Fallback::named && has(k_named_fallback)) {
      return std::string(k_named_fallback);
    }
    if (fallback == Fallback::single && available.size() == 1) {
      return available.front();
    }
    if (fallback == Fallback::empty) {
      return std::optional<std::string>();
    }
  }
  return fail("no config was set, no default was provided, and all fallbacks failed");
}

Result<bool> write_chosen_config(const NodeConfigOptions& options, const std::optional<std::string>& name) {
  if (options.destination.empty()) {
    return fail("--config-file: needed to write the chosen config");
  }
  std::string text;
  if (name) {
    GPUCTK_TRY_ASSIGN(text, read_config(options.srcdir, *name));
  }
  // Unchanged bytes are not written again: the plugin and the labels sidecar watch the file. What is not
  // a readable regular file there (NVIDIA config-manager's link to /dev/null, a file too large) is
  // replaced: write_file_atomic renames over a link, never through it.
  const auto current =
      read_regular_at(AT_FDCWD, options.destination.c_str(), options.destination, k_max_config_bytes);
  if (current && *current && **current == text) {
    return false;
  }
  GPUCTK_TRY(write_file_atomic(options.destination, text, 0644));
  return true;
}

}  // namespace gpuctk::plugin
