// runtime/cli/launch_command.h — `dsv41-rt launch`: one rank process per GPU (or CPU rank) of this host.
#pragma once

#include "common/cli_support.h"

namespace dsv41::cli {

// Adds the subcommand to `app`; the returned runner starts the ranks and returns the exit code.
CodeRunner add_launch_command(CLI::App& app);

}  // namespace dsv41::cli
