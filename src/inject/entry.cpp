#include "inject/entry.hpp"

#include <utility>

#include <nlohmann/json.hpp>

#include "inject/request.hpp"

namespace gpuctk::inject {

HookStart start_hook(const std::string& config_path) {
  auto file = config::read_config(config_path);
  auto opened = config::open_log(file.config);
  HookStart start{std::move(file.config), std::move(opened.log), std::move(file.warnings),
                  std::move(file.error)};
  if (opened.warning) {
    start.warnings.push_back(std::move(*opened.warning));
  }
  if (!start.problem && opened.error) {
    start.problem = std::move(opened.error);
  }
  return start;
}

void announce_warnings(const HookStart& start, const Warn& warn) {
  for (const auto& warning : start.warnings) {
    warn(warning);
    start.log.warning(warning);
  }
}

Result<Gate> gate(const HookStart& start, const nlohmann::ordered_json& container, std::string_view what,
                  const Warn& warn) {
  if (!start.problem) {
    return Gate::inject;
  }
  if (may_request_gpu(container)) {
    return std::unexpected(*start.problem);
  }
  const std::string warning =
      start.problem->message + "; " + std::string(what) + " asks for no GPU: left as it is";
  warn(warning);
  start.log.warning(warning);
  return Gate::pass_through;
}

}  // namespace gpuctk::inject
