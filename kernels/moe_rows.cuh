// kernels/moe_rows.cuh — the CUDA-core products of the grouped experts (kernels/moe_grouped.cuh) for
// variants the tensor cores do not take (f32 activations): a warp's lanes split one weight row's chunks
// and accumulate up to 16 members' dots, the inputs read through a source (x rows, or act rows in L2).
#pragma once

#include "gemv.cuh"

namespace dsv41k {
namespace moe_grouped {

#ifndef DSV41_CONTRACT_SCAN

// acc[m] += Σ_i w[wrow, i]·src(m, i) over the warp's lanes for members m < nm (partial per lane).
// src.chunk(m, i, v) loads E inputs at i; src.one(m, i) one input (shapes the chunk path does not take).
template <int FMT, int RB, class Src>
__device__ __forceinline__ void warp_rows(Weight w, long long wrow, long long n, int nm, const Src& src, bool chunked,
                                          float* acc) {
  using namespace gemv_detail;
  constexpr int E = chunk_elems(FMT);
  const int lane = threadIdx.x & 31;
  if constexpr (E > 0) {
    if (chunked) {
      const long long chunks = n / E;
      constexpr int U = 2;
      for (long long c0 = lane; c0 < chunks; c0 += 32 * U) {
        uint4 raw[U];
        float s[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (c0 + 32 * u < chunks) {
            raw[u] = load_chunk<FMT>(w, wrow, n, c0 + 32 * u);
            s[u] = chunk_scale<FMT>(w, wrow, n, c0 + 32 * u);
          }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const long long c = c0 + 32 * u;
          if (c >= chunks) break;
          float t[RB];
#pragma unroll
          for (int m = 0; m < RB; ++m) t[m] = 0.0f;
#pragma unroll
          for (int grp = 0; grp < E / 8; ++grp) {
            float wv[8];
            decode_group<FMT>(raw[u], grp, wv);
#pragma unroll
            for (int m = 0; m < RB; ++m) {
              if (m >= nm) break;
              float xv[8];
              src.template chunk_at<8>(m, c * E + 8 * grp, xv);
#pragma unroll
              for (int e = 0; e < 8; ++e) t[m] = __fmaf_rn(wv[e], xv[e], t[m]);
            }
          }
#pragma unroll
          for (int m = 0; m < RB; ++m)
            if (m < nm) acc[m] = __fmaf_rn(__fmul_rn(t[m], chunk_unscale<FMT>()), s[u], acc[m]);
        }
      }
      return;
    }
  }
  for (long long i = lane; i < n; i += 32) {
    const float wv = weight_at<FMT>(w, wrow, i, n);
#pragma unroll
    for (int m = 0; m < RB; ++m)
      if (m < nm) acc[m] = __fmaf_rn(wv, src.one(m, i), acc[m]);
  }
}

// Inputs of phase 1: x rows of the members (pair p reads row p / KK).
template <int DT, int KK>
struct XSource {
  Scratch x;
  const int* members;
  long long width;
  template <int E>
  __device__ __forceinline__ void chunk_at(int m, long long i, float* v) const {
    gemv_detail::load_x<DT, E>(x, static_cast<long long>(members[m] / KK) * width + i, v);
  }
  __device__ __forceinline__ float one(int m, long long i) const {
    return load<DT>(x, static_cast<long long>(members[m] / KK) * width + i);
  }
};
// Inputs of phase 2: the act rows of the members, read through L2 (other blocks wrote them).
struct ActSource {
  const float* act;
  const int* members;
  long long width;
  template <int E>
  __device__ __forceinline__ void chunk_at(int m, long long i, float* v) const {
    const float4* p = reinterpret_cast<const float4*>(act + static_cast<long long>(members[m]) * width + i);
#pragma unroll
    for (int j = 0; j < E / 4; ++j) {
      const float4 f = __ldcg(p + j);
      v[4 * j] = f.x, v[4 * j + 1] = f.y, v[4 * j + 2] = f.z, v[4 * j + 3] = f.w;
    }
  }
  __device__ __forceinline__ float one(int m, long long i) const {
    return __ldcg(act + static_cast<long long>(members[m]) * width + i);
  }
};

#endif  // DSV41_CONTRACT_SCAN
}  // namespace moe_grouped
}  // namespace dsv41k
