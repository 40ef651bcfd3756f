// compiler/cli/commands.h — dsv41c subcommands: each registers its flags and returns a runner.
#pragma once

#include <string>

#include "common/cli_support.h"

namespace dsv41::cli {

Runner add_plan_command(CLI::App& app);
Runner add_inspect_command(CLI::App& app);
Runner add_synth_pack_command(CLI::App& app);
Runner add_fingerprints_command(CLI::App& app);
Runner add_aot_needs_command(CLI::App& app);

}  // namespace dsv41::cli
