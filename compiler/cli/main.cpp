// compiler/cli/main.cpp — dsv41c: exit 0 ok, 1 refused or invalid input, 2 usage; never a crash.
#include "common/cli_support.h"
#include "common/program_file.h"
#include "compiler/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "dsv41c — ahead-of-time compiler for DeepSeek-V4.1 tensor-parallel serving.\n"
      "Reads config.json and safetensors headers (never weight bytes), plans every rank of a world,\n"
      "and writes one verified program per rank for dsv41-rt.",
      "dsv41c"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("dsv41c (program format {})", dsv41::kProgramFormatVersion));
  using dsv41::cli::add_subcommand;
  const std::vector<dsv41::cli::Subcommand> commands = {add_subcommand(app, dsv41::cli::add_plan_command),
                                                        add_subcommand(app, dsv41::cli::add_inspect_command),
                                                        add_subcommand(app, dsv41::cli::add_synth_pack_command),
                                                        add_subcommand(app, dsv41::cli::add_fingerprints_command),
                                                        add_subcommand(app, dsv41::cli::add_aot_needs_command)};
  return dsv41::cli::run_subcommands(app, argc, argv, commands, "dsv41c");
}
