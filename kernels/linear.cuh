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
}

namespace entry {

template <long long in_features, int dtype_x, int dtype_out>
__device__ __forceinline__ void linear(Rows rows, Statics statics, Scratch x, Weight w, Scratch out,
                                       Int out_features) {
  static_assert(in_features > 0 && in_features <= (1 << 20), "in_features out of range");
  constexpr int R4 = linear_detail::kRowsPerWarp;
  const int lane = threadIdx.x & 31;
  const long long col = static_cast<long long>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const long long row0 = static_cast<long long>(blockIdx.y) * R4;
  if (col >= out_features) return;
  float acc[R4];
  bool active[R4];
#pragma unroll
  for (int k = 0; k < R4; ++k) {
    acc[k] = 0.0f;
    active[k] = row0 + k < rows && row_slot(statics, row0 + k) >= 0;
  }
  const float* wrow = w + col * in_features;
  for (long long i = lane; i < in_features; i += 32) {
    const float wv = wrow[i];
#pragma unroll
    for (int k = 0; k < R4; ++k)
      if (active[k]) acc[k] += wv * load<dtype_x>(x, (row0 + k) * in_features + i);
  }
#pragma unroll
  for (int k = 0; k < R4; ++k) {
    const float sum = warp_sum(acc[k]);
    if (lane == 0 && row0 + k < rows) store<dtype_out>(out, (row0 + k) * out_features + col, active[k] ? sum : 0.0f);
  }
}

}  // namespace entry
}  // namespace dsv41k
