// kernels/moe_slices.cuh — work items of the grouped experts (kernels/moe_grouped.cuh) split over blocks:
// a phase 1 with too few items to keep the grid busy (release world 8's fused one-row step: 112 gate/up
// items for 264 blocks) runs each item as S slices of its K range, and a phase 2 step with more than 8 jobs
// runs each item as sets of at most 8 jobs (so no warp takes two jobs in turn while others idle). A phase
// whose items fill whole rounds of the grid but a small last one (the fused release share at one row: 280
// phase 1 items, 320 phase 2 items for 264 blocks) splits only the items of that last round, so its items
// take a fraction of a whole item's chain of loads while the blocks that finished round 1 are idle. All
// parts are claimed like any item. A part stores its partials in the module's global memory and counts
// itself on the item's counter (kernels/last_block.cuh); the item's last part to arrive sums the partials
// in a fixed order, so the result does not depend on which block ran which part.
#pragma once

#include "gemv.cuh"
#include "last_block.cuh"
#include "moe_pairs.cuh"

namespace dsv41k {
namespace moe_grouped {

// Phase 1 (gate and up of 16 columns of one expert) is sliced only while it has fewer items than half the
// grid's kMoeBlocks, into at most kSliceItems items, each warp keeping at least kSliceMinBlocks K blocks of
// a slice (one MMA K block = 4 chunks a row). Today: release world 8's fused one-row step (112 items, 4
// slices, 448 items). History: measured on the release share's shared expert while it ran unfused (before
// branch moe4: 40 items, that bound deciding 10 slices, 400 items), 33.1 -> 28.6 us, and slower for the
// bench's 144 (docs/perf.md, dmoe). A last round of at most kMoeBlocks / kTailShare items (either phase)
// is split into at most kMoeBlocks parts in all (docs/perf.md, moe5).
constexpr int kSliceBelow = kMoeBlocks / 2;
constexpr int kSliceItems = 2 * kMoeBlocks;
constexpr int kSliceMinBlocks = 2;
constexpr int kTailShare = 4;

#ifndef DSV41_CONTRACT_SCAN

// The tickets of a phase: items [0, whole) as before (one ticket, or phase 2's sets of at most 8 jobs),
// the rest `parts` tickets each.
struct Split {
  unsigned whole;
  int parts;
};

// Items in a last round small enough to split: items past whole rounds of the grid, when at most
// kMoeBlocks / kTailShare (0: none).
__device__ __forceinline__ unsigned tail_items(unsigned items) {
  const unsigned tail = items % kMoeBlocks;
  return items < kMoeBlocks || tail > kMoeBlocks / kTailShare ? 0u : tail;
}

// K blocks of a weight row of n elements in a stored format (the MMA tile's unit of K).
template <int FMT>
__device__ constexpr int kblocks_of(int n) {
  return (n / gemv_detail::chunk_elems(FMT) + 3) / 4;
}

// Phase 1's tickets: `groups` items of `kblocks` K blocks a matrix, each matrix on half of the block's
// `warps`. Few items: all sliced (whole = 0); a small last round: its items sliced. Only while every
// expert has at most one tile of members (one slice's partials a tile).
__device__ __forceinline__ Split phase1_split(unsigned groups, bool one_tile, int kblocks, int warps) {
  const Split none{groups, 1};
  if (!one_tile || groups == 0) return none;
  const unsigned tail = groups < kSliceBelow ? groups : tail_items(groups);
  if (tail == 0) return none;
  int s = (groups < kSliceBelow ? kSliceItems : kMoeBlocks) / static_cast<int>(tail);
  const int most = kblocks / (warps / 2 * kSliceMinBlocks);
  if (s > most) s = most;
  return s < 2 ? none : Split{groups - tail, s};
}

// Phase 2's tickets for the last round's items of `groups` (16 output dims each) of `jobs` jobs: sets of
// ceil(jobs / parts) jobs, as many as the grid takes (only while one set of at most kWarps jobs would
// hold an item: steps with more jobs already run several sets an item).
__device__ __forceinline__ Split phase2_split(unsigned groups, int jobs, int warps) {
  const Split none{groups, 1};
  const unsigned tail = tail_items(groups);
  if (tail == 0 || jobs > warps || jobs < 2) return none;
  int s = kMoeBlocks / static_cast<int>(tail);
  if (s > jobs) s = jobs;
  const int per = (jobs + s - 1) / s;
  s = (jobs + per - 1) / per;  // no empty set
  return s < 2 ? none : Split{groups - tail, s};
}

// Phase 1's slices' partials and each item's count of arrived slices (reset by its last slice):
// [item][gate, then up][16 columns · 16 members], at most kSliceItems items. Phase 2's job sets: per group
// of 16 output dims [16 dims][P pairs], each set its own pairs, and each group's count of arrived sets.
__device__ __align__(16) float g_part1[kSliceItems * 2 * kMoeCols * kMoeRows];
__device__ unsigned g_count1[kSliceBelow];
template <long long N>
__device__ __align__(16) float g_part2[N];
template <int G>
__device__ unsigned g_count2[G];

#endif  // DSV41_CONTRACT_SCAN
}  // namespace moe_grouped
}  // namespace dsv41k
