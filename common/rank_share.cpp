// common/rank_share.cpp — largest-remainder splits in whole output groups and whole 128-column blocks.
#include "common/rank_share.h"

#include <algorithm>

namespace dsv41 {

Span split_evenly(int64_t units, int world, int rank) {
  DSV41_CHECK(world > 0 && rank >= 0 && rank < world);
  const int64_t base = units / world, extra = units % world;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

int max_world(const ModelConfig& c) {
  return static_cast<int>(std::min({c.o_groups, c.expert_blocks, c.vocab_blocks}));
}

Status check_world(const ModelConfig& c, int world) {
  if (world < 1) return Status::errorf("world {}: must be at least 1", world);
  if (world > c.o_groups)
    return Status::errorf("world {}: more ranks than o_groups {}; every rank needs at least one output group", world,
                          c.o_groups);
  if (world > c.expert_blocks)
    return Status::errorf("world {}: more ranks than the {} expert blocks of 128 columns (moe_intermediate_size {})",
                          world, c.expert_blocks, c.moe_intermediate_size);
  if (world > c.vocab_blocks)
    return Status::errorf("world {}: more ranks than the {} vocabulary blocks of 128 rows (vocab_size {})", world,
                          c.vocab_blocks, c.vocab_size);
  return Status::ok();
}

Result<RankShare> plan_share(const ModelConfig& c, int world, int rank) {
  DSV41_TRY(check_world(c, world));
  if (rank < 0 || rank >= world) return Status::errorf("rank {}: outside 0..{} of world {}", rank, world - 1, world);
  RankShare share;
  share.world = world;
  share.rank = rank;
  share.groups = split_evenly(c.o_groups, world, rank);
  share.heads = {share.groups.begin * c.heads_per_group, share.groups.end * c.heads_per_group};
  const Span expert_blocks = split_evenly(c.expert_blocks, world, rank);
  share.expert_cols = {expert_blocks.begin * kColumnBlock, expert_blocks.end * kColumnBlock};
  const Span vocab_blocks = split_evenly(c.vocab_blocks, world, rank);
  share.vocab_rows = {vocab_blocks.begin * kColumnBlock, vocab_blocks.end * kColumnBlock};
  return share;
}

}  // namespace dsv41
