// gpuctk-dra-plugin's entry point (dra/daemon.hpp).
#include <string_view>
#include <vector>

#include "dra/daemon.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  return gpuctk::dra::run_dra_plugin(args);
}
