// kernels/rmsnorm.cuh — RMSNorm of a row (docs/ops.md "rmsnorm"): for an active row,
// out = b(x·(mean(x²) + eps)^−½·w), all fp32 before the store (the BF16 store is b); inactive rows
// get zeros. `out` is not `x`.
//
// Launch (common/kernel_launch_rows.cpp): block 256 threads, grid (R): one block per row. Rows of
// at most kHeld·256 elements (the model's norms) are held in registers: a thread loads its x and w
// elements at once, before the block-wide sum of squares, so the row costs one memory round trip (the
// weight was read after the sum before: a second one). Wider rows stride over x for the sum, then read
// it again for the output (the row stays in L1/L2). No dynamic shared memory.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace rmsnorm_detail {
constexpr int kThreads = 256;
constexpr int kHeld = 16;  // elements a thread holds in registers at most

// Zeros row r of `out` (width elements) when the row is inactive; whether it was (rmsnorm_rope's too).
template <int dtype_out>
__device__ __forceinline__ bool zero_inactive_row(Statics statics, long long r, Scratch out, long long width) {
  if (row_slot(statics, r) >= 0) return false;
  for (long long i = threadIdx.x; i < width; i += blockDim.x) store<dtype_out>(out, r * width + i, 0.0f);
  return true;
}
}

namespace entry {

template <long long width, int dtype_x, int format_w, int dtype_out>
__device__ __forceinline__ void rmsnorm(Rows rows, Statics statics, Scratch x, Weight w, Real eps, Scratch out) {
  static_assert(width >= 1 && width <= (1 << 24), "width out of range");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is F32 or BF16");
  static_assert(dtype_out == DT_F32 || dtype_out == DT_BF16, "out is an activation (BF16, or F32 in check mode)");
  constexpr int T = rmsnorm_detail::kThreads;
  __shared__ float red[32];
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int tid = threadIdx.x;
  const long long off = r * width;
  if (rmsnorm_detail::zero_inactive_row<dtype_out>(statics, r, out, width)) return;
  if constexpr (width <= rmsnorm_detail::kHeld * T) {
    constexpr int N = static_cast<int>((width + T - 1) / T);
    float v[N], wv[N];
    float sq = 0.0f;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const long long i = tid + static_cast<long long>(j) * T;
      v[j] = i < width ? load<dtype_x>(x, off + i) : 0.0f;
      wv[j] = i < width ? weight_at<format_w>(w, i) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < N; ++j) sq += v[j] * v[j];
    const float sum = block_sum(sq, red);
    const float inv = 1.0f / sqrtf(__fdiv_rn(sum, static_cast<float>(width)) + eps);
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const long long i = tid + static_cast<long long>(j) * T;
      if (i < width) store<dtype_out>(out, off + i, __fmul_rn(__fmul_rn(v[j], inv), wv[j]));
    }
    return;
  }
  float sq = 0.0f;
  for (long long i = tid; i < width; i += T) {
    const float v = load<dtype_x>(x, off + i);
    sq += v * v;
  }
  const float sum = block_sum(sq, red);
  const float inv = 1.0f / sqrtf(__fdiv_rn(sum, static_cast<float>(width)) + eps);
  for (long long i = tid; i < width; i += T)
    store<dtype_out>(out, off + i, __fmul_rn(__fmul_rn(load<dtype_x>(x, off + i), inv), weight_at<format_w>(w, i)));
}

}  // namespace entry
}  // namespace dsv41k
