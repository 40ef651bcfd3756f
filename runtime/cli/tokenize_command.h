// runtime/cli/tokenize_command.h — `dsv41-rt tokenize`: text → ids or ids → text with a tokenizer.json.
#pragma once

#include "runtime/cli/generate_command.h"

namespace dsv41::cli {

// Adds the subcommand to `app`; the returned runner executes it once the command line is parsed.
Runner add_tokenize_command(CLI::App& app);

}  // namespace dsv41::cli
