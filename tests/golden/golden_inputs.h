// tests/golden/golden_inputs.h — what the golden suites plan: the release config as a header-only pack.
#pragma once

#include <string>

#include "compiler/program/rank_planner.h"

namespace dsv41 {

// The release header-only pack (release format, 8 shards), written once per process.
const ModelInputs& release_inputs();
std::string read_text(const std::string& path);

}  // namespace dsv41
