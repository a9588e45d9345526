#pragma once
// gpuctk's own createContainer hooks, as one table: each row is a hook's name, the options it takes and
// what it does (prepare on the host side, then a body on the opened container root). The CLI subcommands
// (`gpuctk hook create-symlinks|enable-cuda-compat|update-ldcache|disable-device-node-modification|chmod|
// container-start`, cli/container_hook.cpp) parse a person's command line with these options (CLI11, in
// cli/) into HookArgs and run the row. `hook prestart` (which runs a spec's gpuctk hooks in its own process
// instead of exec'ing gpuctk again for each) gives the lines gpuctk's specs carry to prepare_contract_line:
// the contract's parse (cdi/hook_args.hpp), then the same steps, no CLI between; other gpuctk lines go
// through the row. The names and options of the NVIDIA-named rows are nvidia-ctk's, so that specs
// nvidia-ctk wrote keep working.

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cdi/hook_args.hpp"
#include "config/config.hpp"
#include "config/log.hpp"
#include "rootfs/in_root.hpp"
#include "rootfs/sandbox.hpp"
#include "util/error.hpp"

namespace gpuctk::steps {

// One option of a hook's command line.
struct HookOption {
  enum class Kind : uint8_t {
    value,  // --name VALUE, the last one given counts
    list,   // --name VALUE, repeated; every value kept in order
    flag,   // --name, no value: "true" when given
  };
  const char* name;                     // "--link"
  Kind kind = Kind::value;              //
  const char* help = "";                // for --help
  const char* value_name = nullptr;     // for --help ("TARGET::LINK"); null: CLI11's
  bool required = false;                // a missing one is a usage error
  const char* default_value = nullptr;  // the value when not given (shown in --help); null: none
  Result<void> (*check)(std::string_view value) = nullptr;  // a refused value is a usage error
};

// A hook's parsed command line: each option given (or defaulted) with its values in order.
class HookArgs {
 public:
  void add(std::string_view option, std::string value);
  // Every value of `option`, in order; empty when it was not given.
  [[nodiscard]] const std::vector<std::string>& all(std::string_view option) const;
  // The last value of `option`, or "" when it was not given.
  [[nodiscard]] std::string one(std::string_view option) const;
  [[nodiscard]] bool has(std::string_view option) const { return !all(option).empty(); }

 private:
  std::map<std::string, std::vector<std::string>, std::less<>> m_values;
};

// What a hook does on the container root it is given. It owns what it uses: in `hook prestart` it runs
// after the command line it was parsed from is gone.
using HookBody = std::function<Result<void>(const rootfs::Root& root, const config::Config& config,
                                            const config::Log& log)>;

// Makes a hook ready: takes from the host what it needs (a program, a host file) while host paths are
// the host's (hook prestart: before it enters the container's mount namespace) and returns the body.
// `limits` are those of the programs it runs in the sandbox (rootfs/sandbox.hpp): hook prestart passes
// the container's cgroup; a runtime-run hook the default (its own cgroups are the container's).
using HookPrepare = Result<HookBody> (*)(const HookArgs& args, const config::Config& config,
                                         const config::Log& log, const rootfs::SandboxLimits& limits);

struct HookRow {
  const char* name;     // the subcommand: `gpuctk hook <name>`
  const char* summary;  // one line for `gpuctk hook --help`
  const char* footer;   // for `gpuctk hook <name> --help`: what it does
  std::span<const HookOption> options;
  HookPrepare prepare;
  bool named_errors = true;  // errors prefixed with `name`; false: a row of steps, whose errors name the step
};

// Every row, in the order `gpuctk hook --help` lists them.
std::span<const HookRow> hook_table();

// The row named `name`, or null.
const HookRow* find_hook(std::string_view name);

// `row`'s prepare, its errors and its body's prefixed with the row's name once ("create-symlinks: ..."),
// unless the row's errors are its steps' (container-start: "update-ldcache: ...").
Result<HookBody> prepare_hook(const HookRow& row, const HookArgs& args, const config::Config& config,
                              const config::Log& log, const rootfs::SandboxLimits& limits = {});

// gpuctk's own hook lines in their typed form (cdi/hook_args.hpp), prepared with no command-line parser
// between: the container-start steps its options ask for, in their order, each error naming its step;
// and a device's links.
Result<HookBody> prepare_container_start(const cdi::ContainerStartArgs& args, const config::Config& config,
                                         const config::Log& log, const rootfs::SandboxLimits& limits = {});
Result<HookBody> prepare_create_symlinks(const cdi::CreateSymlinksArgs& args);

// `<argv0> hook container-start ...` or `<argv0> hook create-symlinks ...` read by the contract's strict
// parse and prepared as above (how `hook prestart` runs the lines gpuctk's specs carry), its errors named
// by the hook ("create-symlinks: --link ..."); nullopt for any other line, which the caller parses as a
// person's command line.
Result<std::optional<HookBody>> prepare_contract_line(std::span<const std::string> args,
                                                      const config::Config& config, const config::Log& log,
                                                      const rootfs::SandboxLimits& limits = {});

}  // namespace gpuctk::steps
