// tests/golden/golden_inputs.h — what the golden suites plan: the release and tiny configs as header-only packs.
#pragma once

#include <string>

#include "common/program_file.h"
#include "compiler/program/rank_planner.h"

namespace dsv41 {

// The release header-only pack (release format, 8 shards), written once per process.
const ModelInputs& release_inputs();
// The tiny header-only pack (release format, 2 shards), written once per process.
const ModelInputs& tiny_inputs();
std::string read_text(const std::string& path);
// One planned rank's program and the call lists read back from it, as the golden tests compare them.
struct RankLists {
  ProgramFile file;
  CallLists lists;
};
RankLists plan_rank_lists(const ModelInputs& inputs, const PlanOptions& options, int rank);

// A golden's body: its text without the leading '#' lines that say how it was made.
std::string golden_body(const std::string& text);

}  // namespace dsv41
