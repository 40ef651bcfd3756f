// runtime/cli/main.cpp — dsv41-rt: exit 0 ok, 1 refused or invalid input, 2 usage; never a crash.
#include <cstdio>
#include <exception>

#include "runtime/cli/generate_command.h"
#include "runtime/cli/serve_command.h"
#include "runtime/cli/tokenize_command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "dsv41-rt — the DeepSeek-V4.1 runtime. Runs the per-rank programs dsv41c wrote, reading exactly the\n"
      "weight byte ranges each program names from the original shards of the model folder.",
      "dsv41-rt"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dsv41-rt (program format 2)");
  CLI::App* generate = nullptr;
  const dsv41::cli::Runner run_generate = dsv41::cli::add_generate_command(app);
  generate = app.get_subcommand("generate");
  const dsv41::cli::Runner run_serve = dsv41::cli::add_serve_command(app);
  CLI::App* serve = app.get_subcommand("serve");
  const dsv41::cli::Runner run_tokenize = dsv41::cli::add_tokenize_command(app);
  CLI::App* tokenize = app.get_subcommand("tokenize");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    const dsv41::cli::Runner* chosen = generate->parsed() ? &run_generate : serve->parsed() ? &run_serve
                                : tokenize->parsed() ? &run_tokenize : nullptr;
    if (chosen) {
      const dsv41::Status status = (*chosen)();
      if (!status.is_ok()) {
        std::fprintf(stderr, "dsv41-rt: error: %s\n", status.message().c_str());
        return 1;
      }
    }
  } catch (const std::exception& e) {  // a library threw (allocation, filesystem): still a clean refusal
    std::fprintf(stderr, "dsv41-rt: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
