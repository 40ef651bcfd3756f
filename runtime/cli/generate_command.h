// runtime/cli/generate_command.h — `dsv41-rt generate`: flags, and the run that prints tokens and writes logits.
#pragma once

#include "common/cli_support.h"

namespace dsv41::cli {

// Adds the subcommand to `app`; the returned runner executes it once the command line is parsed.
Runner add_generate_command(CLI::App& app);

}  // namespace dsv41::cli
