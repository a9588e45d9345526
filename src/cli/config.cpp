// gpuctk config: the configuration the hooks, the shim and `cdi inject` use (config/config_view.hpp), every
// key with its value and where it comes from; `--set key=value` writes keys into that file, keeping
// everything else in it.
#include <sys/stat.h>

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "config/config_view.hpp"
#include "discover/host_fs.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

struct ConfigArgs {
  std::string config;
  std::vector<std::string> sets;
};

// A config file is a few KiB.
constexpr size_t k_max_config = size_t{1} << 20;

Result<void> check_assignment(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return fail(quote(text) + " is not key=value");
  }
  return {};
}

// The file's text ("" when the default file is missing) and whether it exists.
Result<std::pair<std::string, bool>> read_config_text(const config::ConfigSource& source) {
  GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(source.path));
  if (!st && source.origin == "default") {
    return std::pair<std::string, bool>{"", false};
  }
  GPUCTK_TRY_ASSIGN(auto text, read_file(source.path, k_max_config));
  return std::pair<std::string, bool>{std::move(text), true};
}

// "# /etc/gpuctk/config.yaml (the default path)" and every key, "key: value" padded, "# source".
Result<void> show(const config::ConfigSource& source) {
  GPUCTK_TRY_ASSIGN(const auto read, read_config_text(source));
  const auto& [text, exists] = read;
  const auto file = config::parse_config_file(text, source.path);
  const auto settings = config::describe_config(file.config, text, source.path);
  std::string out = "# " + source.path +
                    (source.origin == "default" ? " (the default path" : " (from " + source.origin) +
                    (exists ? ")" : "; missing: every value is the default)") + "\n";
  size_t width = 0;
  for (const auto& s : settings) {
    width = std::max(width, s.key.size() + 2 + s.value.size());
  }
  for (const auto& s : settings) {
    const std::string line = s.key + ": " + s.value;
    out += line + std::string(width - line.size() + 2, ' ') + "# " + s.source + "\n";
  }
  GPUCTK_TRY(write_stdout(out));
  for (const auto& warning : file.warnings) {
    warn(warning);
  }
  if (file.error) {
    return std::unexpected(*file.error);  // shown after the values: the bad key keeps its default
  }
  return {};
}

// Every --set in order, then one atomic, durable write (the file's mode and owner kept; a new file
// 0644), and a line per key.
Result<void> set(const config::ConfigSource& source, const std::vector<std::string>& sets) {
  GPUCTK_TRY_ASSIGN(const auto read, read_config_text(source));
  std::string text = read.first;
  std::string said;
  for (const auto& assignment : sets) {
    const auto eq = assignment.find('=');
    const std::string key = assignment.substr(0, eq);
    GPUCTK_TRY_ASSIGN(text, config::set_config_value(text, key, assignment.substr(eq + 1), source.path));
  }
  const auto after = config::parse_config_file(text, source.path);
  const auto settings = config::describe_config(after.config, text, source.path);
  for (const auto& assignment : sets) {
    const std::string key = assignment.substr(0, assignment.find('='));
    for (const auto& s : settings) {
      if (s.key == key) {
        said += key + ": " + s.value + " (" + s.source + ")\n";
      }
    }
  }
  if (text == read.first) {
    return write_stdout("unchanged " + source.path + "\n" + said);
  }
  mode_t mode = 0644;
  std::optional<FileOwner> owner;
  if (struct stat st{}; read.second && ::stat(source.path.c_str(), &st) == 0) {
    mode = st.st_mode & 07777;
    owner = FileOwner{.uid = st.st_uid, .gid = st.st_gid};
  }
  GPUCTK_TRY(write_file_atomic(source.path, text, mode, Durability::durable, owner));
  GPUCTK_TRY(write_stdout("wrote " + source.path + "\n" + said));
  if (after.error) {
    warn("the file still has an error: " + after.error->message);
  }
  return {};
}

}  // namespace

Action define_config(CLI::App& command) {
  auto args = std::make_shared<ConfigArgs>();
  command.footer(
      "Every key with its value and where it comes from (the file's line, or the default), as YAML that "
      "gpuctk reads back. The file is --config, else $GPUCTK_CONFIG, else /etc/gpuctk/config.yaml, as for "
      "the hooks and the shim. --set rewrites only its keys' lines (a comment at the end of one stays), "
      "appends a key the file lacks, and replaces the file atomically.");
  command
      .add_option("--config", args->config,
                  "The config file (default: $GPUCTK_CONFIG, else /etc/gpuctk/config.yaml)")
      ->type_name("FILE");
  command
      .add_option("--set", args->sets,
                  "Write KEY: VALUE into the file (VALUE as YAML: debug, /run/nvidia/driver, \"[/etc/cdi, "
                  "/var/run/cdi]\"); repeatable")
      ->type_name("KEY=VALUE")
      ->check(value_check(check_assignment));
  return [args] {
    const auto source = config::config_source(args->config);
    auto done = args->sets.empty() ? show(source) : set(source, args->sets);
    if (!done) {
      return report(done.error());
    }
    return static_cast<int>(k_exit_ok);
  };
}

}  // namespace gpuctk::cli
