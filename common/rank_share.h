// common/rank_share.h — what one rank of a world holds: output groups (and their heads), expert columns, vocabulary rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/model_config.h"

namespace dsv41 {

// A half-open range [begin, end).
struct Span {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const Span&) const = default;
};

struct RankShare {
  int world = 1, rank = 0;
  Span groups, heads, expert_cols, vocab_rows;
};

// Splits `units` over `world` ranks: the first `units mod world` ranks take one more (largest
// remainder with ties to the lower rank). Returns rank's span.
Span split_evenly(int64_t units, int world, int rank);

// Refuses a world that leaves some rank without a group, an expert block or a vocabulary block.
Status check_world(const ModelConfig& config, int world);
// The share of one rank; refuses a world or rank out of range, naming the bound.
Result<RankShare> plan_share(const ModelConfig& config, int world, int rank);
// The largest admitted world: every rank needs a group, an expert block and a vocabulary block.
int max_world(const ModelConfig& config);

}  // namespace dsv41
