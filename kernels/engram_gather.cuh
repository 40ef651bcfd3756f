// kernels/engram_gather.cuh — Engram's row fetch (docs/ops.md "engram_gather"): out[r, col, :] =
// bf16(e4m3 code · 2^(scale − 127)) of table row ids[r, first_column + col].
//
// Launch (common/kernel_launch_engram.cpp): block 256 threads, grid (R, columns): block (r, col)
// copies one table row of head_dim values. The table is a Weight in FP8 rows (WF_FP8_ROW32): on a
// GPU its data may be host memory mapped into the device's address space (the tables stay on the
// host, docs/model.md §8); a row id outside [0, table_rows) reports ERR_TOKEN and zeros are stored.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace engram_gather_detail {
constexpr int kThreads = 256;
}

namespace entry {

template <long long columns, long long head_dim, long long row_width, int format_table, int dtype_out>
__device__ __forceinline__ void engram_gather(Rows rows, Statics statics, Scratch ids, Int first_column,
                                              Int layer, Weight table, Int table_rows, Scratch out, Errors errors) {
  static_assert(columns >= 1 && columns <= 65535, "columns out of range");
  static_assert(head_dim >= 32 && head_dim % 32 == 0 && head_dim <= (1 << 16), "head_dim: whole scale blocks of 32");
  static_assert(row_width >= columns, "row_width holds every layer's columns");
  static_assert(format_table == WF_FP8_ROW32 || format_table == WF_BF16, "an Engram table is FP8 rows (or BF16)");
  static_assert(dtype_out == DT_F32 || dtype_out == DT_BF16, "out is an activation (BF16, or F32 in check mode)");
  (void)layer;  // named in the CPU op's message; the runtime names the call on an error word
  const long long r = blockIdx.x, col = blockIdx.y;
  if (r >= rows || col >= columns) return;
  const long long base = (r * columns + col) * head_dim;
  long long id = -1;
  if (row_slot(statics, r) >= 0 && first_column >= 0 && first_column + columns <= row_width) {
    id = static_cast<const int*>(ids)[r * row_width + first_column + col];
    if (id < 0 || id >= table_rows) {
      if (threadIdx.x == 0) report_error(errors, ERR_TOKEN);
      id = -1;
    }
  }
  for (long long d = threadIdx.x; d < head_dim; d += engram_gather_detail::kThreads)
    store<dtype_out>(out, base + d, id < 0 ? 0.0f : bf16_round(weight_at<format_table>(table, id, d, head_dim)));
}

}  // namespace entry
}  // namespace dsv41k
