// gpuctk cdi validate FILE...: every problem of every spec file, on stderr.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cdi/registry.hpp"
#include "cli/commands.hpp"

namespace gpuctk::cli {

Action define_cdi_validate(CLI::App& command) {
  auto files = std::make_shared<std::vector<std::string>>();
  command.add_option("files", *files, "CDI spec files (.json or .yaml)")->required()->type_name("FILE");
  command.footer(
      "Parses each file strictly (unknown or duplicate keys are errors) and checks it against the CDI "
      "rules,\n"
      "including that cdiVersion is not lower than the content needs. Prints every problem on stderr as\n"
      "FILE: WHERE: WHAT (a read or parse error as FILE: MESSAGE) and nothing when all files are valid.\n"
      "Exit status: 0 all files valid, 1 a file has problems, 2 usage error.");
  return [files] {
    int status = k_exit_ok;
    for (const std::string& file : *files) {
      for (const std::string& error : cdi::load_spec_file(file).errors) {
        std::fprintf(stderr, "%s: %s\n", file.c_str(), error.c_str());
        status = k_exit_failure;
      }
    }
    return status;
  };
}

}  // namespace gpuctk::cli
