// gpuctk as nvidia-cdi-hook: NVIDIA's command line (v1.20.0's cmd/nvidia-cdi-hook and the urfave/cli v3
// parser it is built with) read into `gpuctk hook <name>`'s. The tables below are NVIDIA's hooks and
// flags; the parser is urfave/cli's rules for one command level, used for the global level and the hook's.
#include "cli/nvidia_cdi_hook.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <span>
#include <string_view>

#include "cli/commands.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

enum class FlagKind : uint8_t {
  boolean,  // --name or --name=BOOL
  value,    // --name VALUE or --name=VALUE; the last one counts
  list,     // --name VALUE, repeated; each VALUE split at commas; all kept in order
};

// One flag of nvidia-cdi-hook v1.20.0 and what gpuctk makes of it.
struct NvidiaFlag {
  const char* name;                 // NVIDIA's, without dashes
  FlagKind kind = FlagKind::value;  //
  const char* option = nullptr;     // the option of `gpuctk hook <name>` it becomes; null: none (note)
  const char* note = "";            // for --help
};

// Every hook that has it: the OCI state from a file (hidden in NVIDIA's but for chmod and update-ldcache).
constexpr NvidiaFlag k_container_spec{"container-spec", FlagKind::value, "--container-spec",
                                      "the OCI state from this file instead of stdin (\"\" or -: stdin)"};

constexpr NvidiaFlag k_create_symlinks_flags[] = {
    {"link", FlagKind::list, "--link", "TARGET::LINK: LINK (a container path) made a symlink to TARGET"},
    k_container_spec,
};
constexpr NvidiaFlag k_update_ldcache_flags[] = {
    {"folder", FlagKind::list, "--folder", "a library folder of the container for its linker cache"},
    // NVIDIA's default /sbin/ldconfig names the host's, as gpuctk's default does (no value: gpuctk's).
    {"ldconfig-path", FlagKind::value, "--ldconfig-path",
     "the host's ldconfig (PATH or @PATH; NVIDIA's default /sbin/ldconfig is the host's, as gpuctk's); "
     "run sandboxed, never the image's"},
    k_container_spec,
};
constexpr NvidiaFlag k_chmod_flags[] = {
    {"path", FlagKind::list, "--path", "a container path; none: nothing to do, as in NVIDIA's"},
    {"mode", FlagKind::value, "--mode",
     "octal; only the permission bits (0777) are applied, as NVIDIA's Go chmod applies them"},
    k_container_spec,
};
constexpr NvidiaFlag k_enable_cuda_compat_flags[] = {
    {"host-driver-version", FlagKind::value, "--host-driver-version", "the host driver's version"},
    {"host-cuda-version", FlagKind::value, "--host-cuda-version",
     "the CUDA version the host driver supports"},
    {"cuda-compat-container-root", FlagKind::value, "--cuda-compat-container-root",
     "the compat libraries' folder in the container (default /usr/local/cuda/compat)"},
    k_container_spec,
};
constexpr NvidiaFlag k_state_only_flags[] = {k_container_spec};

// What nvidia-cdi-hook's hook becomes.
enum class HookAction : uint8_t {
  gpuctk_hook,  // `gpuctk hook <name>` with the mapped options
  nothing,      // exit 0 at once
};

struct NvidiaHook {
  const char* name;
  std::span<const NvidiaFlag> flags;
  HookAction action;
  const char* summary;  // for --help
};

constexpr NvidiaHook k_hooks[] = {
    // The driver's library links and the /dev/dri/by-path links.
    {"create-symlinks", k_create_symlinks_flags, HookAction::gpuctk_hook, "create symlinks in the container"},
    // The container's linker cache.
    {"update-ldcache", k_update_ldcache_flags, HookAction::gpuctk_hook,
     "add library folders to the container's linker cache"},
    // Modes of folders a rootless runtime made (never in NVIDIA's default specs).
    {"chmod", k_chmod_flags, HookAction::gpuctk_hook, "set the mode of paths in the container"},
    // CUDA forward compatibility.
    {"enable-cuda-compat", k_enable_cuda_compat_flags, HookAction::gpuctk_hook,
     "use the image's CUDA compat libraries when they fit the host driver"},
    // The driver's params file with ModifyDeviceFiles: 0.
    {"disable-device-node-modification", k_state_only_flags, HookAction::gpuctk_hook,
     "hide ModifyDeviceFiles from the container's driver libraries"},
    // EGL/Vulkan GPU visibility through the driver's application profile (v1.20).
    {"update-application-profile", k_state_only_flags, HookAction::gpuctk_hook,
     "restrict EGL/Vulkan to the container's GPUs (the driver's application profile)"},
    // NVIDIA's hidden test hook.
    {"noop", {}, HookAction::nothing, "does nothing"},
};

const NvidiaHook* find_nvidia_hook(std::string_view name) {
  const auto it = std::ranges::find_if(k_hooks, [&](const NvidiaHook& hook) { return name == hook.name; });
  return it == std::end(k_hooks) ? nullptr : &*it;
}

// A flag one level of the command line takes: its names and kind.
struct LevelFlag {
  std::string_view name;
  std::string_view alias;  // "" none
  FlagKind kind;
};

// The global flags: --debug (-d) and --quiet also count after the hook's name (urfave/cli's persistent
// flags); --help (-h) and --version (-v) are each level's own.
constexpr LevelFlag k_debug{"debug", "d", FlagKind::boolean};
constexpr LevelFlag k_quiet{"quiet", "", FlagKind::boolean};
constexpr LevelFlag k_help{"help", "h", FlagKind::boolean};
constexpr LevelFlag k_version{"version", "v", FlagKind::boolean};

// The environment variables of the global flags, in the order NVIDIA's reads them (the first set wins).
constexpr const char* k_debug_env[] = {"NVIDIA_CTK_DEBUG", "NVIDIA_CDI_DEBUG"};
constexpr const char* k_quiet_env[] = {"NVIDIA_CTK_QUIET", "NVIDIA_CDI_QUIET"};

// Go's strconv.ParseBool.
std::optional<bool> parse_go_bool(std::string_view text) {
  for (const std::string_view yes : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (text == yes) {
      return true;
    }
  }
  for (const std::string_view no : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (text == no) {
      return false;
    }
  }
  return std::nullopt;
}

// One level parsed: each flag's values under its name, the positional arguments, the first mistake.
struct Level {
  enum class Problem : uint8_t { none, unknown_flag, needs_value, not_a_bool };
  std::map<std::string, std::vector<std::string>, std::less<>> values;
  std::vector<std::string> positional;
  Problem problem = Problem::none;
  std::string flag;   // the flag of the problem, as given ("--x", "-x=1")
  std::string value;  // not_a_bool: the value

  [[nodiscard]] bool has(std::string_view name) const { return values.contains(name); }
  [[nodiscard]] bool is_true(std::string_view name) const {
    const auto it = values.find(name);
    return it != values.end() && it->second.back() == "true";
  }
  [[nodiscard]] std::string last(std::string_view name) const {
    const auto it = values.find(name);
    return it == values.end() ? std::string() : it->second.back();
  }
  [[nodiscard]] const std::vector<std::string>& all(std::string_view name) const {
    static const std::vector<std::string> k_none;
    const auto it = values.find(name);
    return it == values.end() ? k_none : it->second;
  }
};

// urfave/cli v3's rules for one command level: flags anywhere among the arguments ("-name" as "--name",
// "=VALUE" or the next argument, even one that starts with "-"); "--" ends the flags; a word naming one
// of the level's commands ends the level (it and the rest are the positional arguments); "-" alone ends
// it too, dropping what follows; "-" followed by no letter ("-1") starts the positional rest. An argument
// is looked at trimmed of white space.
Level parse_level(std::span<const std::string> args, std::span<const LevelFlag> flags,
                  const std::function<bool(std::string_view)>& is_command) {
  Level level;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string word(trim(args[i]));
    const auto rest = [&](size_t from) {
      level.positional.insert(level.positional.end(), args.begin() + from, args.end());
    };
    if (word.empty()) {
      level.positional.push_back(args[i]);
      continue;
    }
    if (word == "--") {
      rest(i + 1);
      break;
    }
    if (word[0] != '-') {
      if (is_command(word)) {
        rest(i);
        break;
      }
      level.positional.push_back(word);
      continue;
    }
    if (word.size() == 1) {
      level.positional.push_back(word);
      break;
    }
    const bool two = word[1] == '-';
    if (!two && std::isalpha(static_cast<unsigned char>(word[1])) == 0) {
      rest(i);
      break;
    }
    std::string name = word.substr(two ? 2 : 1);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const auto flag = std::ranges::find_if(
        flags, [&](const LevelFlag& f) { return name == f.name || (!f.alias.empty() && name == f.alias); });
    if (flag == flags.end()) {
      level.problem = Level::Problem::unknown_flag;
      level.flag = word.substr(0, word.find('='));
      return level;
    }
    std::vector<std::string> parsed;
    if (flag->kind == FlagKind::boolean) {
      const auto yes = parse_go_bool(value && !value->empty() ? *value : "true");  // --debug= is true
      if (!yes) {
        level.problem = Level::Problem::not_a_bool;
        level.flag = word.substr(0, word.find('='));
        level.value = *value;
        return level;
      }
      parsed.emplace_back(*yes ? "true" : "false");
    } else {
      if (!value) {
        if (i + 1 == args.size()) {
          level.problem = Level::Problem::needs_value;
          level.flag = word;
          return level;
        }
        value = args[++i];
      }
      if (flag->kind == FlagKind::list) {
        for (const auto part : split(*value, ',')) {
          parsed.emplace_back(part);
        }
      } else {
        parsed.push_back(*value);
      }
    }
    auto& values = level.values[std::string(flag->name)];
    values.insert(values.end(), parsed.begin(), parsed.end());
  }
  return level;
}

// The help command's names on every level.
bool is_help_word(std::string_view word) {
  return word == "help" || word == "h";
}

CdiHookCall skip_call(std::string message) {
  return {.kind = CdiHookCall::Kind::skip, .message = std::move(message)};
}

CdiHookCall failed_call(CdiHookCall::Kind kind, std::string hook, std::string message) {
  return {.kind = kind, .hook = std::move(hook), .message = std::move(message)};
}

CdiHookCall help_call(std::string hook) {
  return {.kind = CdiHookCall::Kind::help, .hook = std::move(hook)};
}

// NVIDIA's warning for a command line without a hook it has: the first positional argument, if any.
std::string unsupported(const std::vector<std::string>& positional) {
  return positional.empty() ? "nvidia-cdi-hook: no CDI hook specified"
                            : "nvidia-cdi-hook: unsupported CDI hook " + quote(positional.front()) +
                                  " ignored (a spec from a newer NVIDIA toolkit?)";
}

// What a level's mistake reads as.
std::string level_mistake(const Level& level) {
  switch (level.problem) {
    case Level::Problem::unknown_flag:
      return "unknown option " + quote(level.flag);
    case Level::Problem::needs_value:
      return level.flag + " needs a value";
    case Level::Problem::not_a_bool:
      return level.flag + ": " + quote(level.value) + " is not true or false";
    case Level::Problem::none:
      break;
  }
  return "";
}

// A global flag not given on the command line, from its environment variables; an error for a value
// that is not a boolean.
struct FromEnv {
  bool value = false;
  std::string error{};
};
FromEnv global_from_env(std::span<const char* const> names, const EnvLookup& env) {
  for (const char* name : names) {
    if (const auto text = env(name)) {
      if (text->empty()) {
        return {};
      }
      const auto parsed = parse_go_bool(*text);
      if (!parsed) {
        return {.error = std::string(name) + "=" + *text + ": not true or false"};
      }
      return {.value = *parsed};
    }
  }
  return {};
}

// "0755" -> "755": NVIDIA's mode (Go's strconv.ParseUint(mode, 8, 32)) with the bits its chmod applies.
std::optional<std::string> nvidia_mode(std::string_view text) {
  if (text.empty() || text.find_first_not_of("01234567") != std::string_view::npos) {
    return std::nullopt;
  }
  uint64_t mode = 0;
  for (const char c : text) {
    mode = mode * 8 + static_cast<uint64_t>(c - '0');
    if (mode > 0xffffffffU) {
      return std::nullopt;
    }
  }
  std::string octal;
  for (uint64_t bits = mode & 0777U; octal.empty() || bits != 0; bits /= 8) {
    octal.insert(octal.begin(), static_cast<char>('0' + bits % 8));
  }
  return octal;
}

// What NVIDIA's hook refuses before it runs (its Before), and what it does without running anything.
// Returns nothing when the hook is to run.
std::optional<CdiHookCall> checked_before_run(const NvidiaHook& hook, const Level& level) {
  const std::string name = hook.name;
  if (name == "chmod") {
    const std::string mode = level.last("mode");
    if (trim(mode).empty()) {
      return failed_call(CdiHookCall::Kind::error, name, "chmod: a non-empty --mode must be given");
    }
    if (!nvidia_mode(mode)) {
      return failed_call(CdiHookCall::Kind::error, name,
                         "chmod: --mode " + quote(mode) + " is not an octal mode");
    }
    if (std::ranges::any_of(level.all("path"), [](const std::string& p) { return trim(p).empty(); })) {
      return failed_call(CdiHookCall::Kind::error, name, "chmod: an empty --path");
    }
    if (level.all("path").empty()) {
      return skip_call("");  // NVIDIA's: "No paths specified; exiting"
    }
  }
  if (name == "update-ldcache" && level.has("ldconfig-path") && level.last("ldconfig-path").empty()) {
    return failed_call(CdiHookCall::Kind::error, name, "update-ldcache: --ldconfig-path must not be empty");
  }
  // Without a host version NVIDIA's returns before it reads the state.
  if (name == "enable-cuda-compat" && level.last("host-driver-version").empty() &&
      level.last("host-cuda-version").empty()) {
    return skip_call("");
  }
  return std::nullopt;
}

// gpuctk's command line for `hook` with the values `level` has.
std::vector<std::string> gpuctk_argv(const NvidiaHook& hook, const Level& level, bool quiet) {
  std::vector<std::string> argv{"gpuctk"};
  if (quiet) {
    argv.emplace_back("--quiet");
  }
  argv.insert(argv.end(), {"hook", hook.name});
  for (const auto& flag : hook.flags) {
    if (!level.has(flag.name)) {
      continue;
    }
    std::vector<std::string> values = level.all(flag.name);
    if (flag.kind == FlagKind::value) {
      values = {values.back()};
    }
    if (std::string_view(flag.name) == "mode") {
      values = {*nvidia_mode(values.back())};
    }
    for (const auto& value : values) {
      argv.push_back(std::string(flag.option) + "=" + value);
    }
  }
  return argv;
}

// The flags of `hook`'s level: its own, --help, and the global flags that count there too.
std::vector<LevelFlag> hook_level_flags(const NvidiaHook& hook) {
  std::vector<LevelFlag> flags;
  for (const auto& flag : hook.flags) {
    flags.push_back({flag.name, "", flag.kind});
  }
  flags.insert(flags.end(), {k_help, k_debug, k_quiet});
  return flags;
}

}  // namespace

CdiHookCall parse_nvidia_cdi_hook(const std::vector<std::string>& args, const EnvLookup& env) {
  constexpr LevelFlag k_global[] = {k_debug, k_quiet, k_help, k_version};
  const Level top = parse_level(args, k_global, [](std::string_view word) {
    return is_help_word(word) || find_nvidia_hook(word) != nullptr;
  });
  if (top.problem != Level::Problem::none) {
    if (top.is_true("help")) {
      return help_call("");
    }
    // NVIDIA's OnUsageError: a flag it does not know before any hook of its own is an unsupported hook
    // (its log level is not set yet, so --quiet does not silence it); anything else is the error.
    if (top.problem == Level::Problem::unknown_flag) {
      return skip_call(unsupported(top.positional));
    }
    return failed_call(CdiHookCall::Kind::error, "", "nvidia-cdi-hook: " + level_mistake(top));
  }
  if (top.is_true("help")) {
    return help_call("");
  }
  if (top.is_true("version")) {
    return {.kind = CdiHookCall::Kind::version};
  }
  bool quiet = top.is_true("quiet");
  for (const auto& [name, names] : {std::pair{"debug", std::span<const char* const>(k_debug_env)},
                                    std::pair{"quiet", std::span<const char* const>(k_quiet_env)}}) {
    if (!top.has(name)) {
      const FromEnv from = global_from_env(names, env);
      if (!from.error.empty()) {
        return failed_call(CdiHookCall::Kind::error, "", "nvidia-cdi-hook: " + from.error);
      }
      quiet = std::string_view(name) == "quiet" ? from.value : quiet;
    }
  }
  if (top.positional.empty() || !find_nvidia_hook(top.positional.front())) {
    if (!top.positional.empty() && is_help_word(top.positional.front())) {
      return help_call(top.positional.size() > 1 && find_nvidia_hook(top.positional[1]) ? top.positional[1]
                                                                                        : "");
    }
    return skip_call(quiet ? "" : unsupported(top.positional));
  }
  const NvidiaHook& hook = *find_nvidia_hook(top.positional.front());
  const auto flags = hook_level_flags(hook);
  const Level level = parse_level(std::span(top.positional).subspan(1), flags, is_help_word);
  if (level.problem != Level::Problem::none && !level.is_true("help")) {
    return failed_call(CdiHookCall::Kind::usage_error, hook.name,
                       "nvidia-cdi-hook " + std::string(hook.name) + ": " + level_mistake(level));
  }
  if (level.is_true("help") || (!level.positional.empty() && is_help_word(level.positional.front()))) {
    return help_call(hook.name);
  }
  quiet = level.has("quiet") ? level.is_true("quiet") : quiet;
  if (auto early = checked_before_run(hook, level)) {
    return *early;
  }
  switch (hook.action) {
    case HookAction::nothing:
      return skip_call("");
    case HookAction::gpuctk_hook:
      break;
  }
  return {.kind = CdiHookCall::Kind::run, .hook = hook.name, .argv = gpuctk_argv(hook, level, quiet)};
}

std::string nvidia_cdi_hook_help(const std::string& name) {
  const NvidiaHook* hook = find_nvidia_hook(name);
  if (hook == nullptr) {
    std::string text =
        "Usage: nvidia-cdi-hook [--debug] [--quiet] HOOK [OPTIONS]\n\n"
        "gpuctk answering to the name of NVIDIA's nvidia-cdi-hook (v1.20.0), which the CDI specs of\n"
        "nvidia-ctk v1.17 to v1.20 run as createContainer hooks: each hook runs as `gpuctk hook HOOK`\n"
        "(the config from $GPUCTK_CONFIG or /etc/gpuctk/config.yaml). A hook it does not have, or an\n"
        "option it does not know before the hook's name, is a warning and exit 0, as in NVIDIA's.\n\n"
        "Hooks:\n";
    for (const auto& row : k_hooks) {
      if (std::string_view(row.name) != "noop") {
        text += "  " + std::string(row.name) + ": " + row.summary + "\n";
      }
    }
    text +=
        "\nOptions:\n"
        "  --debug, -d   accepted (NVIDIA_CTK_DEBUG); gpuctk's hooks log as its config says\n"
        "  --quiet       no warnings, only the error line (NVIDIA_CTK_QUIET)\n"
        "  --help, -h    this help; HOOK --help: the hook's\n"
        "  --version, -v gpuctk's version\n";
    return text;
  }
  std::string text = "Usage: nvidia-cdi-hook " + std::string(hook->name) + " [OPTIONS]\n\n" + hook->summary +
                     (hook->action == HookAction::gpuctk_hook
                          ? "; runs as `gpuctk hook " + std::string(hook->name) + "` (see its --help)"
                          : std::string()) +
                     ".\n\nOptions (NVIDIA's; each VALUE of a repeated one may be a comma list):\n";
  for (const auto& flag : hook->flags) {
    text += "  --" + std::string(flag.name) + (flag.kind == FlagKind::boolean ? "" : " VALUE") + ": " +
            flag.note + "\n";
  }
  text += "  --debug, --quiet, --help: as before the hook's name\n";
  return text;
}

int run_nvidia_cdi_hook(const std::vector<std::string>& args) {
  const CdiHookCall call =
      parse_nvidia_cdi_hook(args, [](const std::string& name) -> std::optional<std::string> {
        const char* value = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): one thread
        return value == nullptr ? std::nullopt : std::optional<std::string>(value);
      });
  switch (call.kind) {
    case CdiHookCall::Kind::run: {
      std::vector<std::string> argv = call.argv;
      std::vector<char*> pointers;
      for (auto& arg : argv) {
        pointers.push_back(arg.data());
      }
      pointers.push_back(nullptr);
      return run(static_cast<int>(argv.size()), pointers.data());
    }
    case CdiHookCall::Kind::skip:
      if (!call.message.empty()) {
        warn(call.message);
      }
      return k_exit_ok;
    case CdiHookCall::Kind::help:
      return write_stdout(nvidia_cdi_hook_help(call.hook)) ? k_exit_ok : k_exit_failure;
    case CdiHookCall::Kind::version: {
      std::string version = "--version";
      std::string self = "gpuctk";
      char* argv[] = {self.data(), version.data(), nullptr};
      return run(2, argv);
    }
    case CdiHookCall::Kind::usage_error:
      report(Error{call.message + " (see nvidia-cdi-hook " + call.hook + " --help)"});
      return k_exit_usage;
    case CdiHookCall::Kind::error:
      return report(Error{call.message});
  }
  return k_exit_failure;
}

}  // namespace gpuctk::cli
