// kernels/hc_collapse_norm.cuh — collapse then RMSNorm (docs/ops.md "hc_collapse_norm"): for an active
// row, h = b(Σ_s pre[s]·x[s]) (fp32 sum over the streams in order, rounded when out is BF16, pre =
// mix columns [0, S)), out = b(h·(mean(h²) + eps)^−½·norm); inactive rows get zeros.
//
// Launch (common/kernel_launch_hc.cpp): block 512 threads, grid (R, G): G = 16 blocks per row at decode
// (R ≤ 16), else one block per row; the kernel takes any G. Every block forms the whole row's sum of squares
// itself (thread t the columns d ≡ t (mod 512), then the block-wide sum: the same operations in every
// block, so the same bits), then writes out only for its slice of the columns, forming h again (the
// same fp32 operations, so the same bits) instead of keeping the row in shared memory. So a split row
// needs no handoff between blocks (no table, no counter, no serial rescale of the row by one block):
// the row's inputs are read once from memory and G − 1 more times from L2, and the sum's loop holds
// only loads, so the loads of kUnroll columns are in flight together. With G = 1 the block writes the
// whole row. A run's bits repeat. The served (BF16) variants sum the squares in that fast order, not
// the CPU's (within the op tests' tolerances). The check-mode (F32) variants, the oracle mode, sum them
// in exactly the CPU's order (runtime/cpu/ops_common.cpp rms_norm: one f32 sum from column 0 up, no
// fused multiply-add), a chunk of T columns at a time staged in shared memory and added by thread 0,
// so their output has the CPU's bits: a packed cache code downstream (the official caches quantize
// check mode's values) cannot flip on this op's rounding. No dynamic shared memory.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace hc_collapse_norm_detail {
constexpr int kThreads = 512;
constexpr int kUnroll = 8;       // columns a thread has in flight while it sums the squares

// b(Σ_s pre[s]·x[s, d]) as runtime/cpu/ops_hc.cpp forms it (no fused multiply-add).
template <long long hidden, long long streams, int dtype_x, int dtype_out>
__device__ __forceinline__ float collapse(const void* x, long long row_off, const float* pre, long long d) {
  float h = 0.0f;
#pragma unroll
  for (long long s = 0; s < streams; ++s) h = __fadd_rn(h, __fmul_rn(pre[s], load<dtype_x>(x, row_off + s * hidden + d)));
  return round_as<dtype_out>(h);
}
}  // namespace hc_collapse_norm_detail

namespace entry {

template <long long hidden, long long streams, int dtype_x, int format_norm, int dtype_out>
__device__ __forceinline__ void hc_collapse_norm(Rows rows, Statics statics, Scratch x, Scratch mix, Weight norm,
                                                 Real eps, Scratch out) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(hidden >= 1 && hidden <= (1 << 24), "hidden out of range");
  static_assert(streams >= 1 && streams <= 64, "streams out of range");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an activation (BF16, or F32 in check mode)");
  static_assert(dtype_out == DT_F32 || dtype_out == DT_BF16, "out is an activation (BF16, or F32 in check mode)");
  using namespace hc_collapse_norm_detail;
  constexpr long long S = streams, M = (2 + S) * S, D = hidden;
  constexpr int T = kThreads;
  __shared__ float red[32];
  __shared__ float pre[S];
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int G = static_cast<int>(gridDim.y), g = static_cast<int>(blockIdx.y);
  const int tid = threadIdx.x;
  // This block's columns [lo, hi).
  const long long per = (D + G - 1) / G;
  const long long lo = g * per < D ? g * per : D, hi = lo + per < D ? lo + per : D;
  if (row_slot(statics, r) < 0) {
    for (long long d = lo + tid; d < hi; d += T) store<dtype_out>(out, r * D + d, 0.0f);
    return;
  }
  for (int s = tid; s < S; s += T) pre[s] = static_cast<const float*>(mix)[r * M + s];
  __syncthreads();
  const long long row_off = r * S * D;
  float sum;
  if constexpr (dtype_out == DT_F32) {
    __shared__ float staged[T];
    float seq = 0.0f;  // thread 0's running sum, in the CPU's order
    for (long long c = 0; c < D; c += T) {
      if (c + tid < D) staged[tid] = collapse<hidden, streams, dtype_x, dtype_out>(x, row_off, pre, c + tid);
      __syncthreads();
      if (tid == 0) {
        const int n = D - c < T ? static_cast<int>(D - c) : T;
        for (int i = 0; i < n; ++i) seq = __fadd_rn(seq, __fmul_rn(staged[i], staged[i]));
      }
      __syncthreads();
    }
    if (tid == 0) red[0] = seq;
    __syncthreads();
    sum = red[0];
  } else {
    float sq = 0.0f;
#pragma unroll(kUnroll)
    for (long long d = tid; d < D; d += T) {
      const float h = collapse<hidden, streams, dtype_x, dtype_out>(x, row_off, pre, d);
      sq += h * h;
    }
    sum = block_sum(sq, red);
  }
  const float inv = 1.0f / sqrtf(__fdiv_rn(sum, static_cast<float>(D)) + eps);
  for (long long d = lo + tid; d < hi; d += T) {
    const float h = collapse<hidden, streams, dtype_x, dtype_out>(x, row_off, pre, d);
    store<dtype_out>(out, r * D + d, __fmul_rn(__fmul_rn(h, inv), weight_at<format_norm>(norm, d)));
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
