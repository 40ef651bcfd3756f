// kernels/router.cuh — the sqrt-softplus router (docs/ops.md "router"): σ_e = sqrt(softplus(x·gate_eᵀ)),
// the K experts of highest σ_e + bias_e (ties: lower id) best first, weights σ (normalized when asked and K > 1)
// times scaling. Mirrors runtime/cpu/ops_moe.cpp op_router: the logits are the CPU's eight-way dots, so
// the ids match the CPU's exactly.
//
// Launch (common/kernel_launch_moe.cpp): grid (R, G, 1), blocks of one warp scoring four experts.
// Decode phases (R ≤ kRouterRows) take G = ceil(E / 4): block (r, g) scores experts 4g .. 4g + 3 of
// row r and hands them to the module's score table; the row's last block to finish (a counter per row,
// reset by that block) picks the top-k. Larger phases take G = 1: the row's block scores every expert
// itself, four at a time. So the gate streams through G·R blocks at once instead of R. Dynamic shared
// memory: 4·ceil4(D) (room for the row in its dtype) + 4·2·(D + 8) (the four gate rows, bf16); static:
// 9·E + 4·K bytes, bounded by 9·E + 512 (K ≤ 128).
//
// Logits: lane 8·e' + k keeps partial sum k (columns ≡ k mod 8, in increasing order) of expert e'.
// With BF16 gates and D % 8 == 0 the warp copies the four rows whole into shared memory with
// cp.async (16 bytes a copy, every copy in flight at once, in kParts groups so the sums start on the
// first part while the rest lands) and each lane then walks its column class there; the butterfly
// over the eight lanes forms the CPU's ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)). Other formats
// read element by element (group8_dot). Top-k: K warp-wide arg-max passes (the butterfly leaves the
// winner in every lane; no block barrier). The last block gathers the table with every load in flight.
#pragma once

#include "cp_async.cuh"
#include "last_block.cuh"

namespace dsv41k {
namespace router_detail {
constexpr int kThreads = 32;          // one warp, four experts
constexpr int kExpertsPerBlock = 4;
constexpr int kRouterRows = 16;  // phases of at most this many rows split a row's experts over blocks
constexpr int kParts = 4;        // cp.async groups a gate row is copied in
__device__ constexpr long long stage_row(long long d) { return d + 8; }  // bf16; the four rows in other banks
__device__ constexpr long long static_shared_bytes(long long e) { return 9 * e + 512; }

#ifndef DSV41_CONTRACT_SCAN
// A split launch's scores, [row][σ of E, then σ + bias of E], and each row's count of finished blocks.
template <long long E>
__device__ float g_scores[kRouterRows * 2 * E];
__device__ unsigned g_finished[kRouterRows];

// The logit of expert e0 + e' for lane 8·e' + k: the CPU's dot of gate row e0 + e' with xs (rows at or
// past E are not read; their lanes' results mean nothing). Every lane of the warp must call it.
template <int FMT, int DTX, int D>
__device__ __forceinline__ float expert_logit(Weight gate, int e0, int E, const void* xs, unsigned short* stage) {
  const int lane = threadIdx.x & 31, k = lane & 7, sub = lane >> 3;
  if constexpr (FMT == WF_BF16 && D % 8 == 0) {
    static_assert(kParts == 4, "the waits below count four groups");
    constexpr int NC = D / 8, RS = static_cast<int>(stage_row(D));  // 8-column chunks a row; staged row stride
    const unsigned short* g = static_cast<const unsigned short*>(gate.data);
    __syncwarp();  // the previous experts' sums are done with the stage
#pragma unroll
    for (int part = 0; part < kParts; ++part) {
      const int q0 = NC * part / kParts, n = NC * (part + 1) / kParts - q0;
      for (int t = lane; t < 4 * n; t += 32) {
        const int row = t / n, q = q0 + t % n;
        if (e0 + row < E) cp_async16(stage + row * RS + 8 * q, g + static_cast<long long>(e0 + row) * D + 8 * q);
      }
      cp_async_commit();
    }
    const unsigned short* w = stage + sub * RS + k;
    float acc = 0.0f;
#pragma unroll
    for (int part = 0; part < kParts; ++part) {
      if (part == 0) cp_async_wait<3>();
      else if (part == 1) cp_async_wait<2>();
      else if (part == 2) cp_async_wait<1>();
      else cp_async_wait<0>();
      __syncwarp();  // other lanes' copies of this part have landed
      const int q0 = NC * part / kParts, q1 = NC * (part + 1) / kParts;
#pragma unroll 8
      for (int q = q0; q < q1; ++q) acc = __fadd_rn(acc, __fmul_rn(bf16_bits_to_float(w[8 * q]), load<DTX>(xs, 8 * q + k)));
    }
    acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 1));
    acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 2));
    return __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 4));
  } else {
    cp_async_wait<0>();  // the row
    __syncwarp();
    const int e = e0 + sub < E ? e0 + sub : E - 1;
    return group8_dot([&](long long i) { return weight_at<FMT>(gate, e, i, D); },
                      [&](long long i) { return load<DTX>(xs, i); }, D, k);
  }
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
  static_assert(topk <= 128, "static shared memory: 9·E + 4·K within static_shared_bytes' 9·E + 512");
  static_assert(router_detail::static_shared_bytes(experts) <= 46 * 1024, "the expert scores must fit static shared memory");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an act buffer");
  using namespace router_detail;
  constexpr int D = static_cast<int>(hidden), E = static_cast<int>(experts), K = static_cast<int>(topk);
  const float kInf = __int_as_float(0x7f800000);
  extern __shared__ __align__(16) unsigned char dyn_router[];
  void* xs = dyn_router;  // [D] in x's dtype
  unsigned short* stage = reinterpret_cast<unsigned short*>(dyn_router + 4 * ((D + 3) / 4 * 4));  // [4][D + 8]
  __shared__ float score[E];
  __shared__ float biased[E];
  __shared__ unsigned char chosen[E];
  __shared__ int order[K];

  constexpr int kPerLane = (E + kThreads - 1) / kThreads;
  const int lane = threadIdx.x & 31;
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int G = static_cast<int>(gridDim.y), g = static_cast<int>(blockIdx.y);
  if (G > 1 && rows > kRouterRows) return;  // a grid the score table cannot hold (the launch never gives one)
  int* idr = static_cast<int*>(ids) + r * K;
  float* wr = static_cast<float*>(weights) + r * K;
  if (row_slot(statics, r) < 0) {
    if (g == 0)
      for (int k = threadIdx.x; k < K; k += blockDim.x) {
        idr[k] = 0;
        wr[k] = 0.0f;
      }
    return;
  }
  if constexpr (D % 8 == 0) {  // the row by cp.async too (its own group, before the gate's)
    constexpr int kChunks = D * (dtype_x == DT_F32 ? 4 : 2) / 16;
    const unsigned char* xr = static_cast<const unsigned char*>(x) + r * D * (dtype_x == DT_F32 ? 4 : 2);
    for (int c = threadIdx.x; c < kChunks; c += blockDim.x) cp_async16(dyn_router + 16 * c, xr + 16 * c);
    cp_async_commit();  // waited for with the gate's first part (groups complete in order)
  } else {
    for (int i = threadIdx.x; i < D; i += blockDim.x) store<dtype_x>(xs, i, load<dtype_x>(x, r * D + i));
  }
  __syncthreads();

  // G > 1: this block's four experts; G = 1: all of them, four at a time.
  for (int e0 = g * kExpertsPerBlock; e0 < E; e0 += G * kExpertsPerBlock) {
    const int e = e0 + (lane >> 3);
    const bool valid = e < E;
    const float logit = expert_logit<format_gate, dtype_x, D>(gate, e0, E, xs, stage);
    if (valid && (lane & 7) == 0) {
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
  if (G > 1) {
    // Hand this block's experts over; the row's last block gathers every expert and picks.
    float* table = g_scores<E> + r * 2 * E;
    const int lo = g * kExpertsPerBlock, hi = lo + kExpertsPerBlock < E ? lo + kExpertsPerBlock : E;
    __syncthreads();
    for (int e = lo + static_cast<int>(threadIdx.x); e < hi; e += blockDim.x) {
      table[e] = score[e];
      table[E + e] = biased[e];
    }
    if (!last_block_of_row(&g_finished[r], static_cast<unsigned>(G))) return;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {  // every expert's pair in flight at once
      const int e = lane + kThreads * j;
      if (e < E) {
        score[e] = __ldcg(table + e);
        biased[e] = __ldcg(table + E + e);
      }
    }
  }
  for (int e = lane; e < E; e += kThreads) chosen[e] = 0;
  __syncwarp();

  // The block is one warp (kThreads): K arg-max passes, each a lane's scan of its experts, then a
  // butterfly that leaves the winner in every lane, so no block barrier and no serial merge.
  for (int k = 0; k < K; ++k) {
    float bv = 0.0f;
    int bi = -1;
#pragma unroll 4
    for (int e = lane; e < E; e += kThreads)
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
      order[k] = bi;
      chosen[bi] = 1;
    }
    __syncwarp();
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
