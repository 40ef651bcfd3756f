// compiler/cli/main.cpp — dsv41c: exit 0 ok, 1 refused or invalid input, 2 usage; never a crash.
#include <cstdio>
#include <exception>
#include <vector>

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
  std::vector<std::pair<CLI::App*, dsv41::cli::Runner>> commands;
  auto add = [&](auto adder) {
    const size_t before = app.get_subcommands({}).size();
    auto runner = adder(app);
    commands.emplace_back(app.get_subcommands({})[before], std::move(runner));
  };
  add(dsv41::cli::add_plan_command);
  add(dsv41::cli::add_inspect_command);
  add(dsv41::cli::add_synth_pack_command);
  add(dsv41::cli::add_fingerprints_command);
  add(dsv41::cli::add_aot_needs_command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (auto& [command, runner] : commands) {
      if (!command->parsed()) continue;
      const dsv41::Status status = runner();
      if (!status.is_ok()) {
        std::fprintf(stderr, "dsv41c: error: %s\n", status.message().c_str());
        return 1;
      }
    }
  } catch (const std::exception& e) {  // a library threw (allocation, filesystem): still a clean refusal
    std::fprintf(stderr, "dsv41c: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
