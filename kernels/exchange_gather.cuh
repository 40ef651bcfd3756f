// kernels/exchange_gather.cuh — the permute half of exchange_gather (docs/ops.md "exchange_gather")
// on the GPU.
//
// The runtime first all-gathers every rank's block and passes the gathered data as `x`, laid out
// rank-major: rank 0's [R, widths[0]] block, then rank 1's [R, widths[1]] block, ... (R·Σwidths F32
// values; this rank's own block is the [R, width] x of the call). This kernel permutes it into `out`
// F32 [R, Σwidths] row-major, the ranks' columns side by side in rank order, every row (exchanges
// process inactive rows too): out[r, off_k + c] = x[R·off_k + r·widths[k] + c] with
// off_k = Σ_{k'<k} widths[k']. `width` (= widths[rank]) only sizes this rank's block: it is a run-time
// parameter and is not needed by the permutation. A list holding a negative width (the plan refuses
// one) makes the kernel write nothing.
//
// Launch (common/kernel_launch_rows.cpp): block 256 threads, grid (ceil(Σwidths / 256),
// min(R, 65535)); thread t of block (c, y) handles column c·256 + t of rows y, y + gridDim.y, ...
// The template parameters are the two buffers' dtypes, both F32 (docs/ops.md); they keep every
// constant of the call run-time, so one variant serves every rank.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace exchange_gather_detail {
constexpr int kThreads = 256;
}

namespace entry {

template <int dtype_x, int dtype_out>
__device__ __forceinline__ void exchange_gather(Rows rows, Scratch x, IntList widths, Int widths_count, Scratch out,
                                                Int width) {
  static_assert(dtype_x == DT_F32, "x is F32");
  static_assert(dtype_out == DT_F32, "out is F32");
  (void)width;
  const long long col = static_cast<long long>(blockIdx.x) * exchange_gather_detail::kThreads + threadIdx.x;
  long long total = 0, off = 0, w = -1;
  for (long long k = 0; k < widths_count; ++k) {
    const long long wk = widths[k];
    if (wk < 0) return;
    if (w < 0 && col < total + wk) {
      off = total;
      w = wk;
    }
    total += wk;
  }
  if (w < 0) return;  // col >= Σwidths
  const float* src = static_cast<const float*>(x);
  float* dst = static_cast<float*>(out);
  const long long c = col - off;
  for (long long r = blockIdx.y; r < rows; r += gridDim.y) dst[r * total + col] = src[rows * off + r * w + c];
}

}  // namespace entry
}  // namespace dsv41k
