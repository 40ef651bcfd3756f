// kernels/router.cuh — the sqrt-softplus router (docs/ops.md "router"): σ_e = sqrt(softplus(x·gate_eᵀ)),
// the K experts of highest σ_e + bias_e (ties: lower id) best first, weights σ (normalized when asked and K > 1)
// times scaling. Mirrors runtime/cpu/ops_moe.cpp op_router: the logits are the CPU's eight-way dots, so
// the ids match the CPU's exactly.
//
// Launch (common/kernel_launch_moe.cpp): grid (R, 1, 1), one block per row of router_threads(E) threads
// (2 per expert, a multiple of 32 in [64, 1024]); no dynamic shared memory. Static shared memory: 4·D (the
// row) + 8·E (σ and σ + bias) + E (chosen flags) + 512 bytes. Logits: a pair of threads per expert, each
// holding four of the eight partial sums and reading four gate values at a time (one 8-byte load for
// BF16), so one block streams the gate at far more than one 2-byte load per lane; top-k: K block-wide
// arg-max passes.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace router_detail {
__device__ constexpr long long static_shared_bytes(long long d, long long e) { return 4 * d + 9 * e + 512; }

#ifndef DSV41_CONTRACT_SCAN

// Groups of eight whose gate loads a thread issues together: 16 BF16 loads of 8 bytes keep ~96 KB in
// flight on the SM at 768 threads (the release gate); other formats take 8 (their dequantization needs
// registers: 16 spill at 768 threads).
template <int FMT>
__device__ constexpr int batch() {
  return FMT == WF_BF16 ? 16 : 8;
}

// acc[j] += w[j]·x_j, the product rounded, then the sum (no fused multiply-add: the CPU's order).
__device__ __forceinline__ void add4(float* acc, const float* w, float4 x) {
  acc[0] = __fadd_rn(acc[0], __fmul_rn(w[0], x.x));
  acc[1] = __fadd_rn(acc[1], __fmul_rn(w[1], x.y));
  acc[2] = __fadd_rn(acc[2], __fmul_rn(w[2], x.z));
  acc[3] = __fadd_rn(acc[3], __fmul_rn(w[3], x.w));
}

// x·gate_rowᵀ as runtime/cpu/ops_common.cpp dot: partial sum k (k < 8) adds the products of columns
// i ≡ k (mod 8) below n8 = D & ~7 in increasing i; the sum is ((a0 + a1) + (a2 + a3)) + ((a4 + a5) +
// (a6 + a7)) + tail, the tail the remaining columns in order. Thread `half` of the pair (adjacent lanes)
// keeps a_{4·half} .. a_{4·half+3} and forms its bracket; the xor-1 shuffle adds the two brackets
// (fp32 addition commutes, so both lanes hold the same sum). Every lane of the warp must call it.
template <int FMT, int D>
__device__ __forceinline__ float pair_dot(Weight gate, long long row, const float* xs, int half) {
  constexpr bool kVector = D % 4 == 0;
  constexpr int groups = D / 8, kBatch = batch<FMT>();
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  int g = 0;
  for (; g + kBatch <= groups; g += kBatch) {
    float w[kBatch][4];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) weight_vec4<FMT, kVector>(gate, row, 8ll * (g + b) + 4 * half, D, w[b]);
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const float4 xv = *reinterpret_cast<const float4*>(xs + 8 * (g + b) + 4 * half);
      add4(acc, w[b], xv);
    }
  }
  for (; g < groups; ++g) {
    float w[4];
    weight_vec4<FMT, kVector>(gate, row, 8ll * g + 4 * half, D, w);
    const float4 xv = *reinterpret_cast<const float4*>(xs + 8 * g + 4 * half);
    add4(acc, w, xv);
  }
  float sum = __fadd_rn(__fadd_rn(acc[0], acc[1]), __fadd_rn(acc[2], acc[3]));
  sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, 1));
  float tail = 0.0f;
  for (int i = 8 * groups; i < D; ++i) tail = __fadd_rn(tail, __fmul_rn(weight_at<FMT>(gate, row, i, D), xs[i]));
  return __fadd_rn(sum, tail);
}

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
  __shared__ __align__(16) float xs[D];  // float4 reads
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
  const int half = threadIdx.x & 1, pairs = blockDim.x >> 1;
  for (int base = 0; base < E; base += pairs) {  // uniform over the block: every lane reaches the shuffle
    const int e = base + (threadIdx.x >> 1);
    const bool valid = e < E;
    const float logit = pair_dot<format_gate, D>(gate, valid ? e : 0, xs, half);
    if (valid && half == 0) {
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
