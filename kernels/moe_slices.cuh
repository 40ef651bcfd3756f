// kernels/moe_slices.cuh — work items of the grouped experts (kernels/moe_grouped.cuh) split over blocks:
// a phase 1 with too few items to keep the grid busy (the release share's shared expert: 40 gate/up items
// for 264 blocks) runs each item as S slices of its K range, and a phase 2 step with more than 8 jobs
// runs each item as sets of at most 8 jobs (so no warp takes two jobs in turn while others idle); all
// claimed like any item. A part stores its partials in the module's global memory and counts itself on
// the item's counter (kernels/last_block.cuh); the item's last part to arrive sums the partials in a fixed
// order, so the result does not depend on which block ran which part.
#pragma once

#include "gemv.cuh"
#include "last_block.cuh"
#include "moe_pairs.cuh"

namespace dsv41k {
namespace moe_grouped {

// Phase 1 (gate and up of 16 columns of one expert) is sliced only while it has fewer items than half the
// grid's kMoeBlocks (the release share's shared expert: 40; measured faster there, 33.1 -> 28.6 us, and
// slower for the bench's 144: docs/perf.md, dmoe), into at most kSliceItems items, each warp keeping at
// least kSliceMinBlocks K blocks of a slice (one MMA K block = 4 chunks a row; at the release share's
// shared expert that bound decides: 10 slices, 400 items).
constexpr int kSliceBelow = 132;  // kMoeBlocks / 2 (kernels/moe_grouped.cuh, which includes this file)
constexpr int kSliceItems = 528;  // 2 · kMoeBlocks
constexpr int kSliceMinBlocks = 2;

#ifndef DSV41_CONTRACT_SCAN

// K blocks of a weight row of n elements in a stored format (the MMA tile's unit of K).
template <int FMT>
__device__ constexpr int kblocks_of(int n) {
  return (n / gemv_detail::chunk_elems(FMT) + 3) / 4;
}

// Slices of each phase 1 item: `groups` items of `kblocks` K blocks a matrix, each matrix on half of the
// block's `warps`. Only while every expert has at most one tile of members (one slice's partials a tile).
__device__ __forceinline__ int phase1_slices(unsigned groups, bool one_tile, int kblocks, int warps) {
  if (!one_tile || groups == 0 || groups >= kSliceBelow) return 1;
  int s = kSliceItems / static_cast<int>(groups);
  const int most = kblocks / (warps / 2 * kSliceMinBlocks);
  if (s > most) s = most;
  return s < 1 ? 1 : s;
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
