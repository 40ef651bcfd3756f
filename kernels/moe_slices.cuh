// kernels/moe_slices.cuh — split-K of the grouped experts' work items over blocks (kernels/moe_grouped.cuh):
// a phase with too few items to keep every warp of the grid busy (the shared expert's 40-144 gate/up
// items for 264 blocks), or whose warps walk long K chains (6 experts' w2 rows at one row), runs each item
// as S slices of its K range, claimed like any item. A slice stores its partials in the module's global
// memory and counts itself on the item's counter (kernels/last_block.cuh); the item's last slice to
// arrive sums the partials in slice order, so the result does not depend on which block ran which slice.
#pragma once

#include "gemv.cuh"
#include "last_block.cuh"
#include "moe_pairs.cuh"

namespace dsv41k {
namespace moe_grouped {

// Phase 1 (gate and up of 16 columns of one expert) is sliced until it has about this many items: two
// for each of the grid's 264 blocks, so a block finishing early takes another.
constexpr int kSliceItems = 528;
// ... while each warp keeps at least this many K blocks of a slice (one MMA K block = 4 chunks a row).
constexpr int kSliceMinBlocks = 2;
// Phase 2 (16 output dims, every selected expert's w2 rows) is sliced so that its busiest warp walks
// about kSliceChain K blocks a slice, at most kMaxSlices2 slices; only for steps of at most kSplitPairs
// (row, choice) pairs, whose partials the table below holds (one or two rows of routed experts, every
// step of the shared expert).
constexpr int kSliceChain = 4;
constexpr int kMaxSlices2 = 4;
constexpr int kSplitPairs = 16;

#ifndef DSV41_CONTRACT_SCAN

// K blocks of a weight row of n elements in a stored format (the MMA tile's unit of K).
template <int FMT>
__device__ constexpr int kblocks_of(int n) {
  return (n / gemv_detail::chunk_elems(FMT) + 3) / 4;
}

// Slices of each phase 1 item: `groups` items of `kblocks` K blocks a matrix, each matrix on half of the
// block's `warps`. Only while every expert has at most one tile of members (one slice's partials a tile).
__device__ __forceinline__ int phase1_slices(unsigned groups, bool one_tile, int kblocks, int warps) {
  if (!one_tile || groups == 0 || groups >= kSliceItems / 2) return 1;
  int s = kSliceItems / static_cast<int>(groups);
  const int most = kblocks / (warps / 2 * kSliceMinBlocks);
  if (s > most) s = most;
  return s < 1 ? 1 : s;
}

// Slices of each phase 2 item whose job set (at most `warps` of the step's `jobs` jobs) has `kblocks` K
// blocks a job: a job whole on a warp, or split over warps / jobs warps (as moe_grouped.cuh runs them).
__device__ __forceinline__ int phase2_slices(bool few_pairs, int jobs, int kblocks, int warps) {
  if (!few_pairs || jobs == 0) return 1;
  const int chain = kblocks / (warps / (jobs < warps ? jobs : warps));
  const int s = chain / kSliceChain;
  return s < 1 ? 1 : (s > kMaxSlices2 ? kMaxSlices2 : s);
}

// The parts' partials and each item's count of arrived parts (reset by its last part). Phase 1:
// [item][gate, then up][16 columns · 16 members], at most kSliceItems items. Phase 2, per group of 16
// output dims: [slice][16 dims][kSplitPairs pairs] when sliced, else [16 dims][P pairs] that its job sets
// fill side by side; kPart2Width<P> floats a dim either way.
__device__ __align__(16) float g_part1[kSliceItems * 2 * kMoeCols * kMoeRows];
__device__ unsigned g_count1[kSliceItems / 2];
template <int P>
constexpr int kPart2Width = P > kMaxSlices2 * kSplitPairs ? P : kMaxSlices2 * kSplitPairs;
template <long long N>
__device__ __align__(16) float g_part2[N];
template <int G>
__device__ unsigned g_count2[G];

// Reads a counter other blocks raise (no atomic: polling blocks must not queue behind the ticket's).
__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace moe_grouped
}  // namespace dsv41k
