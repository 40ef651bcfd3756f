// kernels/exchange_sum.cuh — the store half of exchange_sum (docs/ops.md "exchange_sum") on the GPU.
//
// The runtime first all-reduces `x` (F32 [R, width]) across the ranks in place (rank-ordered sum,
// every row: exchanges process inactive rows too); this kernel then stores x into `out`
// ([R, width], F32 or BF16: a BF16 store rounds). `out` may be `x` (then both are F32 and the copy is
// element-wise, each element read and written by one thread).
//
// Launch (common/kernel_launch_rows.cpp): block 256 threads, grid (ceil(R·width / 256)); thread i
// copies element i. width only sizes the grid: it is a run-time parameter.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace exchange_sum_detail {
constexpr int kThreads = 256;
}

namespace entry {

template <int dtype_out>
__device__ __forceinline__ void exchange_sum(Rows rows, Scratch x, Scratch out, Int width) {
  static_assert(dtype_out == DT_F32 || dtype_out == DT_BF16, "out is F32 or BF16");
  const long long i = static_cast<long long>(blockIdx.x) * exchange_sum_detail::kThreads + threadIdx.x;
  if (i >= rows * width) return;
  store<dtype_out>(out, i, static_cast<const float*>(x)[i]);
}

}  // namespace entry
}  // namespace dsv41k
