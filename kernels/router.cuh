// kernels/router.cuh — the sqrt-softplus router (docs/ops.md "router"): σ_e = sqrt(softplus(x·gate_eᵀ)),
// the K experts of highest σ_e + bias_e (ties: lower id) best first, weights σ (normalized when asked and K > 1)
// times scaling. Mirrors runtime/cpu/ops_moe.cpp op_router: the logits are the CPU's eight-way dots, so
// the ids match the CPU's exactly.
//
// Launch (common/kernel_launch_moe.cpp): grid (R, 1, 1), one block of 256 threads per row; no dynamic
// shared memory. Static shared memory: 4·D (the row) + 8·E (σ and σ + bias) + E (chosen flags) + 512
// bytes. Logits: one 8-lane group per expert (lane k holds partial sum k); top-k: K block-wide
// arg-max passes.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace router_detail {
constexpr int kThreads = 256;
__device__ constexpr long long static_shared_bytes(long long d, long long e) { return 4 * d + 9 * e + 512; }

#ifndef DSV41_CONTRACT_SCAN

// (v, id) beats (w, jd): higher value, then lower id; id < 0 is "none".
__device__ __forceinline__ bool beats(float v, int id, float w, int jd) {
  if (id < 0) return false;
  if (jd < 0) return true;
  return v > w || (v == w && id < jd);
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace router_detail

namespace entry {

template <long long hidden, long long experts, long long topk, int dtype_x, int format_gate, int format_bias>
__device__ __forceinline__ void router(Rows rows, Statics statics, Scratch x, Weight gate, Weight bias, Real scaling,
                                       Int normalize, Scratch ids, Scratch weights) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(hidden >= 1 && experts >= 1 && topk >= 1 && topk <= experts, "router constants out of range");
  static_assert(router_detail::static_shared_bytes(hidden, experts) <= 46 * 1024,
                "the row and the expert scores must fit static shared memory");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an act buffer");
  using namespace router_detail;
  constexpr int D = static_cast<int>(hidden), E = static_cast<int>(experts), K = static_cast<int>(topk);
  const float kInf = __int_as_float(0x7f800000);
  __shared__ float xs[D];
  __shared__ float score[E];
  __shared__ float biased[E];
  __shared__ unsigned char chosen[E];
  __shared__ float red_v[32];
  __shared__ int red_i[32];
  __shared__ int order[K];

  const long long r = blockIdx.x;
  if (r >= rows) return;
  int* idr = static_cast<int*>(ids) + r * K;
  float* wr = static_cast<float*>(weights) + r * K;
  if (row_slot(statics, r) < 0) {
    for (int k = threadIdx.x; k < K; k += blockDim.x) {
      idr[k] = 0;
      wr[k] = 0.0f;
    }
    return;
  }
  for (int i = threadIdx.x; i < D; i += blockDim.x) xs[i] = load<dtype_x>(x, r * D + i);
  for (int e = threadIdx.x; e < E; e += blockDim.x) chosen[e] = 0;
  __syncthreads();

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int k8 = lane & 7, group = threadIdx.x >> 3, groups = blockDim.x >> 3;
  for (int base = 0; base < E; base += groups) {
    const int e = base + group;
    const bool valid = e < E;
    const long long grow = valid ? e : 0;
    const float logit = group8_dot([&](long long i) { return weight_at<format_gate>(gate, grow, i, D); },
                                   [&](long long i) { return xs[i]; }, valid ? D : 0, k8);
    if (valid && k8 == 0) {
      // softplus(v) = max(v, 0) + log1p(exp(−|v|)), each step rounded to fp32 as on the CPU.
      const float ex = static_cast<float>(exp(-static_cast<double>(fabsf(logit))));
      const float sp = __fadd_rn(logit < 0.0f ? 0.0f : logit, static_cast<float>(log1p(static_cast<double>(ex))));
      const float s = __fsqrt_rn(sp);
      float b = __fadd_rn(s, weight_at<format_bias>(bias, e));
      if (b != b) b = -kInf;  // keeps the order total
      score[e] = s;
      biased[e] = b;
    }
  }
  __syncthreads();

  for (int k = 0; k < K; ++k) {
    float bv = 0.0f;
    int bi = -1;
    for (int e = threadIdx.x; e < E; e += blockDim.x)
      if (!chosen[e] && beats(biased[e], e, bv, bi)) {
        bv = biased[e];
        bi = e;
      }
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (beats(ov, oi, bv, bi)) {
        bv = ov;
        bi = oi;
      }
    }
    if (lane == 0) {
      red_v[warp] = bv;
      red_i[warp] = bi;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      float v = red_v[0];
      int id = red_i[0];
      for (int w = 1; w < warps; ++w)
        if (beats(red_v[w], red_i[w], v, id)) {
          v = red_v[w];
          id = red_i[w];
        }
      order[k] = id;
      chosen[id] = 1;
    }
    __syncthreads();
  }

  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int k = 0; k < K; ++k) total = __fadd_rn(total, score[order[k]]);
    for (int k = 0; k < K; ++k) {
      float w = score[order[k]];
      if (normalize && K > 1) w = __fdiv_rn(w, __fadd_rn(total, 1e-20f));  // K = 1 keeps σ, as the official gate
      idr[k] = order[k];
      wr[k] = __fmul_rn(w, scaling);
    }
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
