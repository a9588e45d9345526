// gpuctk system create-device-nodes: the NVIDIA device nodes /dev lacks (install/device_nodes.hpp), as
// nvidia-ctk's command of that name makes them; one line per node on stdout, notes on stderr.
#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/discovery_options.hpp"
#include "install/device_nodes.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

struct NodesArgs {
  std::string dev_root = "/";
  bool control = false;
  bool gpus = false;
  bool dry_run = false;
};

Result<void> create(const NodesArgs& args) {
  // Neither or both: every node; nvidia-ctk's --control-devices alone: the control nodes.
  const install::NodeSet set = args.control == args.gpus ? install::NodeSet::all
                               : args.control            ? install::NodeSet::control
                                                         : install::NodeSet::gpus;
  GPUCTK_TRY_ASSIGN(const auto result, install::create_device_nodes(args.dev_root, set, args.dry_run));
  std::string out;
  for (const auto& node : result.nodes) {
    out += install::describe(node, args.dry_run) + "\n";
  }
  GPUCTK_TRY(write_stdout(out));
  for (const auto& note : result.notes) {
    cli::note(note);
  }
  return {};
}

}  // namespace

Action define_system_create_device_nodes(CLI::App& command) {
  auto args = std::make_shared<NodesArgs>();
  command
      .add_option("--dev-root", args->dev_root,
                  "Root of /dev and /proc: the nodes are made in <dev-root>/dev from <dev-root>/proc/devices "
                  "and <dev-root>/proc/driver/nvidia/gpus")
      ->capture_default_str()
      ->check(value_check(check_absolute));
  command.add_flag("--control-devices", args->control,
                   "The control nodes: nvidiactl, nvidia-modeset, nvidia-uvm, nvidia-uvm-tools (with neither "
                   "this nor --gpu-devices: all)");
  command.add_flag("--gpu-devices", args->gpus,
                   "The GPUs' nodes: /dev/nvidia<minor> of each GPU the driver lists");
  command.add_flag("--dry-run", args->dry_run, "Say what would be made; make nothing");
  set_env_names(command);
  return [args] {
    if (auto done = create(*args); !done) {
      return report(done.error());
    }
    return static_cast<int>(k_exit_ok);
  };
}

}  // namespace gpuctk::cli
