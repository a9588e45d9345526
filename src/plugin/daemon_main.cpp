// gpuctk-device-plugin's entry point (plugin/daemon.hpp).
#include <string_view>
#include <vector>

#include "plugin/daemon.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  return gpuctk::plugin::run_daemon(args);
}
