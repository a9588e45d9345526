// gpuctk labels: node labels from discovery, as a Node Feature Discovery feature file or JSON.
#include "labels/labels.hpp"

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/discovery_options.hpp"
#include "discover/discover.hpp"
#include "discover/node.hpp"
#include "install/install.hpp"
#include "labels/sharing_config.hpp"
#include "util/file.hpp"
#include "util/file_watch.hpp"
#include "util/stop_signals.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

// NFD's local source reads every file of this directory (GFD writes "gfd" beside it).
constexpr const char* k_default_output = "/etc/kubernetes/node-feature-discovery/features.d/gpuctk";
// A device plugin config is a few KiB; anything near this is not one.
constexpr size_t k_max_config_size = 1024 * 1024;

struct LabelsArgs : DiscoveryArgs {
  std::string output = k_default_output;
  std::string format = "nfd";
  std::string config_file;
  std::string mig_strategy;  // empty: the config file's flags.migStrategy, else none
  unsigned watch_seconds = 0;
};

Result<void> check_labels_format(std::string_view format) {
  if (format == "nfd" || format == "json") {
    return {};
  }
  return fail("unknown format " + quote(format) + " (want nfd or json)");
}

Result<void> check_mig_strategy(std::string_view text) {
  GPUCTK_TRY(labels::parse_mig_strategy(text));
  return {};
}

// The labels' text and the warnings about them.
struct Computed {
  std::string text;
  std::vector<std::string> warnings;
};

Result<Computed> compute_labels(const LabelsArgs& args) {
  std::optional<labels::SharingConfig> config;
  if (!args.config_file.empty()) {
    GPUCTK_TRY_ASSIGN(const auto text, read_file(args.config_file, k_max_config_size));
    auto parsed = labels::parse_sharing_config(text);
    if (!parsed) {
      return fail_with(args.config_file, parsed.error());
    }
    config = std::move(*parsed);
  }
  labels::NvidiaOptions options;
  options.sharing = config ? &*config : nullptr;
  if (!args.mig_strategy.empty()) {
    GPUCTK_TRY_ASSIGN(options.mig_strategy, labels::parse_mig_strategy(args.mig_strategy));
  } else if (config && config->mig_strategy) {
    options.mig_strategy = *config->mig_strategy;
  }

  GPUCTK_TRY_ASSIGN(const auto mode, discover::parse_mode(args.mode));
  discover::DiscoverOptions discover_options;
  discover_options.driver_root = args.driver_root;
  discover_options.dev_root = args.dev_root;
  discover_options.mode = mode;
  GPUCTK_TRY_ASSIGN(const auto node, discover::discover_node(discover_options));
  std::vector<std::string> warnings = node.warnings;
  if (config) {
    for (const auto& warning : config->warnings) {
      warnings.push_back(args.config_file + ": " + warning);
    }
  }
  GPUCTK_TRY_ASSIGN(const auto labels,
                    labels::node_labels(node.nvidia, node.facts, options, warnings, node.drm));
  if (labels.empty()) {
    // An empty file is right for NFD (no labels), but whoever runs this wants to know why.
    if (!node.no_nvidia_driver.empty()) {
      warnings.push_back(node.no_nvidia_driver + ": no nvidia.com labels");
    }
    warnings.push_back("no GPU found: no labels");
  }

  return Computed{.text = args.format == "json" ? labels::format_json(labels) : labels::format_nfd(labels),
                  .warnings = std::move(warnings)};
}

// Writes the labels; with `only_if_changed` (the watch loop's later rounds), nothing at all when the
// output already holds them.
Result<void> write_labels(const LabelsArgs& args, std::string& last, bool only_if_changed) {
  GPUCTK_TRY_ASSIGN(const auto computed, compute_labels(args));
  if (only_if_changed && computed.text == last) {
    return {};
  }
  if (args.output == "-") {
    GPUCTK_TRY(write_stdout(computed.text));
  } else {
    // A node without NFD yet has no features.d: made (0755), as GPU Feature Discovery makes it, so the
    // labels are there when NFD starts. NFD re-reads the file at any time: never a partial one. It
    // outlives the boot: durable.
    if (const auto dir = std::filesystem::path(args.output).parent_path(); !dir.empty()) {
      GPUCTK_TRY(install::make_dirs(dir.string()));
    }
    GPUCTK_TRY(write_file_atomic(args.output, computed.text, 0644));
  }
  last = computed.text;
  // Printed only on success, so that a failure stays one line.
  for (const auto& warning : computed.warnings) {
    warn(warning);
  }
  return {};
}

// The config file's watch (util/file_watch.hpp); none without --config-file, or when its directory
// cannot be watched (a warning: the file is then re-read on the timer only).
std::optional<FileWatch> watch_config(const LabelsArgs& args, const sigset_t& stop) {
  if (args.config_file.empty()) {
    return std::nullopt;
  }
  auto watch = FileWatch::open(args.config_file, stop);
  if (!watch) {
    warn(watch.error().message + ": the config file is read again every " +
         std::to_string(args.watch_seconds) + " seconds only");
    return std::nullopt;
  }
  return std::move(*watch);
}

// Waits for the next round: true when a stop signal came.
Result<bool> next_round(std::optional<FileWatch>& watch, const sigset_t& stop, unsigned seconds) {
  if (!watch) {
    return wait_for_stop(stop, seconds);
  }
  GPUCTK_TRY_ASSIGN(const auto wake, watch->wait(seconds));
  return wake == FileWatch::Wake::stopped;
}

// --watch: the labels again every `seconds`, and at once when the --config-file changes (the device
// plugin, or its per-node config, rewrote it: the sharing labels follow within a moment), written when
// they changed (a driver loaded or upgraded, a MIG layout changed), until SIGTERM or SIGINT. A failed
// round is one error line and is tried again; the file stays as it was, and stays when the watch stops
// (as GPU Feature Discovery leaves its file): a rolling update must not take the node's labels away, and
// the pods selected by them.
Result<void> watch_labels(const LabelsArgs& args, const sigset_t& stop, std::string last) {
  auto watch = watch_config(args, stop);
  for (;;) {
    GPUCTK_TRY_ASSIGN(const bool stopped, next_round(watch, stop, args.watch_seconds));
    if (stopped) {
      return {};
    }
    if (auto done = write_labels(args, last, true); !done) {
      std::fprintf(stderr, "gpuctk: error: %s\n", escape_for_log(done.error().message).c_str());
    }
  }
}

}  // namespace

Action define_labels(CLI::App& command) {
  auto args = std::make_shared<LabelsArgs>();
  command
      .add_option("--output,-o", args->output,
                  "Label file to write (atomically, mode 0644) for NFD's local source, or - for stdout")
      ->capture_default_str();
  command.add_option("--format", args->format, "nfd (key=value lines) or json")
      ->capture_default_str()
      ->check(value_check(check_labels_format));
  add_discovery_options(command, *args, ModeChoice::node);
  command.add_option("--config-file", args->config_file,
                     "The NVIDIA device plugin's config file (flags.migStrategy; sharing: timeSlicing or mps "
                     "replicas)");
  command
      .add_option("--mig-strategy", args->mig_strategy,
                  "none, single or mixed (default: the config file's flags.migStrategy, else none)")
      ->check(value_check(check_mig_strategy));
  command
      .add_option("--watch", args->watch_seconds,
                  "Stay running; every SECONDS, and at once when the --config-file changes, write the labels "
                  "again when they changed (0: exit); the file stays when SIGTERM or SIGINT stops it")
      ->type_name("SECONDS")
      ->capture_default_str();
  set_env_names(command);
  return [args] {
    std::optional<sigset_t> stop;
    if (args->watch_seconds != 0) {
      auto blocked = block_stop_signals();
      if (!blocked) {
        return report(blocked.error());
      }
      stop = *blocked;
    }
    std::string last;
    if (auto r = write_labels(*args, last, false); !r) {
      return report(r.error());
    }
    if (stop) {
      if (auto r = watch_labels(*args, *stop, last); !r) {
        return report(r.error());
      }
    }
    return static_cast<int>(k_exit_ok);
  };
}

}  // namespace gpuctk::cli
