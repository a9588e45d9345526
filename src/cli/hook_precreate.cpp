// gpuctk hook precreate: the podman hooks.d `precreate` stage (CRI-O runs no precreate hooks; it has the
// prestart hook). The full config.json arrives on stdin and the config to run with leaves on stdout; a
// config that asks for no GPU comes back byte for byte.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "hook/config.hpp"
#include "hook/inject.hpp"
#include "oci/bundle.hpp"
#include "util/file.hpp"

namespace gpuctk::cli {

int run_with_log(const std::string& config_path,
                 const std::function<Result<void>(const hook::Config&, const hook::Log&)>& body) {
  auto cfg = hook::load_config(config_path);
  if (!cfg) {
    return report(cfg.error());
  }
  auto log = hook::Log::open(cfg->log_file, cfg->log_level);
  if (!log) {
    return report(log.error());
  }
  if (auto r = body(*cfg, *log); !r) {
    log->error(r.error().message);
    return report(r.error());
  }
  return k_exit_ok;
}

Action define_hook_precreate(CLI::App& command) {
  auto config_path = std::make_shared<std::string>();
  command.add_option("--config", *config_path,
                     "Config file (default $GPUCTK_CONFIG or /etc/gpuctk/config.yaml)");
  command.footer(
      "Reads an OCI config.json on stdin and writes it, with the requested GPUs injected, to stdout.");
  return [config_path] {
    return run_with_log(*config_path, [](const hook::Config& cfg, const hook::Log& log) -> Result<void> {
      GPUCTK_TRY_ASSIGN(auto input, read_fd(STDIN_FILENO, "standard input", SIZE_MAX));
      GPUCTK_TRY_ASSIGN(auto config, oci::parse_config(input));
      GPUCTK_TRY_ASSIGN(auto result, hook::inject_request(config, cfg, log));
      return write_stdout(result.changed ? oci::dump_config(config) : input);
    });
  };
}

}  // namespace gpuctk::cli
