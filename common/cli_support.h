// common/cli_support.h — what every dsv41 main() shares: subcommand runners and the one exit-code policy
// (0 ok, 1 refused or invalid input, 2 usage; never a crash). Header-only: only main()s include it,
// so CLI11 stays out of the libraries.
#pragma once

#include <cstdio>
#include <exception>
#include <functional>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/status.h"

namespace dsv41::cli {

// Runs a parsed subcommand; a failed Status becomes exit code 1.
using Runner = std::function<Status()>;

// A subcommand of `app` and the runner its adder returned.
struct Subcommand {
  CLI::App* command = nullptr;
  Runner run;
};

// Calls `adder(app)` (which registers one subcommand and returns its runner) and pairs the runner
// with the subcommand it added.
template <class Adder>
Subcommand add_subcommand(CLI::App& app, Adder adder) {
  const size_t before = app.get_subcommands({}).size();
  Runner run = adder(app);
  return {app.get_subcommands({}).at(before), std::move(run)};
}

// Parses the command line and runs the parsed subcommand: usage errors exit 2 (help and version 0),
// a refusal (a failed Status, or an exception a library let through) prints "PROGRAM: error: ..."
// and exits 1.
inline int run_subcommands(CLI::App& app, int argc, char** argv, const std::vector<Subcommand>& commands,
                           const char* program) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (const Subcommand& c : commands) {
      if (!c.command->parsed()) continue;
      const Status status = c.run();
      if (!status.is_ok()) {
        std::fprintf(stderr, "%s: error: %s\n", program, status.message().c_str());
        return 1;
      }
    }
  } catch (const std::exception& e) {  // a library threw (allocation, filesystem): still a clean refusal
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 1;
  }
  return 0;
}

}  // namespace dsv41::cli
