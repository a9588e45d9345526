// gpuctk cdi validate FILE...: every problem of every spec file, on stderr.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cdi/hook_programs.hpp"
#include "cdi/registry.hpp"
#include "cli/commands.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

Action define_cdi_validate(CLI::App& command) {
  auto files = std::make_shared<std::vector<std::string>>();
  command.add_option("files", *files, "CDI spec files (.json or .yaml)")->required()->type_name("FILE");
  command.footer(
      "Parses each file strictly (unknown or duplicate keys are errors) and checks it against the CDI "
      "rules,\n"
      "including that cdiVersion is not lower than the content needs. Prints every problem on stderr as\n"
      "FILE: WHERE: WHAT (a read or parse error as FILE: MESSAGE) and nothing when all files are valid.\n"
      "A valid file whose hooks run a program this host does not have gets a warning,\n"
      "FILE: warning: hook program PATH does not exist: ..., and does not change the exit status: the\n"
      "program is the node's business, and specs may be checked where they are not used.\n"
      "Exit status: 0 all files valid, 1 a file has problems, 2 usage error.");
  return [files] {
    int status = k_exit_ok;
    for (const std::string& file : *files) {
      const auto loaded = cdi::load_spec_file(file);
      for (const std::string& error : loaded.errors) {
        std::fprintf(stderr, "%s: %s\n", escape_for_log(file).c_str(), escape_for_log(error).c_str());
        status = k_exit_failure;
      }
      if (loaded.spec) {
        for (const std::string& missing : cdi::missing_hook_programs(*loaded.spec)) {
          std::fprintf(stderr, "%s: warning: %s\n", escape_for_log(file).c_str(),
                       escape_for_log(missing).c_str());
        }
      }
    }
    return status;
  };
}

}  // namespace gpuctk::cli
