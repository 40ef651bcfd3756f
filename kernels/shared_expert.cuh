// kernels/shared_expert.cuh — the shared expert (docs/ops.md "shared_expert"):
// out += b(silu(min(g, L))·clamp(u, −L, L))·w2ᵀ for active rows (weight 1); other rows untouched.
// Mirrors runtime/cpu/ops_moe.cpp add_expert (the CPU's eight-way dots; out[d] + down in fp32).
//
// Launch (common/kernel_launch_moe.cpp): grid (R, 1, 1), one block of 256 threads per row; no dynamic
// shared memory. Static shared memory: 4·D (the row) + 4·F (the activation). One 8-lane group per
// activation column (lane k holds partial sum k of g and u), then one group per output dim d.
#pragma once

#include "moe_experts.cuh"

namespace dsv41k {
namespace entry {

template <long long hidden, long long width, int dtype_x, int format_w1, int format_w3, int format_w2>
__device__ __forceinline__ void shared_expert(Rows rows, Statics statics, Scratch x, Weight w1, Weight w3, Weight w2,
                                              Real limit, Scratch out) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(hidden >= 1 && width >= 0, "shared_expert constants out of range");
  static_assert(moe_experts_detail::static_shared_bytes(hidden, width) <= 46 * 1024,
                "the row and the activation must fit static shared memory");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an act buffer");
  constexpr int D = static_cast<int>(hidden), F = static_cast<int>(width);
  __shared__ float xs[D];
  __shared__ float act[F > 0 ? F : 1];

  const long long r = blockIdx.x;
  if (r >= rows || row_slot(statics, r) < 0) return;
  float* outr = static_cast<float*>(out) + r * D;
  for (int i = threadIdx.x; i < D; i += blockDim.x) xs[i] = load<dtype_x>(x, r * D + i);
  __syncthreads();
  // weight 1: 1·silu is silu exactly, so the bits are those of the CPU's unweighted form.
  moe_experts_detail::add_expert<dtype_x, format_w1, format_w3, format_w2, D, F>(xs, w1, w3, w2, 1.0f, limit, act,
                                                                                 outr);
#endif
}

}  // namespace entry
}  // namespace dsv41k
