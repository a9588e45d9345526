// gpuctk: thin entry point; everything lives in gpuctk_core.
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  try {
    return gpuctk::cli::run(argc, argv);
  } catch (const std::exception& e) {
    return gpuctk::cli::report(gpuctk::Error{std::string("internal error: ") + e.what()});
  }
}
