// kernels/grouped_linear.cuh — block-diagonal product (docs/ops.md "grouped_linear"):
// out[r, g·Og + o] = Σ_i x[r, g·Ig + i]·w[g·Og + o, i] for every active row; inactive rows get zeros.
//
// Launch (common/kernel_launch_products.cpp): block 256 threads = 8 warps, grid
// (ceil(groups·out_per_group / 8), ceil(R / kRowsPerWarp)). Warp w of block (bx, by) computes output
// column c = bx·8 + w (group g = c / Og) for rows by·kRowsPerWarp .. +kRowsPerWarp−1, lanes striding
// over the group's in_per_group inputs, so one load of a weight row serves kRowsPerWarp rows (the
// scheme of kernels/linear.cuh).
#pragma once

#include "linear.cuh"

namespace dsv41k {
namespace entry {

template <long long groups, long long in_per_group, long long out_per_group, int dtype_x, int format_w, int dtype_out>
__device__ __forceinline__ void grouped_linear(Rows rows, Statics statics, Scratch x, Weight w, Scratch out) {
  static_assert(groups >= 1 && groups <= (1 << 24), "groups out of range");
  static_assert(in_per_group >= 1 && in_per_group <= (1 << 24), "in_per_group out of range");
  static_assert(out_per_group >= 1 && out_per_group <= (1 << 24), "out_per_group out of range");
  static_assert(groups * in_per_group <= (1ll << 31) && groups * out_per_group <= (1ll << 31), "widths out of range");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is F32 or BF16");
  static_assert(dtype_out == DT_F32 || dtype_out == DT_BF16, "out is F32 or BF16");
  constexpr long long in_width = groups * in_per_group, out_width = groups * out_per_group;
  const long long col = static_cast<long long>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (col >= out_width) return;
  linear_detail::warp_rows_dot<dtype_x, format_w, dtype_out>(rows, statics, x, in_width,
                                                             (col / out_per_group) * in_per_group, w, col,
                                                             in_per_group, out, out_width, col,
                                                             static_cast<long long>(blockIdx.y) * linear_detail::kRowsPerWarp);
}

}  // namespace entry
}  // namespace dsv41k
