// gpuctk's own createContainer hooks on the command line (`gpuctk hook create-symlinks …`) and in `hook
// prestart`'s process: both parse a hook's options from its row of the hook table (steps/commands.hpp)
// with CLI11 and run the row's prepare and body.
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "steps/commands.hpp"
#include "steps/root_edits.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

void add_config_option(CLI::App& command, std::string& config_path) {
  command.add_option("--config", config_path,
                     "Config file (default $GPUCTK_CONFIG or /etc/gpuctk/config.yaml)");
}

namespace {

// Where CLI11 puts a hook's options while it parses them.
struct BoundHook {
  const steps::HookRow* row = nullptr;
  std::string config_path;
  std::string container_spec;  // the OCI state's file; "" or "-": stdin
  std::map<std::string, std::string> values;
  std::map<std::string, std::vector<std::string>> lists;
  std::map<std::string, bool> flags;
  std::map<std::string, CLI::Option*> options;

  // The parsed command line, defaults filled in.
  [[nodiscard]] steps::HookArgs args() const {
    steps::HookArgs out;
    for (const auto& option : row->options) {
      const std::string name = option.name;
      if (options.at(name)->count() == 0) {
        if (option.default_value != nullptr) {
          out.add(name, option.default_value);
        }
        continue;
      }
      switch (option.kind) {
        case steps::HookOption::Kind::value:
          out.add(name, values.at(name));
          break;
        case steps::HookOption::Kind::list:
          for (const auto& value : lists.at(name)) {
            out.add(name, value);
          }
          break;
        case steps::HookOption::Kind::flag:
          out.add(name, "true");
          break;
      }
    }
    return out;
  }
};

// Adds `row`'s options and --config to `command`; they are parsed into the returned BoundHook.
std::shared_ptr<BoundHook> bind_hook(CLI::App& command, const steps::HookRow& row) {
  auto bound = std::make_shared<BoundHook>();
  bound->row = &row;
  add_config_option(command, bound->config_path);
  // NVIDIA's hooks take it (nvidia-cdi-hook's --container-spec, cli/nvidia_cdi_hook.cpp): a runtime
  // writes the state on stdin, a test or a person may name a file. hook prestart has the state already.
  command.add_option("--container-spec", bound->container_spec,
                     "Read the OCI state from this file instead of stdin (\"\" or -: stdin), as NVIDIA's "
                     "hooks do");
  for (const auto& option : row.options) {
    const std::string name = option.name;
    CLI::Option* added = nullptr;
    switch (option.kind) {
      case steps::HookOption::Kind::value:
        added = command.add_option(name, bound->values[name], option.help);
        break;
      case steps::HookOption::Kind::list:
        added = command.add_option(name, bound->lists[name], option.help);
        break;
      case steps::HookOption::Kind::flag:
        added = command.add_flag(name, bound->flags[name], option.help);
        break;
    }
    if (option.value_name != nullptr) {
      added->type_name(option.value_name);
    }
    if (option.required) {
      added->required();
    }
    if (option.default_value != nullptr) {
      added->default_str(option.default_value);
    }
    if (option.check != nullptr) {
      added->check(value_check(option.check));
    }
    bound->options.emplace(name, added);
  }
  command.footer(row.footer);
  return bound;
}

// The OCI state: on stdin as a runtime writes it, or in the file --container-spec names (both bounded).
Result<std::string> read_state(const std::string& container_spec) {
  if (container_spec.empty() || container_spec == "-") {
    return read_hook_stdin("OCI state", steps::k_max_state_size);
  }
  return read_file(container_spec, steps::k_max_state_size);
}

// Runs a hook as a runtime does: loads the config and log, reads the OCI state (bounded), opens the
// container root it names, prepares the hook and runs its body; errors are prefixed with the hook's name
// and reported once (stderr and log).
int run_container_hook(const BoundHook& bound) {
  const std::string name = bound.row->name;
  return run_with_log(bound.config_path,
                      [&](const config::Config& cfg, const config::Log& log) -> Result<void> {
                        auto state = read_state(bound.container_spec);
                        if (!state) {
                          return fail_with(name, state.error());
                        }
                        auto path = steps::container_root_from_state(*state);
                        if (!path) {
                          return fail_with(name, path.error());
                        }
                        auto root = rootfs::Root::open(*path);
                        if (!root) {
                          return fail_with(name, root.error());
                        }
                        GPUCTK_TRY_ASSIGN(auto body, steps::prepare_hook(*bound.row, bound.args(), cfg, log));
                        return body(*root, cfg, log);
                      });
}

}  // namespace

Action define_table_hook(CLI::App& command, const steps::HookRow& row) {
  auto bound = bind_hook(command, row);
  return [bound] { return run_container_hook(*bound); };
}

Result<InProcessBody> prepare_hook_in_process(const std::vector<std::string>& args,
                                              const config::Config& config, const config::Log& log,
                                              std::shared_ptr<const rootfs::SandboxCgroup> cgroup) {
  const auto nothing = [](const rootfs::Root&) -> Result<void> { return {}; };
  rootfs::SandboxLimits limits;
  limits.cgroup = std::move(cgroup);
  const auto in_process = [&config, &log](steps::HookBody body) {
    return InProcessBody([body = std::move(body), &config, &log](const rootfs::Root& root) {
      return body(root, config, log);
    });
  };
  // The lines gpuctk's specs carry: their typed form, no command-line parser between.
  GPUCTK_TRY_ASSIGN(auto typed, steps::prepare_contract_line(args, config, log, limits));
  if (typed) {
    return in_process(std::move(*typed));
  }
  if (args.size() < 3) {
    return fail("hook " + join(args, " ") + ": not a gpuctk hook");
  }
  const steps::HookRow* row = steps::find_hook(args[2]);
  if (row == nullptr) {
    // As `gpuctk hook <name>` run by a runtime: a spec from a newer gpuctk starts without it.
    warn("unknown hook " + quote(args[2]) + " ignored (a spec from a newer gpuctk?)");
    return InProcessBody(nothing);
  }
  // The same command line as `gpuctk hook <name>` (its usage errors name the same command).
  CLI::App app{"", "gpuctk"};
  CLI::App* command = app.add_subcommand("hook")->add_subcommand(row->name);
  const auto bound = bind_hook(*command, *row);
  std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::Success& e) {
    app.exit(e);  // --help: printed, nothing to do
    return InProcessBody(nothing);
  } catch (const CLI::ParseError& e) {
    usage_error(*command, describe_mistake(e, *command));
    return fail("hook " + join(args, " ") + ": exit status " + std::to_string(k_exit_usage));
  }
  GPUCTK_TRY_ASSIGN(auto body, steps::prepare_hook(*row, bound->args(), config, log, limits));
  return in_process(std::move(body));
}

}  // namespace gpuctk::cli
