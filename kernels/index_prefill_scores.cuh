// kernels/index_prefill_scores.cuh — index_select's entry scores for phases of many rows (prefill: a block
// a row), in the same bits as kernels/index_scores.cuh (the CPU's eight-way dot, the head terms added in
// head order), on the class path: the eight partial sums of a dot (class j sums the products of dims
// i ≡ j mod 8, in order) are independent chains, so four lanes split them by class pair (lane c: classes
// 2c and 2c + 1) and each lane keeps those classes of four entries' keys in registers. A query float read
// from shared memory then feeds four products (the register path's feeds one, and its four head groups
// trade terms through shared memory between two barriers every 64 entries); two shuffle steps, a
// reduce-scatter, form ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) of entry p in lane p, and every
// lane runs all heads in order, so an entry's score needs no exchange and a pass of 256 entries no barrier.
//
// The row's queries sit in class order (class_slot): pair c's Di/4 floats hold class 2c's steps, then
// class 2c + 1's, in 16-byte chunks XOR-swizzled so that the four pairs' lanes reading the same chunk
// index hit distinct banks.
#pragma once

#include "index_scores.cuh"

namespace dsv41k {
namespace index_prefill_scores {
constexpr int kPairs = 4;                         // lanes an entry group: class pairs {2c, 2c + 1}
constexpr int kGroupEntries = 4;                  // entries a lane group scores together
constexpr int kPassEntries = 256 / kPairs * kGroupEntries;  // entries a pass of 256 threads scores

// The class path's shapes: whole 16-byte chunks of steps (Di/8 steps a class, a multiple of 4) and keys
// that fit the register path's bounds (four entries' two classes: Di floats a lane).
__device__ constexpr bool class_path(long long heads, long long dim) {
  return dim % 32 == 0 && dim <= index_scores::kRegMaxDim && heads <= index_scores::kRegMaxHeads;
}

// 16-byte chunks a class pair owns (shapes off the class path: any), and pair c's swizzle of them:
// pairs whose chunks share banks differ in it.
template <int Di>
__device__ constexpr int pair_chunks() { return Di >= 16 ? Di / 16 : 1; }
template <int Di>
__device__ __forceinline__ int pair_swizzle(int c) {
  constexpr int X = pair_chunks<Di>();
  return (2 * (c * X / 8)) % X;
}

// Where dim i of a head's query sits in class order (an offset below Di).
template <int Di>
__device__ __forceinline__ int class_slot(int i) {
  const int j = i & 7, t = i >> 3, c = j >> 1;
  const int x = (j & 1) * (Di / 32) + (t >> 2);
  return c * (Di / 4) + ((x ^ pair_swizzle<Di>(c)) << 2) + (t & 3);
}

#ifndef DSV41_CONTRACT_SCAN
using topk_keys::Key;

// Keys of entries base .. base + c − 1 into chunk[0, c). q rows are QS floats apart, each in class order;
// every thread calls it; it ends with a barrier. Lane 4g + p of warp w takes entries 32w + 4g .. + 3 of
// each pass and classes 2p, 2p + 1 of them; lane p adds up entry p's score and writes its key.
template <int Hi, int Di, int QS, int DT, int MODE>
__device__ __forceinline__ void score_chunk(const char* keys, bool wide, const float* q, const float* w,
                                            const unsigned* kept_bits, long long B, int base, int c, Key* chunk) {
  static_assert(class_path(Hi, Di) && QS % 4 == 0, "the class path's shapes");
  constexpr int T = Di / 8;  // steps of a class
  const int pair = threadIdx.x & 3, group = threadIdx.x >> 2;
  const int swz = pair_swizzle<Di>(pair);
  for (int p0 = 0; p0 < c; p0 += kPassEntries) {
    const int first = p0 + kGroupEntries * group;
    float k[kGroupEntries][2][T];  // k[m][hc][t]: dim 2·pair + hc + 8t of entry first + m
    bool listed[kGroupEntries];
#pragma unroll
    for (int m = 0; m < kGroupEntries; ++m) {
      const int e = base + first + m;
      listed[m] = first + m < c && index_scores::entry_listed<MODE>(kept_bits, B, e);
      if (!listed[m]) {
#pragma unroll
        for (int t = 0; t < T; ++t) k[m][0][t] = 0.0f, k[m][1][t] = 0.0f;
        continue;
      }
      if (DT == DT_BF16 && wide) {
        const unsigned* row = reinterpret_cast<const unsigned*>(keys + static_cast<long long>(e) * Di * 2);
#pragma unroll
        for (int t = 0; t < T; ++t) {
          const unsigned v = __ldg(row + pair + 4 * t);  // dims 2·pair + 8t (low half) and the next
          k[m][0][t] = __uint_as_float(v << 16);
          k[m][1][t] = __uint_as_float(v & 0xffff0000u);
        }
      } else if (DT == DT_F32 && wide) {
        const float2* row = reinterpret_cast<const float2*>(keys + static_cast<long long>(e) * Di * 4);
#pragma unroll
        for (int t = 0; t < T; ++t) {
          const float2 v = __ldg(row + pair + 4 * t);
          k[m][0][t] = v.x, k[m][1][t] = v.y;
        }
      } else {
#pragma unroll
        for (int t = 0; t < T; ++t) {
          k[m][0][t] = index_scores::key_value<DT, Di>(keys, e, 2 * pair + 8 * t);
          k[m][1][t] = index_scores::key_value<DT, Di>(keys, e, 2 * pair + 1 + 8 * t);
        }
      }
    }
    // Lane p ends each head with entry p's dot and keeps entry p's score: the butterfly is a reduce-scatter.
    const bool odd = pair & 1, high = pair & 2;
    float score = 0.0f;
    // Two heads an iteration: the next head's products fill the shuffles' latency (6% faster than one at
    // prefill.n2048 with the full butterfly, docs/perf.md "pidx"; the scores' order is unchanged).
#pragma unroll 2
    for (int h = 0; h < Hi; ++h) {
      const float* qh = q + h * QS + pair * (Di / 4);
      float a[kGroupEntries][2];  // a[m][hc]: the CPU's partial sum 2·pair + hc of entry m
#pragma unroll
      for (int m = 0; m < kGroupEntries; ++m) a[m][0] = 0.0f, a[m][1] = 0.0f;
#pragma unroll
      for (int hc = 0; hc < 2; ++hc) {
#pragma unroll
        for (int tq = 0; tq < T / 4; ++tq) {
          const float4 qv = *reinterpret_cast<const float4*>(qh + (((hc * (T / 4) + tq) ^ swz) << 2));
          const float qs[4] = {qv.x, qv.y, qv.z, qv.w};
#pragma unroll
          for (int tr = 0; tr < 4; ++tr)
#pragma unroll
            for (int m = 0; m < kGroupEntries; ++m)
              a[m][hc] = __fadd_rn(a[m][hc], __fmul_rn(qs[tr], k[m][hc][4 * tq + tr]));
        }
      }
      float pp[kGroupEntries];  // a_2p + a_2p+1 of each entry
#pragma unroll
      for (int m = 0; m < kGroupEntries; ++m) pp[m] = __fadd_rn(a[m][0], a[m][1]);
      // Pairs 0 + 1 and 2 + 3 ((a0 + a1) + (a2 + a3), (a4 + a5) + (a6 + a7)): lanes of an even pair keep
      // entries 0 and 2, of an odd pair 1 and 3, and trade the others.
      const float l0 = __fadd_rn(odd ? pp[1] : pp[0], __shfl_xor_sync(0xffffffffu, odd ? pp[0] : pp[1], 1));
      const float l2 = __fadd_rn(odd ? pp[3] : pp[2], __shfl_xor_sync(0xffffffffu, odd ? pp[2] : pp[3], 1));
      // The two halves (IEEE addition commutes): the low lanes keep entry 0 or 1, the high 2 or 3.
      const float d = __fadd_rn(high ? l2 : l0, __shfl_xor_sync(0xffffffffu, high ? l0 : l2, 2));
      const float relu = 0.0f < d ? d : 0.0f;  // std::max(0.0f, dot): NaN gives 0
      score = __fadd_rn(score, __fmul_rn(w[h], relu));
    }
    // Lane p writes entry p of its group (a select, not a dynamic index: the array stays in registers).
    const bool mine_listed = pair == 0 ? listed[0] : pair == 1 ? listed[1] : pair == 2 ? listed[2] : listed[3];
    if (first + pair < c) chunk[first + pair] = mine_listed ? topk_keys::entry_key(score, base + first + pair) : 0ull;
  }
  __syncthreads();
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace index_prefill_scores
}  // namespace dsv41k
