// gpuctk cdi generate: discover the host and write its CDI spec.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <span>

#include "cdi/codec.hpp"
#include "cdi/feature_flags.hpp"
#include "cdi/gated_spec.hpp"
#include "cdi/hook_programs.hpp"
#include "cdi/imex_spec.hpp"
#include "cdi/names.hpp"
#include "cdi/spec_builder.hpp"
#include "cdi/vendor_spec.hpp"
#include "cli/commands.hpp"
#include "cli/discovery_options.hpp"
#include "config/config.hpp"
#include "discover/discover.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

struct GenerateArgs {
  std::string output = "-";
  std::string format;
  DiscoveryArgs discovery;
  std::vector<std::string> strategies;
  std::string vendor = "nvidia.com";
  std::string klass = "gpu";
  std::vector<std::string> device_ids;
  bool no_all_device = false;
  bool compat32 = false;
  std::string hook_path;
  std::vector<std::string> library_search_paths;
  std::vector<std::string> disabled_hooks;
  std::vector<std::string> enabled_hooks;
  std::vector<std::string> feature_flags;  // nvidia-ctk's names (cdi/feature_flags.hpp)
  std::string vendor_set;                  // --vendor-set; empty: NVIDIA only, one spec at --output
};

// Whether --output names a directory for --vendor-set's one spec per kind: an existing directory, or a
// path ending in '/'.
bool output_is_directory(const GenerateArgs& args) {
  if (args.vendor_set.empty() || args.output == "-") {
    return false;
  }
  struct stat st {};
  return args.output.ends_with('/') || (::stat(args.output.c_str(), &st) == 0 && S_ISDIR(st.st_mode));
}

// The spec's format: --format, else from the --output extension, else YAML. A mistake is a usage error.
Result<cdi::Format> output_format(const GenerateArgs& args) {
  if (!args.format.empty()) {
    return args.format == "json" ? cdi::Format::json : cdi::Format::yaml;  // checked by check_format
  }
  if (args.output == "-" || output_is_directory(args)) {
    return cdi::Format::yaml;
  }
  auto format = cdi::format_for_path(args.output);
  if (!format) {
    return fail_with("--output " + args.output, format.error());
  }
  return *format;
}

Result<void> check_format(std::string_view format) {
  if (format == "yaml" || format == "json") {
    return {};
  }
  return fail("unknown format " + quote(format) + " (want yaml or json)");
}

// The program the spec's hooks run: --hook-path, else the installed gpuctk (the config's hook-path,
// /usr/bin/gpuctk unless it says otherwise) when it is an executable file, else this binary by the path it
// was started from. A spec outlives the command that wrote it: a build tree's or a copy's path fails
// every container once that file is gone, so the installed one wins even when another gpuctk writes the
// spec (a note says so).
Result<std::string> hook_path(const GenerateArgs& args, const config::Config& config) {
  if (!args.hook_path.empty()) {
    return args.hook_path;
  }
  GPUCTK_TRY_ASSIGN(auto self, self_exe_path());
  const std::string& installed = config.hook_path;
  if (struct stat st{}; installed != self && ::stat(installed.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                        (st.st_mode & 0111) != 0) {
    note("the spec's hooks run the installed gpuctk " + installed + ", not this one (" + self +
         "); --hook-path names another");
    return installed;
  }
  if (auto current = check_self_not_replaced(self); !current) {
    return fail("--hook-path: " + current.error().message + "; name the installed binary with --hook-path");
  }
  return self;
}

bool runs_program(const cdi::Spec& spec, const std::string& path) {
  const auto runs_it = [&](const cdi::ContainerEdits& edits) {
    return std::ranges::any_of(edits.hooks, [&](const cdi::Hook& hook) { return hook.path == path; });
  };
  return runs_it(spec.container_edits) ||
         std::ranges::any_of(spec.devices, [&](const cdi::Device& d) { return runs_it(d.container_edits); });
}

// Warnings about the hook path the specs were written with (cdi/hook_programs.hpp), when a hook of one
// of them runs it, printed after they were written, like discovery's.
void warn_about_hook_path(std::span<const cdi::Spec* const> specs, const std::string& path) {
  if (std::ranges::none_of(specs, [&](const cdi::Spec* spec) { return runs_program(*spec, path); })) {
    return;
  }
  for (const auto& problem : cdi::hook_path_problems(path)) {
    warn("hook path " + problem +
         ": every container given the spec's devices runs it (--hook-path names the installed gpuctk)");
  }
}

// --vendor-set: every vendor's spec is built (and validated) before the first is written; each is then
// written atomically, into the --output directory as <vendor>-<class>.<format>, or (one vendor) to the
// --output file or stdout. A vendor without GPUs gets no spec and one note on stderr; a set with no GPU at
// all is an error.
Result<void> generate_vendor_set(const GenerateArgs& args, cdi::Format format, const cdi::BuildOptions& build,
                                 const discover::DiscoverOptions& options) {
  GPUCTK_TRY_ASSIGN(const auto vendors, cdi::parse_vendor_set(args.vendor_set));
  const bool directory = output_is_directory(args);
  if (!directory && vendors.size() > 1) {
    return fail("--output " + quote(args.output) +
                ": --vendor-set with several vendors writes one spec per kind into a directory; name an "
                "existing directory");
  }
  GPUCTK_TRY_ASSIGN(const auto built, cdi::build_vendor_specs(vendors, options, build));
  for (const auto& line : built.absent) {
    note(line);
  }
  if (built.specs.empty()) {
    std::vector<std::string_view> names;
    for (const auto vendor : vendors) {
      names.push_back(cdi::gpu_vendor_name(vendor));
    }
    return fail("no GPU of " + join(names, ", ") + " on this host: no spec written");
  }
  std::vector<std::pair<std::string, std::string>> files;  // path ("-": stdout), text
  for (const auto& entry : built.specs) {
    std::string path = args.output;
    if (directory) {
      path = args.output + (args.output.ends_with('/') ? "" : "/") +
             cdi::spec_file_name(entry.spec.kind, format);
    }
    files.emplace_back(std::move(path), cdi::write_spec(entry.spec, format));
  }
  for (const auto& [path, text] : files) {
    if (path == "-") {
      GPUCTK_TRY(write_stdout(text));
    } else {
      GPUCTK_TRY(write_file_atomic(path, text, 0644));
    }
  }
  for (const auto& warning : built.warnings) {
    warn(warning);
  }
  std::vector<const cdi::Spec*> written;
  for (const auto& entry : built.specs) {
    written.push_back(&entry.spec);
  }
  warn_about_hook_path(written, build.hook_path);
  return {};
}

// Writes the spec to --output (atomically) or stdout.
Result<void> write_spec_out(const GenerateArgs& args, const cdi::Spec& spec, cdi::Format format) {
  const std::string text = cdi::write_spec(spec, format);
  if (args.output == "-") {
    return write_stdout(text);
  }
  return write_file_atomic(args.output, text, 0644);
}

// --mode imex: the host's IMEX channels alone (cdi/imex_spec.hpp); no driver discovery, no hooks.
Result<void> generate_imex(const GenerateArgs& args, cdi::Format format, const cdi::BuildOptions& build) {
  if (!args.vendor_set.empty()) {
    return fail("--vendor-set: not with --mode imex (IMEX channels are NVIDIA's alone)");
  }
  GPUCTK_TRY_ASSIGN(const auto spec, cdi::generate_imex_spec(args.discovery.dev_root, build));
  return write_spec_out(args, spec, format);
}

// --mode gds, mofed, gdrcopy or nvswitch: that feature's devices alone as the one device "all"
// (cdi/gated_spec.hpp); no driver discovery, no hooks. NVIDIA's v1.20 ignores --device-ids and
// --no-all-device here; gpuctk refuses them rather than write a spec other than the one asked for.
Result<void> generate_gated(const GenerateArgs& args, discover::GatedFeature feature, cdi::Format format,
                            const cdi::BuildOptions& build) {
  const std::string mode = "--mode " + args.discovery.mode;
  if (!args.vendor_set.empty()) {
    return fail("--vendor-set: not with " + mode + " (its devices are NVIDIA's alone)");
  }
  if (std::ranges::any_of(args.device_ids, [](const auto& id) { return id != "all"; })) {
    return fail("--device-ids: not with " + mode + " (its spec's one device is \"all\", every node)");
  }
  if (args.no_all_device) {
    return fail("--no-all-device: not with " + mode + " (its spec's one device is \"all\")");
  }
  GPUCTK_TRY_ASSIGN(const auto spec, cdi::generate_gated_spec(feature, args.discovery.dev_root,
                                                              args.discovery.driver_root, build));
  return write_spec_out(args, spec, format);
}

// Runs the command on checked arguments (every option's value passed its check while parsing).
Result<void> generate(const GenerateArgs& args, cdi::Format format) {
  cdi::BuildOptions build;
  build.vendor = args.vendor;
  build.klass = args.klass;
  if (!args.strategies.empty()) {
    build.name_strategies.clear();
    for (const auto& s : args.strategies) {
      GPUCTK_TRY_ASSIGN(const auto strategy, cdi::parse_name_strategy(s));
      if (std::ranges::find(build.name_strategies, strategy) == build.name_strategies.end()) {
        build.name_strategies.push_back(strategy);
      }
    }
  }
  build.disabled_hooks.insert(args.disabled_hooks.begin(), args.disabled_hooks.end());
  build.enabled_hooks.insert(args.enabled_hooks.begin(), args.enabled_hooks.end());
  build.all_device = !args.no_all_device;
  build.libraries32 = args.compat32;
  build.device_ids = args.device_ids;
  // A broken config file still gives its valid keys; its problems are the hooks' business. Its
  // no-additional-gids-for-device-nodes is the default of what --feature-flag says (the refresh service's
  // command line names no flag).
  const config::Config config = config::read_config("").config;
  if (config.no_additional_gids_for_device_nodes) {
    build.additional_gids = cdi::AdditionalGids::none;
  }
  for (const auto& flag : args.feature_flags) {
    GPUCTK_TRY(cdi::apply_feature_flag(flag, build));
  }
  if (args.discovery.mode == k_imex_mode) {
    return generate_imex(args, format, build);
  }
  if (const auto feature = gated_mode(args.discovery.mode)) {
    return generate_gated(args, *feature, format, build);
  }
  GPUCTK_TRY_ASSIGN(const auto mode, discover::parse_mode(args.discovery.mode));
  build.management = mode == discover::Mode::management;
  GPUCTK_TRY_ASSIGN(build.hook_path, hook_path(args, config));

  discover::DiscoverOptions options;
  options.driver_root = args.discovery.driver_root;
  options.dev_root = args.discovery.dev_root;
  options.mode = mode;
  options.library_search_paths = args.library_search_paths;
  if (!args.vendor_set.empty()) {
    return generate_vendor_set(args, format, build, options);
  }
  GPUCTK_TRY_ASSIGN(auto inventory, discover::discover(options));
  GPUCTK_TRY_ASSIGN(const auto spec, cdi::generate_spec(inventory, build));
  GPUCTK_TRY(write_spec_out(args, spec, format));
  // Optional pieces the host lacks; printed only on success so a failure stays one line.
  for (const auto& warning : inventory.warnings) {
    warn(warning);
  }
  const cdi::Spec* written = &spec;
  warn_about_hook_path({&written, 1}, build.hook_path);
  return {};
}

}  // namespace

Action define_cdi_generate(CLI::App& command) {
  auto args = std::make_shared<GenerateArgs>();
  command
      .add_option("--output,-o", args->output, "Spec file to write (atomically, mode 0644), or - for stdout")
      ->capture_default_str();
  command
      .add_option("--format", args->format, "yaml or json (default: from the --output extension, else yaml)")
      ->check(value_check(check_format));
  add_discovery_options(command, args->discovery, ModeChoice::generate);
  command
      .add_option("--device-name-strategy", args->strategies,
                  "index, uuid or type-index; a comma list or repeated for several (default: index and uuid)")
      ->delimiter(',')
      ->check(value_check(cdi::parse_name_strategy));
  command.add_option("--vendor,--cdi-vendor", args->vendor, "CDI vendor of the spec's kind")
      ->capture_default_str()
      ->check(value_check(cdi::check_vendor));
  command.add_option("--class,--cdi-class", args->klass, "CDI class of the spec's kind")
      ->capture_default_str()
      ->check(value_check(cdi::check_class));
  command
      .add_option(
          "--device-ids,--device-id,--device,--devices", args->device_ids,
          "Only these GPUs: index, UUID, gpu:mig or MIG UUID (default: all); none alone: no GPU "
          "device and no \"all\", only the device \"none\" (env NVCT_EMPTY_DEVICE=) beside the "
          "driver's files and hooks; with --mode imex these IMEX channels: N or channel<N>; with --mode "
          "gds, mofed, gdrcopy or nvswitch only all")
      ->delimiter(',');
  command.add_flag(
      "--no-all-device", args->no_all_device,
      "Do not add the device \"all\" (not with --mode gds, mofed, gdrcopy or nvswitch: their one "
      "device)");
  add_compat32_option(command, args->compat32, Compat32Default::off);
  command
      .add_option(
          "--hook-path,--nvidia-cdi-hook-path,--nvidia-ctk-path", args->hook_path,
          "Absolute path of the gpuctk binary the spec's hooks run (default: the installed gpuctk, the "
          "config's hook-path, when it exists, else this binary)")
      ->check(value_check(check_absolute));
  command.add_option("--library-search-path", args->library_search_paths,
                     "Extra directory (inside the driver root) to search for driver libraries; repeatable");
  command
      .add_option("--disable-hook,--disable-hooks", args->disabled_hooks,
                  "Leave out a hook: create-symlinks, enable-cuda-compat, update-ldcache, "
                  "disable-device-node-modification, update-application-profile, chmod, or all; a comma "
                  "list or repeated")
      ->delimiter(',')
      ->check(value_check(cdi::check_hook_name));
  command
      .add_option("--enable-hook,--enable-hooks", args->enabled_hooks,
                  "Add a hook, over --disable-hook and the hooks that are off by default: chmod (mode 755 "
                  "on a GPU's /dev/dri, for old crun's nested device directories) or any name "
                  "--disable-hook takes but all; a comma list or repeated")
      ->delimiter(',')
      ->check(value_check(cdi::check_enable_hook_name));
  command
      .add_option("--feature-flag,--feature-flags", args->feature_flags,
                  "nvidia-ctk's feature flags: no-additional-gids-for-device-nodes leaves out additionalGids "
                  "(the groups of device nodes others may not both read and write; also the config's key "
                  "of that name), for engines whose CDI library refuses them (podman 4.3.1); "
                  "disable-ipc-discoverer leaves out the persistenced and fabric manager sockets and the MPS "
                  "directory; disable-nvsandboxutils and disable-multiple-csv-devices change nothing; "
                  "enable-explicit-driver-libraries and enable-coherent-annotations are refused; a comma "
                  "list or repeated")
      ->delimiter(',')
      ->check(value_check(cdi::check_feature_flag));
  command
      .add_option("--vendor-set", args->vendor_set,
                  "GPU vendors to write specs for: a comma list of nvidia, amd and intel (default: NVIDIA "
                  "only, one spec at --output). With it, --output names a directory that gets one spec per "
                  "vendor with GPUs, named after its kind (amd.com-gpu.yaml), or a file or - for one vendor; "
                  "a vendor without GPUs gets no spec and one note on stderr")
      ->check(value_check(cdi::parse_vendor_set));
  set_env_names(command);
  return [args, &command] {
    // --output's extension is checked here: with --format it does not matter.
    auto format = output_format(*args);
    if (!format) {
      return usage_error(command, format.error().message);
    }
    if (auto r = generate(*args, *format); !r) {
      return report(r.error());
    }
    return static_cast<int>(k_exit_ok);
  };
}

}  // namespace gpuctk::cli
