// gpuctk cdi inject: apply CDI devices to a config.json — of a bundle (replaced atomically), or from
// stdin to stdout. A tool for people and tests; the runtime paths use the same injection code.
#include <memory>

#include "cli/commands.hpp"
#include "config/config.hpp"
#include "inject/inject.hpp"
#include "oci/bundle.hpp"
#include "util/file.hpp"

namespace gpuctk::cli {

namespace {

struct InjectArgs {
  std::vector<std::string> devices;
  std::string bundle;
  std::string config_path;
  std::vector<std::string> spec_dirs;
};

}  // namespace

Action define_cdi_inject(CLI::App& command) {
  auto args = std::make_shared<InjectArgs>();
  command
      .add_option("--device,-d", args->devices, "Fully qualified CDI device (vendor/class=name); repeatable")
      ->required();
  command.add_option("--bundle,-b", args->bundle,
                     "OCI bundle whose config.json is edited in place (default: stdin to stdout)");
  command.add_option("--spec-dir", args->spec_dirs,
                     "CDI spec directory, lowest priority first (default: from the config)");
  command.add_option("--config", args->config_path,
                     "Config file (default $GPUCTK_CONFIG or /etc/gpuctk/config.yaml)");
  return [args] {
    return run_with_log(args->config_path,
                        [&](const config::Config& loaded, const config::Log& log) -> Result<void> {
                          config::Config cfg = loaded;
                          if (!args->spec_dirs.empty()) {
                            cfg.spec_dirs = args->spec_dirs;
                          }
                          Result<nlohmann::ordered_json> config =
                              args->bundle.empty() ? [&]() -> Result<nlohmann::ordered_json> {
                            GPUCTK_TRY_ASSIGN(auto text, read_file("/dev/stdin"));
                            return oci::parse_config(text);
                          }()
                              : oci::read_config(args->bundle);
                          if (!config) {
                            return std::unexpected(config.error());
                          }
                          GPUCTK_TRY(inject::inject_devices(*config, args->devices, cfg, log));
                          if (!args->bundle.empty()) {
                            return oci::write_config(args->bundle, *config);
                          }
                          return write_stdout(oci::dump_config(*config));
                        });
  };
}

}  // namespace gpuctk::cli
