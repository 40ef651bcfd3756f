// kernels/shared_expert.cuh — the shared expert (docs/ops.md "shared_expert"):
// out += b(silu(min(g, L))·clamp(u, −L, L))·w2ᵀ for active rows (weight 1); other rows untouched.
// out[d] + down in fp32, as runtime/cpu/ops_moe.cpp add_expert.
//
// Launch (common/kernel_launch_moe.cpp), as moe_experts: phases of at most kMoeRows rows run the grouped
// path of kernels/moe_grouped.cuh (grid (kMoeBlocks, 1, 1): the expert's weights read once for all rows);
// larger ones (grid (max(kPrefillBlocks, R), 1, 1), gemm_tile::kGemmSmemBytes of dynamic shared memory)
// the tiled tensor-core GEMMs of kernels/moe_prefill.cuh with bf16 activations (act and the active rows
// in `work`: R·F bf16, then R int32), else a block a row (grid-strided) with the CPU's eight-way dots:
// one 8-lane group per activation column (lane k holds partial sum k of g and u), then one group per
// output dim d.
#pragma once

#include "moe_experts.cuh"

namespace dsv41k {
namespace entry {

template <long long hidden, long long width, int dtype_x, int format_w1, int format_w3, int format_w2>
__device__ __forceinline__ void shared_expert(Rows rows, Statics statics, Scratch x, Weight w1, Weight w3, Weight w2,
                                              Real limit, Scratch out, Scratch work) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(hidden >= 1 && width >= 0, "shared_expert constants out of range");
  static_assert(moe_experts_detail::static_shared_bytes(hidden, width, 1) <= 46 * 1024,
                "the row and the activation must fit static shared memory");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an act buffer");
  constexpr int D = static_cast<int>(hidden), F = static_cast<int>(width);
  __shared__ moe_experts_detail::Shared<D, F, 1> sm;
  float* xs = sm.row.xs;
  float* act = sm.row.act;

  if constexpr (F > 0) {
    if (rows <= moe_grouped::kMoeRows) {
      if (moe_grouped::run<dtype_x, format_w1, format_w3, format_w2, -1, -1, -1, D, F, 1>(
              sm.grouped, rows, statics, nullptr, x, nullptr, nullptr, nullptr, nullptr, nullptr, w1, w3, w2, limit,
              static_cast<float*>(out), 1))
        return;
    } else {
      if constexpr (moe_prefill::takes(dtype_x, format_w1, format_w3, format_w2, D, F))
        if (moe_prefill::run<dtype_x, format_w1, format_w3, format_w2, D, F, 1>(
                rows, statics, nullptr, x, nullptr, nullptr, nullptr, nullptr, nullptr, w1, w3, w2, limit,
                static_cast<float*>(out), work, 1))
          return;
    }
  }
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {  // a block a row
    if (row_slot(statics, r) < 0) continue;
    float* outr = static_cast<float*>(out) + r * D;
    __syncthreads();  // the previous row's last reads of xs
    for (int i = threadIdx.x; i < D; i += blockDim.x) xs[i] = load<dtype_x>(x, r * D + i);
    __syncthreads();
    // weight 1: 1·silu is silu exactly, so the bits are those of the CPU's unweighted form.
    moe_experts_detail::add_expert<dtype_x, format_w1, format_w3, format_w2, D, F>(xs, w1, w3, w2, 1.0f, limit, act,
                                                                                   outr);
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
