// kernels/shared_expert.cuh — the shared expert (docs/ops.md "shared_expert"):
// out += b(silu(min(g, L))·clamp(u, −L, L))·w2ᵀ for active rows (weight 1); other rows untouched.
// Mirrors runtime/cpu/ops_moe.cpp add_expert (the CPU's eight-way dots; out[d] + down in fp32).
//
// Launch (common/kernel_launch_moe.cpp): grid (R, 1, 1), one block of 256 threads per row; no dynamic
// shared memory. Static shared memory: 4·D (the row) + 4·F (the activation). One 8-lane group per
// activation column (lane k holds partial sum k of g and u), then one group per output dim d.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace shared_expert_detail {
constexpr int kThreads = 256;
__device__ constexpr long long static_shared_bytes(long long d, long long f) { return 4 * d + 4 * (f > 0 ? f : 1); }

#ifndef DSV41_CONTRACT_SCAN

// b?(1·silu(min(g, L))·clamp(u, −L, L)) as the CPU (std::min/std::clamp: NaN passes through).
template <int DT>
__device__ __forceinline__ float swiglu(float g, float u, float limit) {
  if (limit > 0.0f) {
    g = limit < g ? limit : g;
    u = u < -limit ? -limit : (limit < u ? limit : u);
  }
  const float e = static_cast<float>(exp(-static_cast<double>(g)));
  const float silu = __fmul_rn(g, __fdiv_rn(1.0f, __fadd_rn(1.0f, e)));
  return round_as<DT>(__fmul_rn(silu, u));  // weight·silu with weight 1 is silu exactly
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace shared_expert_detail

namespace entry {

template <long long hidden, long long width, int dtype_x>
__device__ __forceinline__ void shared_expert(Rows rows, Statics statics, Scratch x, Weight w1, Weight w3, Weight w2,
                                              Real limit, Scratch out) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(hidden >= 1 && width >= 0, "shared_expert constants out of range");
  static_assert(shared_expert_detail::static_shared_bytes(hidden, width) <= 46 * 1024,
                "the row and the activation must fit static shared memory");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an act buffer");
  using namespace shared_expert_detail;
  constexpr int D = static_cast<int>(hidden), F = static_cast<int>(width);
  __shared__ float xs[D];
  __shared__ float act[F > 0 ? F : 1];

  const long long r = blockIdx.x;
  if (r >= rows || row_slot(statics, r) < 0) return;
  float* outr = static_cast<float*>(out) + r * D;
  for (int i = threadIdx.x; i < D; i += blockDim.x) xs[i] = load<dtype_x>(x, r * D + i);
  __syncthreads();
  const int k8 = threadIdx.x & 7, group = threadIdx.x >> 3, groups = blockDim.x >> 3;
  for (int base = 0; base < F; base += groups) {
    const int f = base + group;
    const bool valid = f < F;
    const long long off = static_cast<long long>(valid ? f : 0) * D;
    const float g = group8_dot([&](long long i) { return w1[off + i]; }, [&](long long i) { return xs[i]; },
                               valid ? D : 0, k8);
    const float u = group8_dot([&](long long i) { return w3[off + i]; }, [&](long long i) { return xs[i]; },
                               valid ? D : 0, k8);
    if (valid && k8 == 0) act[f] = swiglu<dtype_x>(g, u, limit);
  }
  __syncthreads();
  for (int base = 0; base < D; base += groups) {
    const int d = base + group;
    const bool valid = d < D;
    const long long off = static_cast<long long>(valid ? d : 0) * F;
    const float down = group8_dot([&](long long i) { return w2[off + i]; }, [&](long long i) { return act[i]; },
                                  valid ? F : 0, k8);
    if (valid && k8 == 0) outr[d] = __fadd_rn(outr[d], down);
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
