// kernels/embed.cuh — the embedding broadcast (docs/ops.md "embed"): out[r, s, :] = b(table[token(r)])
// for every stream s of an active row; inactive rows get zeros.
//
// Launch (common/kernel_launch_hc.cpp): block 256 threads, grid (R, ceil(hidden / 256)). Thread t of
// block (r, c) owns column d = c·256 + t of row r: it reads table[token(r), d] once and stores it to
// every stream (the BF16 store is the rounding b). A token outside [0, table_rows) reports ERR_TOKEN,
// the table is not read and the row is written as zeros.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace embed_detail {
constexpr int kThreads = 256;
}

namespace entry {

template <long long hidden, long long streams, int format_table, int dtype_out>
__device__ __forceinline__ void embed(Rows rows, Statics statics, Weight table, Int table_rows, Scratch out,
                                      Errors errors) {
  static_assert(hidden >= 1 && hidden <= (1 << 24), "hidden out of range");
  static_assert(streams >= 1 && streams <= 64, "streams out of range");
  static_assert(dtype_out == DT_F32 || dtype_out == DT_BF16, "out is an activation (BF16, or F32 in check mode)");
  const long long r = blockIdx.x;
  const long long d = static_cast<long long>(blockIdx.y) * embed_detail::kThreads + threadIdx.x;
  if (r >= rows || d >= hidden) return;
  float v = 0.0f;
  if (row_slot(statics, r) >= 0) {
    const long long token = row_token(statics, r);
    if (token < 0 || token >= table_rows) {
      if (d == 0) report_error(errors, ERR_TOKEN);
    } else {
      v = weight_at<format_table>(table, token, d, hidden);
    }
  }
  const long long base = r * streams * hidden + d;
#pragma unroll 4
  for (long long s = 0; s < streams; ++s) store<dtype_out>(out, base + s * hidden, v);
}

}  // namespace entry
}  // namespace dsv41k
