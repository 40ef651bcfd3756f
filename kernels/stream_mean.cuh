// kernels/stream_mean.cuh — DSpark's tap of the target's residual streams (docs/ops.md "DSpark"):
// out[r, tap, :] = b(mean over the s streams of x[r, :, :]) for an active row; an inactive row gets
// zeros in this tap's columns only (the other taps are other calls'). Mirrors runtime/cpu/ops_draft.cpp:
// the sum starts at 0 and adds the streams in order, then one division by s.
//
// Launch (common/kernel_launch_draft.cpp): block 256 threads, grid (R, ceil(hidden / 256)): thread t of
// block (r, c) owns column c·256 + t of row r. A tap outside [0, taps) reports ERR_SELECTION and
// writes nothing (no column of the output is its own).
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace stream_mean_detail {
constexpr int kThreads = 256;
}

namespace entry {

template <long long hidden, long long streams, long long taps, int dtype_x, int dtype_out>
__device__ __forceinline__ void stream_mean(Rows rows, Statics statics, Scratch x, Int tap, Scratch out,
                                            Errors errors) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(hidden >= 1 && hidden <= (1 << 20), "hidden out of range");
  static_assert(streams >= 1 && streams <= 64, "streams out of range");
  static_assert(taps >= 1 && taps <= 64, "taps out of range");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an activation (BF16, or F32 in check mode)");
  static_assert(dtype_out == dtype_x, "one call's activations share a dtype");
  const long long r = blockIdx.x;
  const long long d = static_cast<long long>(blockIdx.y) * stream_mean_detail::kThreads + threadIdx.x;
  if (r >= rows || d >= hidden) return;
  if (tap < 0 || tap >= taps) {
    if (r == 0 && d == 0) report_error(errors, ERR_SELECTION);
    return;
  }
  float mean = 0.0f;
  if (row_slot(statics, r) >= 0) {
    float sum = 0.0f;
#pragma unroll 4
    for (long long k = 0; k < streams; ++k) sum = __fadd_rn(sum, load<dtype_x>(x, (r * streams + k) * hidden + d));
    mean = __fdiv_rn(sum, static_cast<float>(streams));
  }
  store<dtype_out>(out, (r * taps + tap) * hidden + d, mean);  // the BF16 store is the rounding b
#endif
}

}  // namespace entry
}  // namespace dsv41k
