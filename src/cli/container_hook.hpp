#pragma once
// The subcommand of the hook table's container-start row (cli/container_hook.cpp): gpuctk's own specs run
// their spec-wide steps as this one createContainer hook (hook/hook_table.hpp).

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"

namespace gpuctk::cli {

Action define_hook_container_start(CLI::App& command);

}  // namespace gpuctk::cli
