// kernels/hc_collapse_norm.cuh — collapse then RMSNorm (docs/ops.md "hc_collapse_norm"): for an active
// row, h = b(Σ_s pre[s]·x[s]) (fp32 sum over the streams in order, rounded when out is BF16, pre =
// mix columns [0, S)), out = b(h·(mean(h²) + eps)^−½·norm); inactive rows get zeros.
//
// Launch (common/kernel_launch_hc.cpp): block 256 threads, grid (R, G): G = kNormSplits blocks per row at
// decode (R ≤ kNormRows), else one block per row. One block a row: each thread owns the columns
// d ≡ threadIdx.x (mod 256) and forms h[d] twice (once for the block-wide sum of squares, once for the
// output; the same fp32 operations, so the same bits) instead of keeping the row in shared memory.
// A split row (one block alone streams a decode row too slowly): block g forms h over its slice of
// the columns and stores it in out (h is already rounded to out's dtype, so the store is exact), adds
// its squares block-wide and hands the sum to the module's table; the row's last block (a counter per
// row, reset by that block) adds the slices' sums in slice order, then rescales the whole row of out
// in place. A run's bits repeat; the sum of squares runs in another order than the CPU's (within the
// op tests' tolerances, as the block-wide sum already was). No dynamic shared memory.
#pragma once

#include "last_block.cuh"

namespace dsv41k {
namespace hc_collapse_norm_detail {
constexpr int kThreads = 256;
constexpr int kNormRows = 16;    // phases of at most this many rows split a row over blocks
constexpr int kNormSplits = 16;  // blocks per split row

#ifndef DSV41_CONTRACT_SCAN
// A split launch's sums of squares, [row][split], and each row's finished blocks.
__device__ float g_squares[kNormRows * kNormSplits];
__device__ unsigned g_finished[kNormRows];
#endif

// b(Σ_s pre[s]·x[s, d]) as runtime/cpu/ops_hc.cpp forms it (no fused multiply-add).
template <long long hidden, long long streams, int dtype_x, int dtype_out>
__device__ __forceinline__ float collapse(const void* x, long long row_off, const float* pre, long long d) {
  float h = 0.0f;
#pragma unroll
  for (long long s = 0; s < streams; ++s) h = __fadd_rn(h, __fmul_rn(pre[s], load<dtype_x>(x, row_off + s * hidden + d)));
  return round_as<dtype_out>(h);
}

// Element i of out as another block of this launch stored it (through L2, never a stale L1 line).
template <int DT>
__device__ __forceinline__ float load_written(const void* p, long long i) {
  if constexpr (DT == DT_F32) return __ldcg(static_cast<const float*>(p) + i);
  else return bf16_bits_to_float(__ldcg(static_cast<const unsigned short*>(p) + i));
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
  __shared__ float total;
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int G = static_cast<int>(gridDim.y), g = static_cast<int>(blockIdx.y);
  if (G > 1 && (rows > kNormRows || G > kNormSplits)) return;  // a grid the table cannot hold (never launched)
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
  float sq = 0.0f;
  if (G == 1) {
    for (long long d = tid; d < D; d += T) {
      const float h = collapse<hidden, streams, dtype_x, dtype_out>(x, row_off, pre, d);
      sq += h * h;
    }
    const float sum = block_sum(sq, red);
    const float inv = 1.0f / sqrtf(__fdiv_rn(sum, static_cast<float>(D)) + eps);
    for (long long d = tid; d < D; d += T) {
      const float h = collapse<hidden, streams, dtype_x, dtype_out>(x, row_off, pre, d);
      store<dtype_out>(out, r * D + d, __fmul_rn(__fmul_rn(h, inv), weight_at<format_norm>(norm, d)));
    }
    return;
  }
  for (long long d = lo + tid; d < hi; d += T) {
    const float h = collapse<hidden, streams, dtype_x, dtype_out>(x, row_off, pre, d);
    store<dtype_out>(out, r * D + d, h);
    sq += h * h;
  }
  const float part = block_sum(sq, red);
  float* squares = g_squares + r * kNormSplits;
  if (tid == 0) squares[g] = part;
  if (!last_block_of_row(&g_finished[r], static_cast<unsigned>(G))) return;
  if (tid == 0) {
    float t = 0.0f;
    for (int s = 0; s < G; ++s) t += __ldcg(squares + s);
    total = t;
  }
  __syncthreads();
  const float inv = 1.0f / sqrtf(__fdiv_rn(total, static_cast<float>(D)) + eps);
  for (long long d = tid; d < D; d += T) {
    const float h = load_written<dtype_out>(out, r * D + d);
    store<dtype_out>(out, r * D + d, __fmul_rn(__fmul_rn(h, inv), weight_at<format_norm>(norm, d)));
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
