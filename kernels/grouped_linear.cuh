// kernels/grouped_linear.cuh — block-diagonal product (docs/ops.md "grouped_linear"):
// out[r, g·Og + o] = Σ_i x[r, g·Ig + i]·w[g·Og + o, i] for every active row; inactive rows get zeros.
//
// Launch (common/kernel_launch_products.cpp): the grids of kernels/linear.cuh over groups·out_per_group
// columns (the tiled one only where every 128-column tile lies in one group); column c (group g = c / Og)
// reads weight row c and inputs x[r, g·Ig .. g·Ig + Ig).
#pragma once

#include "linear.cuh"

namespace dsv41k {
namespace entry {

template <long long groups, long long in_per_group, long long out_per_group, long long many_rows, int dtype_x,
          int format_w, int dtype_out>
__device__ __forceinline__ void grouped_linear(Rows rows, Statics statics, Scratch x, Weight w, Scratch out) {
  static_assert(groups >= 1 && groups <= (1 << 24), "groups out of range");
  static_assert(in_per_group >= 1 && in_per_group <= (1 << 24), "in_per_group out of range");
  static_assert(out_per_group >= 1 && out_per_group <= (1 << 24), "out_per_group out of range");
  static_assert(groups * in_per_group <= (1ll << 31) && groups * out_per_group <= (1ll << 31), "widths out of range");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is F32 or BF16");
  static_assert(dtype_out == DT_F32 || dtype_out == DT_BF16, "out is F32 or BF16");
#ifndef DSV41_CONTRACT_SCAN
  constexpr long long in_width = groups * in_per_group, out_width = groups * out_per_group;
  linear_detail::product_block<
      dtype_x, format_w, dtype_out, out_per_group % gemv_detail::kGemvGroup == 0,
      many_rows && linear_detail::tiled_takes(dtype_x, format_w, in_per_group,
                                              groups == 1 || out_per_group % gemm_tile::kBN == 0),
      gemm_tile::tile_k(format_w, in_per_group)>(
      rows, statics, x, in_width, [](long long col) { return (col / out_per_group) * in_per_group; }, w,
      in_per_group, out, out_width, out_width);
#endif
}

}  // namespace entry
}  // namespace dsv41k
