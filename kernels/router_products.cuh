// kernels/router_products.cuh — the router's logits at one row (kernels/router.cuh): the block's idle warps
// form the products, warp 0 only adds them. At one row a block has one live warp, and its dot chains (the
// CPU's eight column classes, each added in increasing column order) were bound by that warp's instruction
// stream: two 2-byte shared loads, two widenings, a multiply and an add a step. Here warps 1-3 stage the
// four gate rows and x (cp.async, in kParts groups), multiply them part by part into a class-major table of
// fp32 products, and signal each part on a named barrier; warp 0 waits for a part, then adds its products
// in the CPU's order, a 16-byte load per four adds. The products and the order of the adds are the same, so
// the logits keep their bits.
#pragma once

#include "cp_async.cuh"
#include "router_layout.cuh"

namespace dsv41k {
namespace router_detail {
#ifndef DSV41_CONTRACT_SCAN
// Named barriers: 1 .. kParts signal a part's products to warp 0; kProducerBar gathers the producers
// (each has waited for its own copies; after it, everyone's have landed). 0 is __syncthreads'.
constexpr int kProducerBar = 5;
__device__ __forceinline__ void bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The eight fp32 values of x's 8-column chunk q (staged in x's dtype).
template <int DTX>
__device__ __forceinline__ void x_chunk(const void* xs, int q, float (&v)[8]) {
  if constexpr (DTX == DT_F32) {
    const float4 a = static_cast<const float4*>(xs)[2 * q], b = static_cast<const float4*>(xs)[2 * q + 1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
    const uint4 u = static_cast<const uint4*>(xs)[q];
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) v[2 * i] = __uint_as_float(w[i] << 16), v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

// Warps 1-3: part by part, wait for the part's copies (groups complete in order; x's group was committed
// first), multiply chunk q of gate rows e0 .. e0 + 3 (those below E) by x's chunk q into
// products[8·e' + k][q] (k: the column class), then signal the part.
template <int DTX, int D>
__device__ __forceinline__ void form_products(int e0, int E, const void* xs, const unsigned short* stage, float* products) {
  static_assert(kParts == 4 && D % 128 == 0, "whole 4-chunk units a part (NC / kParts a multiple of 4)");
  constexpr int NC = D / 8, RS = static_cast<int>(stage_row(D)), PS = static_cast<int>(product_row(D));
  const int t = static_cast<int>(threadIdx.x) - 32;
#pragma unroll
  for (int part = 0; part < kParts; ++part) {
    wait_gate_part(part);
    bar_sync(kProducerBar, kProducers);
    for (int q = NC * part / kParts + t; q < NC * (part + 1) / kParts; q += kProducers) {
      float xv[8];
      x_chunk<DTX>(xs, q, xv);
#pragma unroll
      for (int e = 0; e < kExpertsPerBlock; ++e) {
        if (e0 + e >= E) break;
        const uint4 u = reinterpret_cast<const uint4*>(stage + e * RS)[q];
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
        float* row = products + 8 * e * PS + q;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          row[(2 * i) * PS] = __fmul_rn(__uint_as_float(w[i] << 16), xv[2 * i]);
          row[(2 * i + 1) * PS] = __fmul_rn(__uint_as_float(w[i] & 0xffff0000u), xv[2 * i + 1]);
        }
      }
    }
    bar_arrive(1 + part, kThreads);
  }
}

// Warp 0: lane 8·e' + k's logit part (after the butterfly, the expert's logit): part by part, wait for the
// producers' signal, then add products[lane][q] for q in increasing order, four at a time.
template <int D>
__device__ __forceinline__ float add_products(const float* products, bool live) {
  constexpr int NC = D / 8, PS = static_cast<int>(product_row(D)), B = 4;  // float4s a block, the next block in flight
  const int lane = threadIdx.x & 31;
  const float4* p = reinterpret_cast<const float4*>(products + lane * PS);
  float acc = 0.0f;
  auto add4 = [&](float4 v) {
    acc = __fadd_rn(acc, v.x);
    acc = __fadd_rn(acc, v.y);
    acc = __fadd_rn(acc, v.z);
    acc = __fadd_rn(acc, v.w);
  };
#pragma unroll
  for (int part = 0; part < kParts; ++part) {
    bar_sync(1 + part, kThreads);
    if (!live) continue;
    const int i1 = NC * (part + 1) / kParts / 4;
    int i = NC * part / kParts / 4;
    if (i1 - i >= B) {
      float4 cur[B];
#pragma unroll
      for (int j = 0; j < B; ++j) cur[j] = p[i + j];
      for (; i + B <= i1; i += B) {
        const int n = i + 2 * B <= i1 ? i + B : i;  // the next block, or this one again at the end (unused)
        float4 nxt[B];
#pragma unroll
        for (int j = 0; j < B; ++j) nxt[j] = p[n + j];
#pragma unroll
        for (int j = 0; j < B; ++j) add4(cur[j]);
#pragma unroll
        for (int j = 0; j < B; ++j) cur[j] = nxt[j];
      }
    }
    for (; i < i1; ++i) add4(p[i]);
  }
  acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 1));
  acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 2));
  return __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 4));
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace router_detail
}  // namespace dsv41k
