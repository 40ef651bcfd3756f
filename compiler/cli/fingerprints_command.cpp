// compiler/cli/fingerprints_command.cpp — `dsv41c fingerprints PROGRAM...`: one line per phase, `<phase> <hash>`.
#include <cstdio>
#include <memory>

#include "common/hashing.h"
#include "common/program_file.h"
#include "compiler/cli/commands.h"
#include "compiler/program/fingerprints.h"

namespace dsv41::cli {

Runner add_fingerprints_command(CLI::App& app) {
  auto paths = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "fingerprints", "Print one line per phase of a program: `<phase> <hash>`, a hash of its canonical call list.\n"
                      "CI diffs these lines against fixtures/golden/ (tools/regen_goldens.sh writes them).");
  cmd->add_option("PROGRAM", *paths, "rank{N}.fb files")->required();
  return [paths]() -> Status {
    for (const std::string& path : *paths) {
      DSV41_ASSIGN_OR_RETURN(ProgramFile file, ProgramFile::load(path));
      DSV41_ASSIGN_OR_RETURN(CallLists lists, read_call_lists(file.program()));
      for (const PhaseFingerprint& f : phase_fingerprints(lists, file.program()))
        std::printf("%s %s\n", f.phase.c_str(), hex64(f.hash).c_str());
    }
    return Status::ok();
  };
}

}  // namespace dsv41::cli
