// common/cli_support.h — what every dsv41 main() shares: subcommand runners and the one exit-code policy
// (0 ok, 1 refused or invalid input, 2 usage; never a crash). Header-only: only main()s include it,
// so CLI11 stays out of the libraries.
#pragma once

#include <cstdio>
#include <exception>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/status.h"

namespace dsv41::cli {

// Runs a parsed subcommand; a failed Status becomes exit code 1.
using Runner = std::function<Status()>;
// Runs a parsed subcommand that decides its own exit code (`launch`: a rank's code passes through).
using CodeRunner = std::function<int()>;

// A subcommand of `app` and the runner its adder returned (one of the two is set).
struct Subcommand {
  CLI::App* command = nullptr;
  Runner run;
  CodeRunner run_for_code;
};

// Calls `adder(app)` (which registers one subcommand and returns its Runner or CodeRunner) and pairs
// the runner with the subcommand it added.
template <class Adder>
Subcommand add_subcommand(CLI::App& app, Adder adder) {
  const size_t before = app.get_subcommands({}).size();
  auto run = adder(app);
  Subcommand added{app.get_subcommands({}).at(before), {}, {}};
  if constexpr (std::is_same_v<decltype(run), CodeRunner>) {
    added.run_for_code = std::move(run);
  } else {
    added.run = std::move(run);
  }
  return added;
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
      if (c.run_for_code) return c.run_for_code();
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
