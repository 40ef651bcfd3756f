// compiler/cli/fingerprints_command.cpp — `dsv41c fingerprints PROGRAM...`: one line per phase, `<phase> <hash>`.
#include <cstdio>
#include <memory>

#include "common/hashing.h"
#include "common/program_file.h"
#include "compiler/cli/commands.h"
#include "compiler/program/fingerprints.h"

namespace dsv41::cli {

namespace {
struct FingerprintFlags {
  std::vector<std::string> paths;
  bool calls = false;
};
}  // namespace

Runner add_fingerprints_command(CLI::App& app) {
  auto f = std::make_shared<FingerprintFlags>();
  CLI::App* cmd = app.add_subcommand(
      "fingerprints", "Print one line per phase of a program: `<phase> <hash>`, a hash of its canonical call list.\n"
                      "CI diffs these lines against fixtures/golden/ (tools/regen_goldens.sh writes them).");
  cmd->add_option("PROGRAM", f->paths, "rank{N}.fb files")->required();
  cmd->add_flag("--calls", f->calls,
                "print what the hashes cover instead: each phase's calls, one line each (op, constants, "
                "arguments by role, launch shape)");
  return [f]() -> Status {
    for (const std::string& path : f->paths) {
      DSV41_ASSIGN_OR_RETURN(ProgramFile file, ProgramFile::load(path));
      DSV41_ASSIGN_OR_RETURN(CallLists lists, read_call_lists(file.program()));
      if (f->calls) {
        const std::string text = call_list_text(lists, file.program());
        std::fwrite(text.data(), 1, text.size(), stdout);
        continue;
      }
      for (const PhaseFingerprint& fp : phase_fingerprints(lists, file.program()))
        std::printf("%s %s\n", fp.phase.c_str(), hex64(fp.hash).c_str());
    }
    return Status::ok();
  };
}

}  // namespace dsv41::cli
