// kernels/gemv_kparts.cuh — split-K over blocks for the decode GEMV's small grids: with too few columns
// to fill the GPU even at split 8 (the world-4 share's wq_a 1280 and wkv 512 columns: 80 and 32 blocks,
// one DRAM round trip after another in each warp; docs/perf.md, branch dfp8), grid z = kparts blocks share
// a column block, each over one K part, so every warp's slice is one batch of loads in flight. Each block
// writes its slice-summed partials to this module's table; the column block's last block to finish
// (kernels/last_block.cuh) sums the kparts partials in z order (a fixed order: the same bits every run)
// and stores them.
//
// Launch (common/kernel_launch_products.cpp gemv_grid): grid z = kparts > 1 only at 16 rows or fewer with
// split 8 (16 columns a block), and grid y · z ≤ kGemvTargetBlocks, the table's capacity in blocks.
#pragma once

#include "gemv.cuh"
#include "last_block.cuh"

namespace dsv41k {
namespace gemv_detail {

#ifndef DSV41_CONTRACT_SCAN

// [z · gridDim.y + y][column in block][row]: one block's partials; and each column block's finished count.
// Templates, so that only the variants whose GEMV path is compiled carry them (a tiled prefill
// variant's is a discarded branch: kernels/linear.cuh product_block).
template <int kUnused = 0>
__device__ float g_kpart_sums[kGemvTargetBlocks * kGemvGroup * kGemvRows];
template <int kUnused = 0>
__device__ unsigned g_kpart_finished[kGemvTargetBlocks];

// K parts of this launch: gridDim.z where the table holds the grid, one row tile and one column group a
// block (split kGemvWarps); else 1, and block z = 0 takes all of K.
__device__ __forceinline__ int gemv_kparts(int split) {
  return gridDim.x == 1 && split == kGemvWarps && gridDim.y * gridDim.z <= kGemvTargetBlocks
             ? static_cast<int>(gridDim.z)
             : 1;
}

// gemv_store for kparts > 1 (split is kGemvWarps: one 16-column group a block): the block's slice sums go
// to the table; the last block of the column block adds the kparts parts in z order and stores them.
template <int dtype_out>
__device__ __forceinline__ void gemv_store_parts(Rows rows, Statics statics, Scratch out, long long out_width,
                                                 long long columns, int split, int kparts, const float* red) {
  __syncthreads();
  const long long row0 = static_cast<long long>(blockIdx.x) * kGemvRows;
  constexpr int kSlot = kGemvGroup * kGemvRows;
  float* table = g_kpart_sums<0>;
  for (int t = threadIdx.x; t < kSlot; t += blockDim.x) {
    const int c = t / kGemvRows, r = t % kGemvRows;
    if (row0 + r >= rows) continue;
    float v = 0.0f;
    for (int k = 0; k < split; ++k) v += red[(k * kGemvGroup + c) * kGemvRows + r];
    table[(static_cast<long long>(blockIdx.z) * gridDim.y + blockIdx.y) * kSlot + t] = v;
  }
  if (!last_block_of_row(&g_kpart_finished<0>[blockIdx.y], static_cast<unsigned>(kparts))) return;
  for (int t = threadIdx.x; t < kSlot; t += blockDim.x) {
    const int c = t / kGemvRows, r = t % kGemvRows;
    const long long col = static_cast<long long>(blockIdx.y) * kGemvGroup + c;
    if (col >= columns || row0 + r >= rows) continue;
    float v = 0.0f;
    for (int z = 0; z < kparts; ++z)
      v += __ldcg(&table[(static_cast<long long>(z) * gridDim.y + blockIdx.y) * kSlot + t]);
    store<dtype_out>(out, (row0 + r) * out_width + col, row_slot(statics, row0 + r) >= 0 ? v : 0.0f);
  }
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace gemv_detail
}  // namespace dsv41k
