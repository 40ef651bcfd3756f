// compiler/kernels/aot_needs.h — which kernel variants each rank of a world launches, with launch counts, and
// their union: what `dsv41c aot-needs` prints and what `plan --target` compiles. Header-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/program/rank_planner.h"

namespace dsv41 {

struct VariantNeed {
  std::string key;
  int64_t launches = 0;  // calls across all of the rank's phases
};

struct RankNeeds {
  int rank = 0;
  std::vector<VariantNeed> variants;  // sorted by key
};

struct AotNeeds {
  std::vector<RankNeeds> ranks;
  std::vector<std::string> union_keys;  // sorted
  std::vector<std::string> warnings;    // optional prefill sizes dropped while settling
};

// Settles the settings (like `plan`), then binds every rank's calls to their variants.
Result<AotNeeds> aot_needs(const ModelInputs& inputs, const PlanOptions& options);

// {"ranks": [{"rank": r, "variants": [key...], "launches": [n...]}...], "union": [key...]}
std::string aot_needs_json(const AotNeeds& needs);
std::string aot_needs_text(const AotNeeds& needs);

}  // namespace dsv41
