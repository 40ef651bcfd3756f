// kernels/grouped_linear.cuh — block-diagonal product (docs/ops.md "grouped_linear"):
// out[r, g·Og + o] = Σ_i x[r, g·Ig + i]·w[g·Og + o, i] for every active row; inactive rows get zeros.
//
// Launch (common/kernel_launch_products.cpp): block 256 threads = 8 warps, grid
// (ceil(groups·out_per_group / 8), ceil(R / kRowsPerWarp)). Warp w of block (bx, by) computes output
// column c = bx·8 + w (group g = c / Og) for rows by·kRowsPerWarp .. +kRowsPerWarp−1, lanes striding
// over the group's in_per_group inputs, so one load of a weight row serves kRowsPerWarp rows (the
// scheme of kernels/linear.cuh).
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace grouped_linear_detail {
constexpr int kRowsPerWarp = 4;
}

namespace entry {

template <long long groups, long long in_per_group, long long out_per_group, int dtype_x, int dtype_out>
__device__ __forceinline__ void grouped_linear(Rows rows, Statics statics, Scratch x, Weight w, Scratch out) {
  static_assert(groups >= 1 && groups <= (1 << 24), "groups out of range");
  static_assert(in_per_group >= 1 && in_per_group <= (1 << 24), "in_per_group out of range");
  static_assert(out_per_group >= 1 && out_per_group <= (1 << 24), "out_per_group out of range");
  static_assert(groups * in_per_group <= (1ll << 31) && groups * out_per_group <= (1ll << 31), "widths out of range");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is F32 or BF16");
  static_assert(dtype_out == DT_F32 || dtype_out == DT_BF16, "out is F32 or BF16");
  constexpr int R4 = grouped_linear_detail::kRowsPerWarp;
  constexpr long long in_width = groups * in_per_group, out_width = groups * out_per_group;
  const int lane = threadIdx.x & 31;
  const long long col = static_cast<long long>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const long long row0 = static_cast<long long>(blockIdx.y) * R4;
  if (col >= out_width) return;
  const long long in0 = (col / out_per_group) * in_per_group;
  float acc[R4];
  bool active[R4];
#pragma unroll
  for (int k = 0; k < R4; ++k) {
    acc[k] = 0.0f;
    active[k] = row0 + k < rows && row_slot(statics, row0 + k) >= 0;
  }
  const float* wrow = w + col * in_per_group;
  for (long long i = lane; i < in_per_group; i += 32) {
    const float wv = wrow[i];
#pragma unroll
    for (int k = 0; k < R4; ++k)
      if (active[k]) acc[k] += wv * load<dtype_x>(x, (row0 + k) * in_width + in0 + i);
  }
#pragma unroll
  for (int k = 0; k < R4; ++k) {
    const float sum = warp_sum(acc[k]);
    if (lane == 0 && row0 + k < rows) store<dtype_out>(out, (row0 + k) * out_width + col, active[k] ? sum : 0.0f);
  }
}

}  // namespace entry
}  // namespace dsv41k
