// runtime/cli/bench_command.h — `dsv41-rt bench`: decode and prefill step times against the device's read roofline.
#pragma once

#include "common/cli_support.h"

namespace dsv41::cli {

// Adds the subcommand to `app`; the returned runner executes it once the command line is parsed.
Runner add_bench_command(CLI::App& app);

}  // namespace dsv41::cli
