// kernels/hc_pre_init.cuh — the initial mix (docs/ops.md "hc_pre_init"): every row, active or not, is
// one-hot on column 0 of out F32 [R, mix], so the first collapse returns stream 0.
//
// Launch (common/kernel_launch_hc.cpp): block 256 threads, grid (ceil(R·mix / 256)); thread i writes
// element i of out (1 at column 0 of its row, 0 elsewhere).
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace hc_pre_init_detail {
constexpr int kThreads = 256;
}

namespace entry {

template <long long streams, long long mix>
__device__ __forceinline__ void hc_pre_init(Rows rows, Scratch out) {
  static_assert(streams >= 1 && streams <= 64, "streams out of range");
  static_assert(mix >= streams && mix <= (1 << 24), "mix must be at least streams");
  const long long i = static_cast<long long>(blockIdx.x) * hc_pre_init_detail::kThreads + threadIdx.x;
  if (i >= rows * mix) return;
  static_cast<float*>(out)[i] = (i % mix == 0) ? 1.0f : 0.0f;
}

}  // namespace entry
}  // namespace dsv41k
