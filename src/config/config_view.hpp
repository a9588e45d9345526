#pragma once
// `gpuctk config`: the effective configuration (config/config.hpp) as an operator asks for it, each value
// with where it comes from, and `--set key=value` written into the file the tools read, everything else
// in it (other keys, comments, blank lines, order) kept byte for byte.

#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "util/error.hpp"

namespace gpuctk::config {

// Which file the hooks, the shim and `cdi inject` read, and why: --config (`explicit_path`), else
// $GPUCTK_CONFIG, else k_default_config_path.
struct ConfigSource {
  std::string path;
  std::string origin;  // "--config", "$GPUCTK_CONFIG" or "default"
};
ConfigSource config_source(const std::string& explicit_path);

// One setting of the effective configuration.
struct Setting {
  std::string key;     // "log-level"
  std::string value;   // as YAML flow text: "debug", "[/etc/cdi, /var/run/cdi]", "\"\"", "true"
  std::string source;  // "<name>:<line>" of the line that set it, else "default"
};

// Every key of the configuration, in etc/config.yaml's order, with its value in `config` (what
// parse_config_file made of `text`) and the line of `text` that set it. A key whose line in `text` is
// invalid keeps its default, and its source says "default" (the file's error says why).
std::vector<Setting> describe_config(const Config& config, std::string_view text, const std::string& name);

// The keys describe_config lists, in its order.
std::vector<std::string_view> config_keys();

// `text` with the top-level `key` set to `value` (YAML as an operator writes it after "key: ": a scalar
// or a flow list "[a, b]"): the key's line, and the indented lines of a block value under it, replaced
// by "key: value" (a comment at the end of the key's line is kept); a key not in `text` is appended.
// Every other byte stays. Errors: a key describe_config does not list ("unknown key \"x\" (keys: …)"), a
// value with a line break or that is not valid for the key (the file's error for the result, naming
// the key), a `text` that does not parse.
Result<std::string> set_config_value(std::string_view text, std::string_view key, std::string_view value,
                                     const std::string& name);

}  // namespace gpuctk::config
