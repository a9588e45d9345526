#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "gpuctk_commit.hpp"  // generated at build time (cmake/gpuctk_commit.cmake)
#include "steps/commands.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

struct GroupRow {
  const char* name;
  const char* summary;
};

// Command groups: a group alone is a usage error that lists its commands.
constexpr GroupRow k_groups[] = {
    {"cdi", "Container Device Interface specs: generate, validate, list, inject"},
    {"hook",
     "OCI hooks: injection at precreate or prestart, and the createContainer hooks that specs reference"},
    {"system", "The node itself: the NVIDIA device nodes /dev lacks"},
};

// Every command but the hook table's, in the order --help lists them (commands() adds those).
const CommandRow k_commands[] = {
    {"cdi", "generate", "Discover the GPUs and driver of this host and write a CDI spec",
     define_cdi_generate},
    {"cdi", "validate", "Check CDI spec files against the CDI rules; print every problem",
     define_cdi_validate},
    {"cdi", "list", "List the qualified device names resolvable from the CDI spec directories",
     define_cdi_list},
    {"cdi", "inject", "Apply CDI devices to an OCI config.json (of a bundle, or stdin to stdout)",
     define_cdi_inject},
    {"hook", "precreate", "config.json on stdin -> config.json with the requested GPUs on stdout",
     define_hook_precreate},
    {"hook", "prestart",
     "OCI prestart/createRuntime hook: the OCI state on stdin; the requested GPUs put into the created "
     "container live",
     define_hook_prestart},
    {"", "runtime",
     "runc-compatible shim: inject GPUs into the bundle on create, then exec runc/crun; `runtime configure` "
     "adds it to containerd, CRI-O or docker",
     define_runtime},
    // A command of `runtime`, whose arguments are runc's: gpuctk's only as runtime's first argument (run()).
    {"runtime", "configure",
     "Make gpuctk's runtime shim (gpuctk-runtime) a runtime of containerd, CRI-O or docker by editing the "
     "engine's config file",
     define_runtime_configure},
    {"", "install",
     "Install gpuctk on a node from a privileged pod (the node's root at --host-root): binary, config, "
     "engine runtime, CDI spec; --uninstall undoes it",
     define_install},
    {"", "info", "Show what discovery finds: driver, GPUs, MIG devices, driver files, warnings", define_info},
    {"", "labels",
     "Write Kubernetes node labels of the GPUs (GPU Feature Discovery's names) for NFD, or JSON",
     define_labels},
    {"", "config",
     "Show the configuration the hooks and the shim use, each value with where it comes from; --set "
     "key=value writes it",
     define_config},
    {"system", "create-device-nodes",
     "Make the NVIDIA device nodes /dev lacks (nvidiactl, nvidia-modeset, nvidia-uvm, nvidia-uvm-tools, "
     "nvidia<N>), as the driver makes them",
     define_system_create_device_nodes},
};

// k_commands with a row for each of gpuctk's createContainer hooks (steps/commands.hpp) after `hook
// prestart`, in the hook table's order.
const std::vector<CommandRow>& commands() {
  static const std::vector<CommandRow> rows = [] {
    std::vector<CommandRow> out(std::begin(k_commands), std::end(k_commands));
    const auto prestart = std::ranges::find_if(out, [](const CommandRow& row) {
      return std::string_view(row.group) == "hook" && std::string_view(row.name) == "prestart";
    });
    std::vector<CommandRow> hooks;
    for (const auto& hook : steps::hook_table()) {
      hooks.push_back({"hook", hook.name, hook.summary, nullptr, &hook});
    }
    out.insert(prestart + 1, hooks.begin(), hooks.end());
    return out;
  }();
  return rows;
}

}  // namespace

namespace {

// Where the error line goes: stderr, or under --quiet the stderr this process was started with (fd 2 then
// leads to /dev/null, so that every warning and note, wherever it is printed, is left out).
int g_error_fd = STDERR_FILENO;

void print_error(std::string_view what) {
  ::dprintf(g_error_fd, "gpuctk: error: %s\n", escape_for_log(what).c_str());
}

// --quiet: fd 2 to /dev/null, the error line to a copy of the old fd 2. Nothing changes when either
// cannot be opened (the warnings then stay).
void silence_stderr() {
  const int saved = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (saved >= 0 && null >= 0 && ::dup2(null, STDERR_FILENO) >= 0) {
    g_error_fd = saved;
  } else if (saved >= 0) {
    ::close(saved);
  }
  if (null >= 0) {
    ::close(null);
  }
}

}  // namespace

int report(const Error& error) {
  print_error(error.message);
  return k_exit_failure;
}

void warn(std::string_view message) {
  std::fprintf(stderr, "gpuctk: warning: %s\n", escape_for_log(message).c_str());
}

void note(std::string_view message) {
  std::fprintf(stderr, "gpuctk: note: %s\n", escape_for_log(message).c_str());
}

void set_env_names(CLI::App& command) {
  std::string prefix = command_path(command);
  std::ranges::transform(prefix, prefix.begin(), [](char c) {
    return c == ' ' || c == '-' || c == '.' ? '_'
                                            : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  });
  for (CLI::Option* option : command.get_options()) {
    if (option->nonpositional() && !option->get_lnames().empty() && option->get_lnames().front() != "help") {
      std::string name = option->get_lnames().front();
      std::ranges::transform(name, name.begin(), [](char c) {
        return c == '-' || c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      });
      option->envname(prefix + "_" + name);
    }
  }
}

std::string command_path(const CLI::App& command) {
  std::string path = command.get_name();
  for (const CLI::App* parent = command.get_parent(); parent != nullptr; parent = parent->get_parent()) {
    path.insert(0, parent->get_name() + " ");
  }
  return path;
}

int usage_error(const CLI::App& command, std::string_view what) {
  print_error(std::string(what) + " (see " + command_path(command) + " --help)");
  return k_exit_usage;
}

Result<void> write_stdout(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    return fail_errno("write standard output", errno);
  }
  return {};
}

namespace {

// The row that argv names exactly ("gpuctk hook update-ldcache …", "gpuctk info …"), if any; the
// command of a command ("gpuctk runtime configure …") before the command itself.
const CommandRow* named_command(int argc, char** argv) {
  if (argc < 2) {
    return nullptr;
  }
  const std::string_view first = argv[1];
  const CommandRow* top = nullptr;
  for (const auto& row : commands()) {
    const std::string_view group = row.group;
    if (group.empty()) {
      top = first == row.name ? &row : top;
    } else if (argc >= 3 && first == group && std::string_view(argv[2]) == row.name) {
      return &row;
    }
  }
  return top;
}

// Whether `row` is needed to define `only`: it is `only`, or the command `only` is a command of.
bool needed_for(const CommandRow& row, const CommandRow& only) {
  return &row == &only || (row.group[0] == '\0' && std::string_view(only.group) == row.name);
}

// A command whose arguments belong to another program (runtime: runc's, CLI11's prefix_command) has
// commands of its own only as its first argument: anywhere later the word is that program's like any
// other. Each is disabled unless it is the argument that follows `command` (`left` arguments remain then;
// `argv` as given to CLI11, which takes them from the end).
void commands_only_first(CLI::App& command, int argc, char** argv) {
  command.preparse_callback([&command, argc, argv](size_t left) {
    const std::string_view next = left > 0 && left < static_cast<size_t>(argc) ? argv[argc - left] : "";
    for (CLI::App* sub : command.get_subcommands([](const CLI::App*) { return true; })) {
      sub->disabled(sub->get_name() != next);
    }
  });
}

// "a, b or c".
std::string one_of(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  return out;
}

}  // namespace

// CLI11 checks required options before unexpected arguments, but a misspelt option is usually why a
// required one is missing, so an argument nothing took is named first.
std::string describe_mistake(const CLI::ParseError& error, const CLI::App& at) {
  const auto commands = at.get_subcommands([](const CLI::App*) { return true; });
  if (const auto extras = at.remaining(); !extras.empty()) {
    const std::string& first = extras.front();
    if (first.size() > 1 && first.front() == '-') {
      return "unknown option " + quote(first.substr(0, first.find('=')));
    }
    if (!commands.empty()) {
      const std::string path = command_path(at);
      const auto space = path.find(' ');
      const std::string group = space == std::string::npos ? "" : path.substr(space + 1) + " ";
      return "unknown command " + quote(group + first);
    }
    return "unexpected argument " + quote(first);
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    if (!commands.empty() && at.get_subcommands().empty()) {
      std::vector<std::string> names;
      for (const CLI::App* command : commands) {
        names.push_back(command->get_name());
      }
      return "missing command: " + one_of(names);
    }
    for (const CLI::Option* option : at.get_options()) {
      if (option->get_required() && option->count() == 0) {
        return option->nonpositional() ? "missing option " + option->get_name()
                                       : "missing " + option->get_type_name() + " argument";
      }
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    // "--output: 1 required TEXT missing": the option is last on the command line, without its value.
    for (const CLI::Option* option : at.get_options()) {
      if (option->nonpositional() && std::string_view(error.what()).starts_with(option->get_name() + ": ")) {
        return option->get_name() + " needs a value";
      }
    }
  }
  return error.what();  // already "<option>: <what>" (a value a check refused) or a sentence
}

int run(int argc, char** argv) {
  // A spec written by a newer gpuctk may name a hook this binary does not have: starting the container
  // without it beats refusing it (the hooks are refinements), so warn and succeed.
  if (argc >= 3 && std::string_view(argv[1]) == "hook" && argv[2][0] != '-') {
    const std::string_view name = argv[2];
    const bool known = std::ranges::any_of(commands(), [&](const CommandRow& row) {
      return std::string_view(row.group) == "hook" && name == row.name;
    });
    if (!known) {
      warn("unknown hook " + quote(name) + " ignored (a spec from a newer gpuctk?)");
      return k_exit_ok;
    }
  }
  CLI::App app{"gpuctk: gives containers their GPUs (CDI spec generator and OCI hook)", "gpuctk"};
  // The release and the commit it was built from ("unknown" outside a git tree; "-dirty": changed files).
  app.set_version_flag("--version", "gpuctk " GPUCTK_VERSION " (commit " GPUCTK_COMMIT ")");
  app.require_subcommand(1);
  app.fallthrough(false);
  // nvidia-ctk's global flags, before the command. gpuctk's commands print every warning and note they
  // have, so --debug shows nothing more; --quiet leaves out all but the error line.
  bool quiet = false;
  bool debug = false;  // nothing more to show
  app.add_flag("--debug,-d", debug, "Accepted as nvidia-ctk's: gpuctk's commands always print every warning")
      ->envname("GPUCTK_DEBUG");
  app.add_flag("--quiet", quiet, "Print nothing on stderr but the error line (no warnings or notes)")
      ->envname("GPUCTK_QUIET");

  // A hook runs once per container start: when argv names a command, only that command is defined
  // (defining all of them is two thirds of a hook's user-space instructions). Otherwise, e.g. for
  // --help or a mistake, all are, so that CLI11 lists them.
  const CommandRow* only = named_command(argc, argv);
  std::map<std::string, CLI::App*> groups;
  for (const auto& group : k_groups) {
    if (only == nullptr || std::string_view(only->group) == group.name) {
      CLI::App* sub = app.add_subcommand(group.name, group.summary);
      sub->require_subcommand(1);
      groups.emplace(group.name, sub);
    }
  }
  std::map<const CLI::App*, Action> actions;
  std::map<std::string_view, CLI::App*> top_commands;  // for the commands of a command
  for (const auto& row : commands()) {
    if (only != nullptr && !needed_for(row, *only)) {
      continue;
    }
    const bool top = row.group[0] == '\0';
    const auto group = groups.find(row.group);
    CLI::App* parent = top ? &app : group != groups.end() ? group->second : top_commands.at(row.group);
    CLI::App* command = parent->add_subcommand(row.name, row.summary);
    actions.emplace(command,
                    row.hook != nullptr ? define_table_hook(*command, *row.hook) : row.define(*command));
    if (top) {
      top_commands.emplace(row.name, command);
    } else if (group == groups.end() && parent->get_prefix_command()) {
      commands_only_first(*parent, argc, argv);
    }
  }

  // The deepest parsed subcommand: the chosen command, or where a mistake was found.
  const auto deepest = [&app]() -> const CLI::App* {
    const CLI::App* at = &app;
    while (!at->get_subcommands().empty()) {
      at = at->get_subcommands().front();
    }
    return at;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e) == 0 ? k_exit_ok : k_exit_usage;  // --help, --version: printed on stdout
  } catch (const CLI::ParseError& e) {
    // Every other mistake is one line, never CLI11's two ("…", "Run with --help for more information.").
    const CLI::App* at = deepest();
    return usage_error(*at, describe_mistake(e, *at));
  }
  if (quiet) {
    silence_stderr();
  }
  const CLI::App* chosen = deepest();
  const auto action = actions.find(chosen);
  if (action == actions.end()) {
    return usage_error(*chosen, "missing command");
  }
  return action->second();
}

}  // namespace gpuctk::cli
