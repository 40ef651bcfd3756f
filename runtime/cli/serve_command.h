// runtime/cli/serve_command.h — `dsv41-rt serve`: flags, signals (SIGTERM drains, a second cuts it short), and the server's run.
#pragma once

#include <CLI/CLI.hpp>

#include "runtime/cli/generate_command.h"

namespace dsv41::cli {

Runner add_serve_command(CLI::App& app);

}  // namespace dsv41::cli
