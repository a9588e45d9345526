#include "oci/runtime_args.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <optional>
#include <vector>

#include "util/path.hpp"

namespace gpuctk::oci {

namespace {

enum class Takes { nothing, value };

// Which RuntimeArgs field an option's value goes to.
enum class Role { none, root, log, log_format, bundle, config };

struct OptionSpec {
  std::string_view name;  // without dashes
  Takes takes;
  Role role = Role::none;
};

// Global options of runc 1.1 and crun 1.8, before the subcommand.
constexpr std::array k_global_options = {
    OptionSpec{"root", Takes::value, Role::root},              // runc, crun: directory of container state
    OptionSpec{"log", Takes::value, Role::log},                // runc, crun: log file
    OptionSpec{"log-format", Takes::value, Role::log_format},  // runc, crun: "text" or "json"
    OptionSpec{"criu", Takes::value},                          // runc: path of the criu binary
    OptionSpec{"rootless", Takes::value},                      // runc, crun: "true", "false" or "auto"
    OptionSpec{"cgroup-manager", Takes::value},                // crun: "cgroupfs", "systemd" or "disabled"
    OptionSpec{"debug", Takes::nothing},                       // runc, crun: debug logging
    OptionSpec{"systemd-cgroup", Takes::nothing},              // runc, crun: systemd cgroup driver
    OptionSpec{"help", Takes::nothing},                        // runc, crun
    OptionSpec{"h", Takes::nothing},                           // runc: help
    OptionSpec{"version", Takes::nothing},                     // runc, crun
    OptionSpec{"v", Takes::nothing},                           // runc, crun: version
    OptionSpec{"V", Takes::nothing},                           // crun: version
    OptionSpec{"?", Takes::nothing},                           // crun: help
    OptionSpec{"usage", Takes::nothing},                       // crun: short usage
};

// Options of `create` and `run` (runc 1.1, crun 1.8).
constexpr std::array k_create_options = {
    OptionSpec{"bundle", Takes::value, Role::bundle},  // runc, crun: the bundle directory
    OptionSpec{"b", Takes::value, Role::bundle},       // runc, crun: --bundle
    OptionSpec{"config", Takes::value, Role::config},  // crun: another config file (relative to the cwd)
    OptionSpec{"f", Takes::value, Role::config},       // crun: --config
    OptionSpec{"console-socket", Takes::value},        // runc, crun: socket receiving the pty master
    OptionSpec{"pid-file", Takes::value},              // runc, crun: where to write the init pid
    OptionSpec{"preserve-fds", Takes::value},          // runc, crun: extra fds passed to the container
    OptionSpec{"no-pivot", Takes::nothing},            // runc, crun
    OptionSpec{"no-new-keyring", Takes::nothing},      // runc, crun
    OptionSpec{"no-subreaper", Takes::nothing},        // run (runc), create/run (crun)
    OptionSpec{"detach", Takes::nothing},              // run: runc, crun
    OptionSpec{"d", Takes::nothing},                   // run: --detach
    OptionSpec{"keep", Takes::nothing},                // run: runc
    OptionSpec{"help", Takes::nothing},                // runc, crun
    OptionSpec{"h", Takes::nothing},                   // runc
    OptionSpec{"?", Takes::nothing},                   // crun
    OptionSpec{"usage", Takes::nothing},               // crun
};

// The short options of create/run that take a value; crun (argp) also reads them attached ("-b/x").
constexpr std::string_view k_short_value_options = "bf";

// An argument that is an option: its name without dashes and its "=value" part.
struct Option {
  std::string_view name;
  std::optional<std::string_view> value;
  bool single_dash = false;
};

std::optional<Option> as_option(std::string_view arg) {
  if (arg.size() < 2 || arg.front() != '-' || arg == "--") {
    return std::nullopt;  // "-" is an argument (stdin), "--" ends options
  }
  Option option;
  option.single_dash = arg[1] != '-';
  std::string_view rest = arg.substr(option.single_dash ? 1 : 2);
  if (const auto eq = rest.find('='); eq != std::string_view::npos) {
    option.value = rest.substr(eq + 1);
    rest = rest.substr(0, eq);
  }
  option.name = rest;
  return option;
}

template <size_t N>
const OptionSpec* find_option(const std::array<OptionSpec, N>& table, std::string_view name) {
  const auto it =
      std::find_if(table.begin(), table.end(), [&](const OptionSpec& spec) { return spec.name == name; });
  return it == table.end() ? nullptr : &*it;
}

class Parser {
 public:
  Parser(std::span<const std::string> args, std::string_view cwd) : m_args(args), m_cwd(cwd) {}

  RuntimeArgs parse() {
    m_out.subcommand_index = m_args.size();
    if (parse_globals() && m_out.creates_container()) {
      parse_create();
    }
    return std::move(m_out);
  }

 private:
  // The value of the option at m_next - 1: attached ("--x=v") or the next argument.
  std::optional<std::string> take_value(const Option& option, std::string_view arg) {
    if (option.value) {
      return std::string(*option.value);
    }
    if (m_next >= m_args.size()) {
      m_out.unparseable = "option " + std::string(arg) + " needs a value";
      return std::nullopt;
    }
    return m_args[m_next++];
  }

  bool parse_globals() {
    while (m_next < m_args.size()) {
      const std::string& arg = m_args[m_next];
      if (arg == "--") {
        ++m_next;
        break;
      }
      const auto option = as_option(arg);
      if (!option) {
        break;
      }
      ++m_next;
      const OptionSpec* spec = find_option(k_global_options, option->name);
      if (spec == nullptr) {
        m_out.unparseable = "unknown global option " + arg;
        return false;
      }
      if (spec->takes == Takes::nothing) {
        continue;
      }
      auto value = take_value(*option, arg);
      if (!value) {
        return false;
      }
      if (spec->role == Role::root) {
        m_out.root = std::move(*value);
      } else if (spec->role == Role::log) {
        m_out.log_file = std::move(*value);
      } else if (spec->role == Role::log_format) {
        m_out.log_format = std::move(*value);
      }
    }
    if (m_next < m_args.size()) {
      m_out.subcommand_index = m_next;
      m_out.subcommand = m_args[m_next++];
    }
    return true;
  }

  void parse_create() {
    std::optional<std::string> bundle;
    std::optional<std::string> config;
    while (m_next < m_args.size()) {
      const std::string& arg = m_args[m_next++];
      if (arg == "--") {
        break;  // the rest are arguments
      }
      const auto option = as_option(arg);
      if (!option) {
        continue;  // the container id (runc also takes options after it)
      }
      const OptionSpec* spec = find_option(k_create_options, option->name);
      if (spec != nullptr && spec->takes == Takes::value) {
        auto value = take_value(*option, arg);
        if (!value) {
          return;
        }
        if (spec->role == Role::bundle) {
          bundle = std::move(*value);
        } else if (spec->role == Role::config) {
          config = std::move(*value);
        }
      } else if (spec == nullptr && option->single_dash && !option->name.empty() &&
                 k_short_value_options.find(option->name.front()) != std::string_view::npos) {
        m_out.unparseable = "ambiguous option " + arg;
        return;
      }
    }
    // runc and crun chdir into the bundle; an empty --bundle means the current directory.
    const std::string_view bundle_arg = bundle ? std::string_view(*bundle) : std::string_view();
    const bool relative_config = config && !config->empty() && config->front() != '/';
    const bool needs_cwd = bundle_arg.empty() || bundle_arg.front() != '/' || relative_config;
    if (needs_cwd && m_cwd.empty()) {
      m_out.unparseable = "the current directory is unknown";
      return;
    }
    m_out.bundle = clean_absolute_path(bundle_arg.empty() ? std::string_view(".") : bundle_arg, m_cwd);
    // crun resolves --config against the directory it was started in (verified with crun 1.8.1).
    m_out.config_file = config && !config->empty() ? clean_absolute_path(*config, m_cwd)
                        : m_out.bundle == "/"      ? "/config.json"
                                                   : m_out.bundle + "/config.json";
  }

  std::span<const std::string> m_args;
  std::string_view m_cwd;
  size_t m_next = 0;
  RuntimeArgs m_out;
};

}  // namespace

RuntimeArgs parse_runtime_args(std::span<const std::string> args, std::string_view cwd) {
  return Parser(args, cwd).parse();
}

RuntimeArgs parse_runtime_args(std::span<const std::string> args) {
  std::vector<char> buffer(4096);
  while (::getcwd(buffer.data(), buffer.size()) == nullptr) {
    if (errno != ERANGE) {
      return parse_runtime_args(args, std::string_view());
    }
    buffer.resize(buffer.size() * 2);
  }
  return parse_runtime_args(args, std::string_view(buffer.data()));
}

}  // namespace gpuctk::oci
