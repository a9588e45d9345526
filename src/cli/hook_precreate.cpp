// gpuctk hook precreate: the podman hooks.d `precreate` stage (CRI-O runs no precreate hooks; it has the
// prestart hook). The full config.json arrives on stdin and the config to run with leaves on stdout; a
// config that asks for no GPU comes back byte for byte, whatever the config file says.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "config/config.hpp"
#include "inject/container_label.hpp"
#include "inject/entry.hpp"
#include "inject/inject.hpp"
#include "inject/request.hpp"
#include "oci/bundle.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

Result<std::string> read_hook_stdin(std::string_view what, size_t limit) {
  if (::isatty(STDIN_FILENO) == 1) {
    return fail("stdin is a terminal, not the " + std::string(what) +
                " a runtime writes (this is a hook: a runtime runs it)");
  }
  GPUCTK_TRY_ASSIGN(auto text,
                    read_fd(STDIN_FILENO, "the " + std::string(what) + " on standard input", limit));
  if (text.empty()) {
    return fail("no " + std::string(what) + " on stdin (a runtime writes it there)");
  }
  return text;
}

int run_with_log(const std::string& config_path,
                 const std::function<Result<void>(const config::Config&, const config::Log&)>& body) {
  const inject::HookStart start = inject::start_hook(config_path);
  inject::announce_warnings(start, warn);
  if (start.problem) {
    start.log.error(start.problem->message);
    return report(*start.problem);
  }
  if (auto r = body(start.config, start.log); !r) {
    start.log.error(r.error().message);
    return report(r.error());
  }
  return k_exit_ok;
}

namespace {

Result<void> precreate(inject::HookStart& start) {
  GPUCTK_TRY_ASSIGN(auto input, read_hook_stdin("OCI config.json", oci::k_max_config_size));
  GPUCTK_TRY_ASSIGN(auto config, oci::parse_config(input));
  // podman passes config.json alone: the label is all there is to say which container this is.
  start.log.set_context(inject::container_label(config));
  inject::announce_warnings(start, warn);
  start.warnings.clear();
  GPUCTK_TRY_ASSIGN(const auto gated, inject::gate(start, config, "the container", warn));
  if (gated == inject::Gate::pass_through) {
    return write_stdout(input);
  }
  GPUCTK_TRY_ASSIGN(auto result, inject::inject_request(config, start.config, start.log));
  return write_stdout(result.changed ? oci::dump_config(config) : input);
}

}  // namespace

Action define_hook_precreate(CLI::App& command) {
  auto config_path = std::make_shared<std::string>();
  command.add_option("--config", *config_path,
                     "Config file (default $GPUCTK_CONFIG or /etc/gpuctk/config.yaml)");
  command.footer(
      "Reads an OCI config.json on stdin and writes it, with the requested GPUs injected, to stdout. A "
      "container that asks for no GPU comes back unchanged even when the config file is broken (a warning "
      "on stderr and in the log); one that does fails with the config's error.");
  return [config_path] {
    inject::HookStart start = inject::start_hook(*config_path);
    if (auto r = precreate(start); !r) {
      inject::announce_warnings(start, warn);  // when the input could not be read: still said once
      start.log.error(r.error().message);
      return report(r.error());
    }
    return static_cast<int>(k_exit_ok);
  };
}

}  // namespace gpuctk::cli
