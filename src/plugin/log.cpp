#include "plugin/log.hpp"

#include <unistd.h>

#include <string>

#include "util/strings.hpp"

namespace gpuctk::plugin {

namespace {

void log_line(std::string_view prefix, std::string_view text) {
  std::string line = "gpuctk-device-plugin: ";
  line.append(prefix).append(escape_for_log(text)).push_back('\n');
  // Nothing to do when stderr is gone.
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace

void log(std::string_view text) {
  log_line("", text);
}

void log_error(std::string_view text) {
  log_line("error: ", text);
}

}  // namespace gpuctk::plugin
