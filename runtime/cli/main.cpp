// runtime/cli/main.cpp — dsv41-rt: exit 0 ok, 1 refused or invalid input, 2 usage, 3 another rank failed; never a crash.
#include <fmt/format.h>

#include "common/cli_support.h"
#include "common/program_file.h"
#include "runtime/cli/bench_command.h"
#include "runtime/cli/generate_command.h"
#include "runtime/cli/launch_command.h"
#include "runtime/cli/serve_command.h"
#include "runtime/cli/tokenize_command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "dsv41-rt — the DeepSeek-V4.1 runtime. Runs the per-rank programs dsv41c wrote, reading exactly the\n"
      "weight byte ranges each program names from the original shards of the model folder.",
      "dsv41-rt"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("dsv41-rt (program format {})", dsv41::kProgramFormatVersion));
  const std::vector<dsv41::cli::Subcommand> commands = {
      dsv41::cli::add_subcommand(app, dsv41::cli::add_generate_command),
      dsv41::cli::add_subcommand(app, dsv41::cli::add_serve_command),
      dsv41::cli::add_subcommand(app, dsv41::cli::add_tokenize_command),
      dsv41::cli::add_subcommand(app, dsv41::cli::add_launch_command),
      dsv41::cli::add_subcommand(app, dsv41::cli::add_bench_command)};
  return dsv41::cli::run_subcommands(app, argc, argv, commands, "dsv41-rt");
}
