// gpuctk-mps-control-daemon's entry point (plugin/mps_daemon.hpp).
#include <string_view>
#include <vector>

#include "plugin/mps_daemon.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  return gpuctk::plugin::run_mps_control_daemon(args);
}
