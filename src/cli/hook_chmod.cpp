// gpuctk hook chmod --mode M --path P...: permissions of directories inside the container (not emitted
// by default; for rootless runtimes that create nested /dev directories with the wrong mode).
#include <memory>

#include "cli/commands.hpp"
#include "hook/container_hooks.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

// "755" -> 0755: one to four octal digits.
Result<unsigned> parse_octal_mode(std::string_view text) {
  if (text.empty() || text.size() > 4 || text.find_first_not_of("01234567") != std::string_view::npos) {
    return fail(quote(text) + " is not an octal mode such as 755");
  }
  unsigned mode = 0;
  for (const char c : text) {
    mode = mode * 8 + static_cast<unsigned>(c - '0');
  }
  return mode;
}

}  // namespace

Action define_hook_chmod(CLI::App& command) {
  struct Args {
    std::string config_path;
    std::string mode;
    std::vector<std::string> paths;
  };
  auto args = std::make_shared<Args>();
  add_config_option(command, args->config_path);
  command.add_option("--mode", args->mode, "Octal mode, e.g. 755")
      ->required()
      ->check(value_check(parse_octal_mode));
  command.add_option("--path", args->paths, "A container path")->required();
  command.footer(
      "A createContainer hook: reads the OCI state on stdin. Never follows a symlink; EPERM is ignored.");
  return [args] {
    return run_container_hook(
        args->config_path, "chmod",
        [args](const rootfs::Root& root, const hook::Config&, const hook::Log&) -> Result<void> {
          GPUCTK_TRY_ASSIGN(const unsigned mode, parse_octal_mode(args->mode));  // checked
          GPUCTK_TRY(hook::chmod_paths(root, mode, args->paths));
          return {};
        });
  };
}

}  // namespace gpuctk::cli
