// kernels/moe_grouped.cuh — the experts of a decode step (at most kMoeRows rows) grouped by expert: each
// selected expert's weights are read once for every row that picked it, spread over the whole GPU.
// Shared by moe_experts (K choices a row) and shared_expert (one expert every row picks, weight 1).
//
// One launch, two phases of work items claimed from a ticket counter (kMoeBlocks blocks loop until the
// tickets run out): phase 1 items are (expert, 16 activation columns): g and u of every row that picked
// the expert, then act = b?(w·silu(min(g, L))·clamp(u, −L, L)) per (row, choice), into a store in the
// module's global memory; phase 2 items are 16 output dims: each waits until every phase 1 item is done,
// then takes every selected expert's w2 rows once and sums a row's choices in selection order (as the
// CPU op does; the dots themselves are summed in another order: the f32 tolerance of the GPU op tests).
// Waiting cannot deadlock: tickets are handed out in order, so every phase 1 item was claimed by a
// block that is running and never waits. The last block to leave resets the counters for the next
// launch (launches of one module are ordered on its stream).
#pragma once

#include "gemv_mma.cuh"

namespace dsv41k {
namespace moe_grouped {

constexpr int kMoeRows = 16;     // the largest row count served grouped; larger phases run a block a row
constexpr int kMoeBlocks = 264;  // blocks of the grouped launch (two per H200 SM)
constexpr int kMoeCols = 16;     // activation columns (phase 1) or output dims (phase 2) of a work item
constexpr int kWarps = 8;
// Static shared memory of the grouped path beyond the per-row path's: the pair tables and the partials.
// (common/kernel_launch_moe.cpp adds the same number to the launch's static shared memory.)
__device__ constexpr long long part_floats(long long choices) {
  return kMoeCols * kMoeRows * choices > 512 ? kMoeCols * kMoeRows * choices : 512;
}
__device__ constexpr long long shared_bytes(long long choices) {
  return 4 * (4 * kMoeRows * choices + 2) + 4 * part_floats(choices) + 4 + 4 * kWarps * kMoeCols * kMoeRows;
}

#ifndef DSV41_CONTRACT_SCAN

// b?(weight·silu(min(g, L))·clamp(u, −L, L)) as the CPU (std::min/std::clamp: NaN passes through).
template <int DT>
__device__ __forceinline__ float swiglu(float g, float u, float weight, float limit) {
  if (limit > 0.0f) {
    g = limit < g ? limit : g;
    u = u < -limit ? -limit : (limit < u ? limit : u);
  }
  const float e = static_cast<float>(exp(-static_cast<double>(g)));
  const float silu = __fmul_rn(g, __fdiv_rn(1.0f, __fadd_rn(1.0f, e)));
  return round_as<DT>(__fmul_rn(__fmul_rn(weight, silu), u));
}

// The module's state between blocks of one launch (zero when the module loads and after each launch).
__device__ unsigned g_ticket, g_done, g_exited;
template <long long N>
__device__ __align__(16) float g_act[N];  // [pair][F]: act of (row, choice) pair r·K + k

// The pairs of the step grouped by expert, built once per block in shared memory.
template <int P>
struct Pairs {
  int expert[P];     // expert of pair p, or -1 (inactive row, or an id out of range)
  int leads;         // distinct experts, in order of first pick
  int lead[P];       // their first pairs
  int start[P + 1];  // members of lead i: member[start[i] .. start[i + 1])
  int member[P];
};

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

// Pairs of the step (pair p = row p / KK, choice p % KK; expert 0 for every active row when ids is null).
template <int P, int KK>
__device__ __forceinline__ void build_pairs(Pairs<P>& pairs, Rows rows, Statics statics, Errors errors, const int* ids,
                                            long long experts) {
  if (threadIdx.x != 0) return;
  const int np = static_cast<int>(rows) * KK;
  pairs.leads = 0;
  for (int p = 0; p < np; ++p) {
    int e = -1;
    if (row_slot(statics, p / KK) >= 0) {
      e = ids ? ids[p] : 0;
      if (e < 0 || e >= experts) {
        report_error(errors, ERR_EXPERT);
        e = -1;
      }
    }
    pairs.expert[p] = e;
    if (e < 0) continue;
    bool seen = false;
    for (int i = 0; i < pairs.leads && !seen; ++i) seen = pairs.expert[pairs.lead[i]] == e;
    if (!seen) pairs.lead[pairs.leads++] = p;
  }
  int pos = 0;
  for (int i = 0; i < pairs.leads; ++i) {
    pairs.start[i] = pos;
    for (int p = 0; p < np; ++p)
      if (pairs.expert[p] == pairs.expert[pairs.lead[i]]) pairs.member[pos++] = p;
  }
  pairs.start[pairs.leads] = pos;
}

// The grouped experts of a step of at most kMoeRows rows (file comment). ids null: the shared expert
// (every active row, weight 1, added onto out); else out = Σ over each row's choices, from 0. False:
// declined before touching anything (the caller runs its per-row path).
template <int dtype_x, int fw1, int fw3, int fw2, int D, int F, int KK>
__device__ __forceinline__ bool run(Rows rows, Statics statics, Errors errors, Scratch x, const int* ids,
                                    const float* choice_weight, WeightList w1l, WeightList w3l, WeightList w2l,
                                    Weight w1s, Weight w3s, Weight w2s, float limit, float* out, long long experts) {
  static_assert(F > 0, "the grouped path needs expert columns");
  using gemv_detail::mma_tile;
  constexpr int P = kMoeRows * KK, C = kMoeCols, RB = kMoeRows, T = C * RB;  // T: one MMA tile's outputs
  constexpr bool kMma = gemv_detail::mma_takes(dtype_x, fw1) && gemv_detail::mma_takes(dtype_x, fw3) &&
                        gemv_detail::mma_takes(dtype_x, fw2);
  __shared__ Pairs<P> pairs;
  __shared__ float part[part_floats(KK)];  // phase 2: [dim][pair]; phase 1 (MMA): the gate of a tile
  __shared__ unsigned s_item;
  __shared__ float red[kWarps * T];  // the MMA path's per-warp partials
  build_pairs<P, KK>(pairs, rows, statics, errors, ids, experts);
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, leads = pairs.leads;
  const unsigned n1 = static_cast<unsigned>(leads) * ((F + C - 1) / C), total = n1 + (D + C - 1) / C;
  const bool x_chunks = gemv_detail::gemv_applies<dtype_x, fw1>(x, (ids ? w1l[0] : w1s).data, D, 0, D) &&
                        gemv_detail::gemv_applies<dtype_x, fw3>(x, (ids ? w3l[0] : w3s).data, D, 0, D);
  constexpr int E2 = gemv_detail::chunk_elems(fw2);
  const bool a_chunks = E2 > 0 && F % (E2 > 0 ? E2 : 1) == 0 &&
                        (reinterpret_cast<unsigned long long>((ids ? w2l[0] : w2s).data) & 15) == 0;
  // Tensor cores (bf16 x and act, both products chunked): act is stored as bf16 (exact: it is rounded
  // to bf16 already); otherwise as f32 for the CUDA-core products.
  // Variants with tensor cores compile no CUDA-core products (NVRTC time): shapes they cannot take
  // (never for whole 128-column expert shares and aligned buffers) go to the caller's per-row path.
  if constexpr (kMma) {
    if (!x_chunks || !a_chunks) return false;
  }
  float* act = g_act<static_cast<long long>(P) * F>;
  unsigned short* act16 = reinterpret_cast<unsigned short*>(act);
  const unsigned short* xs = static_cast<const unsigned short*>(x);
  // Sum of the 8 warps' partials of tile output t (column t / RB, input t % RB), in warp order.
  auto tile_sum = [&](int t) {
    float v = 0.0f;
    for (int k = 0; k < kWarps; ++k) v += red[k * T + t];
    return v;
  };
  for (;;) {
    if (threadIdx.x == 0) s_item = atomicAdd(&g_ticket, 1u);
    __syncthreads();
    const unsigned item = s_item;
    __syncthreads();
    if (item >= total) break;
    if (item < n1) {  // phase 1: act of 16 columns of one expert for all its pairs
      const int li = static_cast<int>(item % leads), col0 = static_cast<int>(item / leads) * C;
      const int e = pairs.expert[pairs.lead[li]];
      const Weight w1 = ids ? w1l[e] : w1s, w3 = ids ? w3l[e] : w3s;
      const int m0 = pairs.start[li], count = pairs.start[li + 1] - m0;
      if constexpr (kMma) {  // all 8 warps on the 16 columns, each a K slice; gate then up, summed in warp order
        for (int mb = 0; mb < count; mb += RB) {
          const int nm = count - mb < RB ? count - mb : RB;
          const int* mem = pairs.member + m0 + mb;
          auto xrow = [&](int i) { return static_cast<long long>(mem[i] / KK) * D; };
          mma_tile<fw1, false>(xs, xrow, nm, w1, D, col0, F, warp, kWarps, red + warp * T);
          __syncthreads();
          for (int t = threadIdx.x; t < T; t += blockDim.x) part[t] = tile_sum(t);
          __syncthreads();
          mma_tile<fw3, false>(xs, xrow, nm, w3, D, col0, F, warp, kWarps, red + warp * T);
          __syncthreads();
          for (int t = threadIdx.x; t < T; t += blockDim.x) {
            const int c = t / RB, m = t % RB;
            if (m >= nm || col0 + c >= F) continue;
            const int p = mem[m];
            act16[static_cast<long long>(p) * F + col0 + c] =
                float_to_bf16_bits(swiglu<dtype_x>(part[t], tile_sum(t), ids ? choice_weight[p] : 1.0f, limit));
          }
          __syncthreads();
        }
      }
      if constexpr (!kMma)
        for (int j = 0; j < C / kWarps; ++j) {
          const int f = col0 + warp * (C / kWarps) + j;
          if (f >= F) break;
          for (int mb = 0; mb < count; mb += RB) {
            const int nm = count - mb < RB ? count - mb : RB;
            const XSource<dtype_x, KK> src{x, pairs.member + m0 + mb, D};
            float g[RB], u[RB];
#pragma unroll
            for (int m = 0; m < RB; ++m) g[m] = u[m] = 0.0f;
            warp_rows<fw1, RB>(w1, f, D, nm, src, x_chunks, g);
            warp_rows<fw3, RB>(w3, f, D, nm, src, x_chunks, u);
#pragma unroll
            for (int m = 0; m < RB; ++m) {
              if (m >= nm) break;
              const float gs = warp_sum(g[m]), us = warp_sum(u[m]);
              const int p = pairs.member[m0 + mb + m];
              if (lane == 0)
                act[static_cast<long long>(p) * F + f] = swiglu<dtype_x>(gs, us, ids ? choice_weight[p] : 1.0f, limit);
            }
          }
        }
      __syncthreads();
      if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(&g_done, 1u);
      }
    } else {  // phase 2: 16 output dims, every expert's w2 rows once, then each row's choices in order
      const int d0 = static_cast<int>(item - n1) * C;
      if (threadIdx.x == 0) {
        while (atomicAdd(&g_done, 0u) < n1) __nanosleep(100);
        __threadfence();
      }
      __syncthreads();
      for (int li = 0; li < leads; ++li) {
        const int e = pairs.expert[pairs.lead[li]];
        const Weight w2 = ids ? w2l[e] : w2s;
        const int m0 = pairs.start[li], count = pairs.start[li + 1] - m0;
        if constexpr (kMma) {
          for (int mb = 0; mb < count; mb += RB) {
            const int nm = count - mb < RB ? count - mb : RB;
            const int* mem = pairs.member + m0 + mb;
            mma_tile<fw2, true>(
                act16, [&](int i) { return static_cast<long long>(mem[i]) * F; }, nm, w2, F, d0, D, warp, kWarps,
                red + warp * T);
            __syncthreads();
            for (int t = threadIdx.x; t < T; t += blockDim.x) {
              const int dl = t / RB, m = t % RB;
              if (m < nm) part[dl * P + mem[m]] = tile_sum(t);
            }
            __syncthreads();
          }
        }
        if constexpr (!kMma)
          for (int j = 0; j < C / kWarps; ++j) {
            const int dl = warp * (C / kWarps) + j, d = d0 + dl;
            if (d >= D) break;
            for (int mb = 0; mb < count; mb += RB) {
              const int nm = count - mb < RB ? count - mb : RB;
              const ActSource src{act, pairs.member + m0 + mb, F};
              float acc[RB];
#pragma unroll
              for (int m = 0; m < RB; ++m) acc[m] = 0.0f;
              warp_rows<fw2, RB>(w2, d, F, nm, src, a_chunks, acc);
#pragma unroll
              for (int m = 0; m < RB; ++m) {
                if (m >= nm) break;
                const float v = warp_sum(acc[m]);
                if (lane == 0) part[dl * P + pairs.member[m0 + mb + m]] = v;
              }
            }
          }
      }
      __syncthreads();
      for (int t = threadIdx.x; t < C * rows; t += blockDim.x) {
        const int dl = t % C, r = t / C, d = d0 + dl;
        if (d >= D) continue;
        float* o = out + static_cast<long long>(r) * D + d;
        if (row_slot(statics, r) < 0) {
          if (ids) *o = 0.0f;  // routed experts: inactive rows are zero; the shared expert leaves them
          continue;
        }
        float v = ids ? 0.0f : *o;
        for (int k = 0; k < KK; ++k)
          if (pairs.expert[r * KK + k] >= 0) v = __fadd_rn(v, part[dl * P + r * KK + k]);
        *o = v;
      }
      __syncthreads();  // part is rewritten by the block's next item
    }
  }
  if (threadIdx.x == 0 && atomicAdd(&g_exited, 1u) == gridDim.x - 1) {  // the last block out resets
    g_ticket = 0;
    g_done = 0;
    __threadfence();
    g_exited = 0;
  }
  return true;
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace moe_grouped
}  // namespace dsv41k
