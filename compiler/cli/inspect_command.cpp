// compiler/cli/inspect_command.cpp — `dsv41c inspect PROGRAM [--json]`: verify a program and show what it holds.
#include <cstdio>
#include <memory>

#include "common/program_file.h"
#include "compiler/cli/commands.h"
#include "compiler/program/program_summary.h"

namespace dsv41::cli {

Runner add_inspect_command(CLI::App& app) {
  struct Flags {
    std::string path;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("inspect", "Verify a program file and print its share, weights and memory.");
  cmd->add_option("PROGRAM", flags->path, "a rank{N}.fb written by `dsv41c plan`")->required();
  cmd->add_flag("--json", flags->json, "print one JSON object (world, rank, share, weights, memory, settings, digests, kernels)");
  return [flags]() -> Status {
    DSV41_ASSIGN_OR_RETURN(ProgramFile file, ProgramFile::load(flags->path));
    if (flags->json)
      std::printf("%s\n", program_json(file.program()).dump(2).c_str());
    else
      std::printf("%s: program format %u\n%s", flags->path.c_str(), file.program().format_version(),
                  program_text(file.program()).c_str());
    return Status::ok();
  };
}

}  // namespace dsv41::cli
