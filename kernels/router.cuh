// kernels/router.cuh — the sqrt-softplus router (docs/ops.md "router"): σ_e = sqrt(softplus(x·gate_eᵀ)),
// the K experts of highest σ_e + bias_e (ties: lower id) best first, weights σ (normalized when asked and K > 1)
// times scaling. Mirrors runtime/cpu/ops_moe.cpp op_router: the logits are the CPU's eight-way dots, so
// the ids match the CPU's exactly.
//
// Launch (common/kernel_launch_moe.cpp): grid (ceil(R / kRowsPerBlock), G, 1), blocks of kRowsPerBlock
// warps; warp w serves row kRowsPerBlock·blockIdx.x + w, and the block's four gate rows are staged once
// for all its rows (a decode step of 8 rows reads the gate twice, not eight times). Decode phases
// (R ≤ kRouterRows) take G = ceil(E / 4): block (b, g) scores experts 4g .. 4g + 3 of its rows and
// hands them to the module's score table; the rows' last block to finish (a counter per row group,
// reset by that block) picks every row's top-k, a warp a row. Larger phases take G = 1: the block scores
// every expert itself, four at a time. Dynamic shared memory: the four staged gate rows, 4·2·(D + 8)
// (bf16), then min(R, kRowsPerBlock) rows of x in its dtype, each padded to 16 bytes, then at R = 1 with
// D % 128 == 0 the products' table, 32·4·product_row(D) bytes; static: kRowsPerBlock·(8·E + 4·K) bytes
// and last_block_of_row's flag, within static_shared_bytes = kRowsPerBlock·(8·E + 1024) (K ≤ 128). The
// numbers are kernels/router_layout.cuh's.
//
// Logits: lane 8·e' + k of a row's warp keeps partial sum k (columns ≡ k mod 8, in increasing order) of
// expert e'. With BF16 gates and D % 8 == 0 all the block's threads copy the four rows whole into shared
// memory with cp.async (16 bytes a copy, every copy in flight at once, in kParts groups so the sums start
// on the first part while the rest lands) and each lane then walks its column class there; the butterfly
// over the eight lanes forms the CPU's ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)). Other formats
// read element by element (group8_dot). At one row (BF16 gates, D % 128 == 0) warps 1-3 stage the rows and
// form the products, and warp 0 only adds them (kernels/router_products.cuh: the same products, the same
// order of adds). Top-k: K warp-wide arg-max passes over register-held keys (the
// value's order-preserving bits; two warp reductions a pass, max key then min id, so the tie rule holds),
// only the winner's lane rescanning its experts. The weights: lane k writes choice k.
#pragma once

#include "cp_async.cuh"
#include "last_block.cuh"
#include "router_layout.cuh"
#include "router_products.cuh"

namespace dsv41k {
namespace router_detail {
#ifndef DSV41_CONTRACT_SCAN
// A split launch's scores, [row][σ of E, then σ + bias of E], and each row group's count of finished blocks.
template <long long E>
__device__ float g_scores[kRouterRows * 2 * E];
__device__ unsigned g_finished[kRouterRows / kRowsPerBlock];

// Copies gate rows e0 .. e0 + 3 (those below E) into the stage, threads t0 .. t0 + nt − 1 of the block
// (t: this thread's index among them), one cp.async group a part (BF16 gates with D % 8 == 0 only).
template <int D>
__device__ __forceinline__ void stage_gate(Weight gate, int e0, int E, unsigned short* stage, int t0, int nt) {
  constexpr int NC = D / 8, RS = static_cast<int>(stage_row(D));  // 8-column chunks a row; staged row stride
  const unsigned short* g = static_cast<const unsigned short*>(gate.data);
#pragma unroll
  for (int part = 0; part < kParts; ++part) {
    const int q0 = NC * part / kParts, n = NC * (part + 1) / kParts - q0;
    for (int t = t0; t < 4 * n; t += nt) {
      const int row = t / n, q = q0 + t % n;
      if (e0 + row < E) cp_async16(stage + row * RS + 8 * q, g + static_cast<long long>(e0 + row) * D + 8 * q);
    }
    cp_async_commit();
  }
}

// Lane k's raw x element 8·q + k: fp32 as is, bf16 as its bits (widened where it is used, so the
// widening does not wait on the load ahead of the adds).
template <int DTX>
struct XRawOf {
  using type = unsigned short;
};
template <>
struct XRawOf<DT_F32> {
  using type = float;
};
template <int DTX>
using XRaw = typename XRawOf<DTX>::type;
template <int DTX>
__device__ __forceinline__ float widen(XRaw<DTX> v) {
  if constexpr (DTX == DT_F32) return v;
  else return bf16_bits_to_float(v);
}

// acc plus the products of chunks q0 .. q1 − 1 of the lane's column class, in increasing order (the
// CPU's partial sum): blocks of 8 chunks, the next block's 16 loads issued before this block's adds, so
// the dependent adds do not wait on shared-memory latency. w: the staged gate row at the lane's class.
template <int DTX>
__device__ __forceinline__ float chain_part(float acc, const unsigned short* w, const void* xs, int k, int q0, int q1) {
  constexpr int B = 8;
  const XRaw<DTX>* xk = static_cast<const XRaw<DTX>*>(xs) + k;
  int q = q0;
  if (q1 - q0 >= B) {
    unsigned short wv[B];
    XRaw<DTX> xv[B];
#pragma unroll
    for (int j = 0; j < B; ++j) wv[j] = w[8 * (q + j)], xv[j] = xk[8 * (q + j)];
    for (; q + B <= q1; q += B) {
      const int n = q + 2 * B <= q1 ? q + B : q;  // the next block, or this one again at the end (unused)
      unsigned short wn[B];
      XRaw<DTX> xn[B];
#pragma unroll
      for (int j = 0; j < B; ++j) wn[j] = w[8 * (n + j)], xn[j] = xk[8 * (n + j)];
#pragma unroll
      for (int j = 0; j < B; ++j) acc = __fadd_rn(acc, __fmul_rn(bf16_bits_to_float(wv[j]), widen<DTX>(xv[j])));
#pragma unroll
      for (int j = 0; j < B; ++j) wv[j] = wn[j], xv[j] = xn[j];
    }
  }
  for (; q < q1; ++q) acc = __fadd_rn(acc, __fmul_rn(bf16_bits_to_float(w[8 * q]), widen<DTX>(xk[8 * q])));
  return acc;
}

// The logit of expert e0 + e' for lane 8·e' + k of a warp with a row (`live`): the CPU's dot of gate row
// e0 + e' with xs (rows at or past E are not read; their lanes' results mean nothing). Every thread of
// the block must call it (its waits are block barriers); a warp without a row only waits.
template <int FMT, int DTX, int D>
__device__ __forceinline__ float expert_logit(Weight gate, int e0, int E, const void* xs, const unsigned short* stage,
                                              bool live) {
  const int lane = threadIdx.x & 31, k = lane & 7, sub = lane >> 3;
  if constexpr (FMT == WF_BF16 && D % 8 == 0) {
    constexpr int NC = D / 8, RS = static_cast<int>(stage_row(D));
    const unsigned short* w = stage + sub * RS + k;
    float acc = 0.0f;
#pragma unroll
    for (int part = 0; part < kParts; ++part) {
      wait_gate_part(part);
      __syncthreads();  // every thread's copies of this part have landed
      if (!live) continue;
      const int q0 = NC * part / kParts, q1 = NC * (part + 1) / kParts;
      acc = chain_part<DTX>(acc, w, xs, k, q0, q1);
    }
    acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 1));
    acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 2));
    return __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 4));
  } else {
    cp_async_wait<0>();  // the rows
    __syncthreads();
    if (!live) return 0.0f;
    const int e = e0 + sub < E ? e0 + sub : E - 1;
    return group8_dot([&](long long i) { return weight_at<FMT>(gate, e, i, D); },
                      [&](long long i) { return load<DTX>(xs, i); }, D, k);
  }
}

// The order-preserving bits of a score that is not NaN and not −0 (the kernel makes it so): a larger
// key is a larger value, and equal keys are equal values. 0 is below every such key ("taken").
__device__ __forceinline__ unsigned order_key(float v) {
  const unsigned u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ constexpr int ceil_log2(int n) { return n <= 1 ? 0 : 1 + ceil_log2((n + 1) / 2); }

// The largest of a lane's N keys and its index, the lower index among equal keys: a tree of pairwise
// maxima (depth log2 N, not a chain of N compares; the left side holds the lower indices, so a strict
// compare keeps ties there).
template <int N>
__device__ __forceinline__ void lane_best(const unsigned (&key)[N], unsigned& best, int& best_i) {
  unsigned k[N];
  int ix[N];
#pragma unroll
  for (int i = 0; i < N; ++i) k[i] = key[i], ix[i] = i;
  constexpr int kLevels = ceil_log2(N);
#pragma unroll
  for (int l = 0; l < kLevels; ++l)
#pragma unroll
    for (int i = 0; i + (1 << l) < N; i += 2 << l)
      if (k[i + (1 << l)] > k[i]) k[i] = k[i + (1 << l)], ix[i] = ix[i + (1 << l)];
  best = k[0];
  best_i = ix[0];
}

// One warp: the K best of the E keys (lane + 32·i held by the lane in key[i]) into order[], best first,
// ties to the lower id. Each pass takes the warp's largest key, then the lowest id holding it; the
// winner's lane clears that key and finds its own best again.
template <int E, int K>
__device__ __forceinline__ void top_k(unsigned (&key)[(E + 31) / 32], int* order) {
  constexpr int kPerLane = (E + 31) / 32;
  const int lane = threadIdx.x & 31;
  unsigned best;
  int best_i;
  lane_best(key, best, best_i);
  for (int k = 0; k < K; ++k) {
    const unsigned top = __reduce_max_sync(0xffffffffu, best);
    const unsigned mine = best == top ? static_cast<unsigned>(lane + 32 * best_i) : 0xffffffffu;
    const unsigned id = __reduce_min_sync(0xffffffffu, mine);
    if (lane == 0) order[k] = static_cast<int>(id);
    if (static_cast<int>(id & 31u) == lane) {
#pragma unroll
      for (int i = 0; i < kPerLane; ++i)
        if (static_cast<unsigned>(lane + 32 * i) == id) key[i] = 0u;  // (not key[id / 32]: a local-memory store)
      lane_best(key, best, best_i);
    }
  }
  __syncwarp();
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace router_detail

namespace entry {

template <long long hidden, long long experts, long long topk, int dtype_x, int format_gate, int format_bias>
__device__ __forceinline__ void router(Rows rows, Statics statics, Scratch x, Weight gate, Weight bias, Real scaling,
                                       Int normalize, Scratch ids, Scratch weights) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(hidden >= 1 && experts >= 1 && topk >= 1 && topk <= experts, "router constants out of range");
  static_assert(topk <= 128, "static shared memory: the order within static_shared_bytes");
  static_assert(router_detail::static_shared_bytes(experts) <= 46 * 1024, "the expert scores must fit static shared memory");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an act buffer");
  using namespace router_detail;
  constexpr int D = static_cast<int>(hidden), E = static_cast<int>(experts), K = static_cast<int>(topk);
  constexpr int kXBytes = D * (dtype_x == DT_F32 ? 4 : 2), kXSlot = (kXBytes + 15) / 16 * 16;
  constexpr int kPerLane = (E + 31) / 32;
  const float kInf = __int_as_float(0x7f800000);
  extern __shared__ __align__(16) unsigned char dyn_router[];
  unsigned short* stage = reinterpret_cast<unsigned short*>(dyn_router);  // [4][D + 8]
  unsigned char* x_rows = dyn_router + 8 * stage_row(D);                  // [rows here][kXSlot]
  __shared__ float score[kRowsPerBlock][E];
  __shared__ float biased[kRowsPerBlock][E];
  __shared__ int order[kRowsPerBlock][K];

  const int warp = static_cast<int>(threadIdx.x) >> 5, lane = threadIdx.x & 31;
  const long long r = static_cast<long long>(blockIdx.x) * kRowsPerBlock + warp;
  const int G = static_cast<int>(gridDim.y), g = static_cast<int>(blockIdx.y);
  if (G > 1 && rows > kRouterRows) return;  // a grid the score table cannot hold (the launch never gives one)
  const long long first = static_cast<long long>(blockIdx.x) * kRowsPerBlock;
  const int here = static_cast<int>(rows - first < kRowsPerBlock ? rows - first : kRowsPerBlock);
  // live: this warp has an active row; inactive rows get zeros (from block g = 0) and no scores.
  const bool live = r < rows && row_slot(statics, r) >= 0;
  if (r < rows && !live && g == 0)
    for (int k = lane; k < K; k += 32) {
      static_cast<int*>(ids)[r * K + k] = 0;
      static_cast<float*>(weights)[r * K + k] = 0.0f;
    }
  void* xs = x_rows + warp * kXSlot;
  // One row: warps 1-3 copy and multiply, warp 0 adds (router_products.cuh); the launch gives the products'
  // table after the x row. Else every thread copies, and each live warp runs its row's chains.
  constexpr bool kProductsPath = format_gate == WF_BF16 && D % 128 == 0;
  const bool products = kProductsPath && rows == 1;
  float* product_table = reinterpret_cast<float*>(x_rows + kXSlot);  // [32][product_row(D)], products only
  const int t0 = products ? static_cast<int>(threadIdx.x) - 32 : static_cast<int>(threadIdx.x);
  const int nt = products ? kProducers : kThreads;
  if constexpr (D % 8 == 0) {  // the block's rows by cp.async too (their own group, before the gate's)
    constexpr int kChunks = kXBytes / 16;
    const unsigned char* xr = static_cast<const unsigned char*>(x) + first * kXBytes;
    for (int t = t0; t >= 0 && t < here * kChunks; t += nt) {
      const int row = t / kChunks, c = t % kChunks;
      cp_async16(x_rows + row * kXSlot + 16 * c, xr + static_cast<long long>(row) * kXBytes + 16 * c);
    }
    cp_async_commit();  // waited for with the gate's first part (groups complete in order)
  } else {
    for (int t = threadIdx.x; t < here * D; t += kThreads)
      store<dtype_x>(x_rows + (t / D) * kXSlot, t % D, load<dtype_x>(x, first * D + t));
  }

  // G > 1: this block's four experts; G = 1: all of them, four at a time.
  for (int e0 = g * kExpertsPerBlock; e0 < E; e0 += G * kExpertsPerBlock) {
    __syncthreads();  // the previous experts' sums are done with the stage (and the plain x stores landed)
    if constexpr (format_gate == WF_BF16 && D % 8 == 0)
      if (t0 >= 0) stage_gate<D>(gate, e0, E, stage, t0, nt);
    const int e = e0 + (lane >> 3);
    float logit = 0.0f;
    if constexpr (kProductsPath) {
      if (products) {
        if (warp == 0) logit = add_products<D>(product_table, live);
        else form_products<dtype_x, D>(e0, E, x_rows, stage, product_table);
      }
    }
    if (!products) logit = expert_logit<format_gate, dtype_x, D>(gate, e0, E, xs, stage, live);
    if (live && e < E && (lane & 7) == 0) {
      // softplus(v) = max(v, 0) + log1p(exp(−|v|)), each step rounded to fp32 as on the CPU.
      const float ex = static_cast<float>(exp(-static_cast<double>(fabsf(logit))));
      const float sp = __fadd_rn(logit < 0.0f ? 0.0f : logit, static_cast<float>(log1p(static_cast<double>(ex))));
      const float s = __fsqrt_rn(sp);
      float b = __fadd_rn(s, weight_at<format_bias>(bias, e));
      if (b != b) b = -kInf;  // keeps the order total
      if (b == 0.0f) b = 0.0f;  // −0 as +0: they compare equal, so their keys must too
      score[warp][e] = s;
      biased[warp][e] = b;
    }
  }
  if (G > 1) {
    // Hand this block's experts over; the row group's last block gathers every expert and picks.
    const int lo = g * kExpertsPerBlock, hi = lo + kExpertsPerBlock < E ? lo + kExpertsPerBlock : E;
    __syncwarp();
    if (live)
      for (int e = lo + lane; e < hi; e += 32) {
        float* table = g_scores<E> + r * 2 * E;
        table[e] = score[warp][e];
        table[E + e] = biased[warp][e];
      }
    if (!last_block_of_row(&g_finished[blockIdx.x], static_cast<unsigned>(G))) return;
    if (live) {
      const float* table = g_scores<E> + r * 2 * E;
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) {  // every expert's pair in flight at once
        const int e = lane + 32 * j;
        if (e < E) {
          score[warp][e] = __ldcg(table + e);
          biased[warp][e] = __ldcg(table + E + e);
        }
      }
    }
  }
  if (!live) return;
  __syncwarp();  // the warp's scores (its own, or gathered) are in shared memory

  unsigned key[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) key[i] = lane + 32 * i < E ? order_key(biased[warp][lane + 32 * i]) : 0u;
  top_k<E, K>(key, order[warp]);

  // Lane k writes choice k (every lane forms the same total, in the CPU's order), so the divisions overlap.
  int* idr = static_cast<int*>(ids) + r * K;
  float* wr = static_cast<float*>(weights) + r * K;
  float total = 0.0f;
  for (int k = 0; k < K; ++k) total = __fadd_rn(total, score[warp][order[warp][k]]);
  for (int k = lane; k < K; k += 32) {
    float w = score[warp][order[warp][k]];
    if (normalize && K > 1) w = __fdiv_rn(w, __fadd_rn(total, 1e-20f));  // K = 1 keeps σ, as the official gate
    idr[k] = order[warp][k];
    wr[k] = __fmul_rn(w, scaling);
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
