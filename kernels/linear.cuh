// kernels/linear.cuh — out = x·wᵀ for every active row (docs/ops.md "linear"); inactive rows get zeros.
//
// Launch (common/kernel_launch_products.cpp): block 256 threads = 8 warps, grid
// (ceil(out_features / 8), ceil(R / kRowsPerWarp)). Warp w of block (bx, by) computes column
// bx·8 + w for rows by·kRowsPerWarp .. +kRowsPerWarp−1, lanes striding over in_features, so one
// load of a weight row serves kRowsPerWarp rows. out_features only sizes the grid: it is a run-time
// parameter, and the head's vocabulary rows (different on each rank) share one variant.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace linear_detail {
constexpr int kRowsPerWarp = 4;

#ifndef DSV41_CONTRACT_SCAN
// One warp: out[r, col] = Σ_i x[r, x0 + i]·w[wrow, i] for i < n and rows row0 .. row0+kRowsPerWarp−1
// (w of n columns in format_w, dequantized in registers; x rows x_width apart, out rows out_width
// apart); inactive rows get 0. Shared with grouped_linear.
template <int dtype_x, int format_w, int dtype_out>
__device__ __forceinline__ void warp_rows_dot(Rows rows, Statics statics, Scratch x, long long x_width, long long x0,
                                              Weight w, long long wrow, long long n, Scratch out, long long out_width,
                                              long long col, long long row0) {
  constexpr int R4 = kRowsPerWarp;
  const int lane = threadIdx.x & 31;
  float acc[R4];
  bool active[R4];
#pragma unroll
  for (int k = 0; k < R4; ++k) {
    acc[k] = 0.0f;
    active[k] = row0 + k < rows && row_slot(statics, row0 + k) >= 0;
  }
  // FP8 weights: each lane decodes V consecutive codes from one load and one scale (measured faster
  // on the H200, docs/perf.md); the other formats measured faster one element a lane per step.
  constexpr int V = kFp8Vector;
  bool done = false;
  if constexpr (format_w == WF_FP8_TILE32 || format_w == WF_FP8_ROW32) {
    if (n % V == 0) {
      done = true;
      for (long long i = static_cast<long long>(lane) * V; i < n; i += 32 * V) {
        float wv[V];
        fp8_weight_vec<format_w>(w, wrow, i, n, wv);
#pragma unroll
        for (int k = 0; k < R4; ++k)
          if (active[k]) {
            const long long xi = (row0 + k) * x_width + x0 + i;
#pragma unroll
            for (int j = 0; j < V; ++j) acc[k] += wv[j] * load<dtype_x>(x, xi + j);
          }
      }
    }
  }
  if (!done) {
    for (long long i = lane; i < n; i += 32) {
      const float wv = weight_at<format_w>(w, wrow, i, n);
#pragma unroll
      for (int k = 0; k < R4; ++k)
        if (active[k]) acc[k] += wv * load<dtype_x>(x, (row0 + k) * x_width + x0 + i);
    }
  }
#pragma unroll
  for (int k = 0; k < R4; ++k) {
    const float sum = warp_sum(acc[k]);
    if (lane == 0 && row0 + k < rows) store<dtype_out>(out, (row0 + k) * out_width + col, active[k] ? sum : 0.0f);
  }
}
#endif
}  // namespace linear_detail

namespace entry {

template <long long in_features, int dtype_x, int format_w, int dtype_out>
__device__ __forceinline__ void linear(Rows rows, Statics statics, Scratch x, Weight w, Scratch out,
                                       Int out_features) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(in_features > 0 && in_features <= (1 << 20), "in_features out of range");
  const long long col = static_cast<long long>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (col >= out_features) return;
  linear_detail::warp_rows_dot<dtype_x, format_w, dtype_out>(rows, statics, x, in_features, 0, w, col, in_features,
                                                             out, out_features, col,
                                                             static_cast<long long>(blockIdx.y) * linear_detail::kRowsPerWarp);
#endif
}

}  // namespace entry
}  // namespace dsv41k
