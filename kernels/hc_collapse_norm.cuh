// kernels/hc_collapse_norm.cuh — collapse then RMSNorm (docs/ops.md "hc_collapse_norm"): for an active
// row, h = b(Σ_s pre[s]·x[s]) (fp32 sum over the streams in order, rounded when out is BF16, pre =
// mix columns [0, S)), out = b(h·(mean(h²) + eps)^−½·norm); inactive rows get zeros.
//
// Launch (common/kernel_launch_hc.cpp): block 256 threads, grid (R): one block per row. Each thread
// owns the columns d ≡ threadIdx.x (mod 256); it forms h[d] twice (once for the block-wide sum of
// squares, once for the output; the same fp32 operations, so the same bits) instead of keeping the
// row in shared memory. No dynamic shared memory.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace hc_collapse_norm_detail {
constexpr int kThreads = 256;

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
  static_assert(hidden >= 1 && hidden <= (1 << 24), "hidden out of range");
  static_assert(streams >= 1 && streams <= 64, "streams out of range");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an activation (BF16, or F32 in check mode)");
  static_assert(dtype_out == DT_F32 || dtype_out == DT_BF16, "out is an activation (BF16, or F32 in check mode)");
  constexpr long long S = streams, M = (2 + S) * S, D = hidden;
  constexpr int T = hc_collapse_norm_detail::kThreads;
  __shared__ float red[32];
  __shared__ float pre[S];
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int tid = threadIdx.x;
  if (row_slot(statics, r) < 0) {
    for (long long d = tid; d < D; d += T) store<dtype_out>(out, r * D + d, 0.0f);
    return;
  }
  for (int s = tid; s < S; s += T) pre[s] = static_cast<const float*>(mix)[r * M + s];
  __syncthreads();
  const long long row_off = r * S * D;
  float sq = 0.0f;
  for (long long d = tid; d < D; d += T) {
    const float h = hc_collapse_norm_detail::collapse<hidden, streams, dtype_x, dtype_out>(x, row_off, pre, d);
    sq += h * h;
  }
  const float sum = block_sum(sq, red);
  const float inv = 1.0f / sqrtf(__fdiv_rn(sum, static_cast<float>(D)) + eps);
  for (long long d = tid; d < D; d += T) {
    const float h = hc_collapse_norm_detail::collapse<hidden, streams, dtype_x, dtype_out>(x, row_off, pre, d);
    store<dtype_out>(out, r * D + d, __fmul_rn(__fmul_rn(h, inv), weight_at<format_norm>(norm, d)));
  }
}

}  // namespace entry
}  // namespace dsv41k
