// kernels/index_scores.cuh — index_select's entry scores I[s] = Σ_h w_h·max(0, iq_h·k_s) in the CPU's bits
// (runtime/cpu/ops_indexer.cpp: each dot the eight-way dot of runtime/cpu dot(), the head terms added in
// head order), written as top-k keys (kernels/topk_keys.cuh) into a chunk of shared memory.
//
// Two ways, the same bits. The register path (index heads of at most kRegMaxDim dims, a multiple of 8,
// at most kRegMaxHeads heads: the release's 128 x 32 and the tiny's 32 x 4) keeps a thread's whole key in
// registers as fp32 and runs each head's eight partial sums in one thread: a pass takes kPassEntries
// entries, warp w the head group w mod kHeadGroups of 32 of them, so a warp's lanes read the same query
// floats (a shared-memory broadcast, 16 bytes at a time) and the only other work is the two fp32
// operations of each product (about 1.55x fewer instructions than the lane-split path, counted from the
// code: its lanes shuffle every head's partial sums). Each thread leaves its heads' terms in shared
// memory; one thread per entry then adds them in head order. Other shapes (no fixture has one) take the
// lane-split path, the kernel's earlier scoring: lane 8·e' + k holds partial sum k of entry e', a
// butterfly forms the eight-way sum. Phases of many rows (prefill) score on a third way, the class
// path of kernels/index_prefill_scores.cuh.
#pragma once

#include "cache_rows.cuh"
#include "kernel_abi.cuh"
#include "topk_keys.cuh"

namespace dsv41k {
namespace index_scores {
constexpr int kHeadGroups = 4;                   // threads per entry on the register path
constexpr int kPassEntries = 256 / kHeadGroups;  // entries a pass of 256 threads scores
constexpr int kRegMaxDim = 128, kRegMaxHeads = 32;

__device__ constexpr bool register_path(long long heads, long long dim) {
  return dim % 8 == 0 && dim <= kRegMaxDim && heads <= kRegMaxHeads;
}
// Shared floats the register path's head terms need.
__device__ constexpr long long term_floats(long long heads, long long dim) {
  return register_path(heads, dim) ? heads * kPassEntries : 1;
}

#ifndef DSV41_CONTRACT_SCAN
using topk_keys::Key;

// Value i of entry e's index key: an act row, or a packed FP4 row (the official cache format,
// kernels/cache_rows.cuh) dequantized as the CPU's unpack.
template <int DT, int Di>
__device__ __forceinline__ float key_value(const char* keys, long long e, long long i) {
  if constexpr (DT == DT_PACKED) {
    return cache_rows::value<CACHE_INDEX_KEY>(keys + e * cache_rows::row_bytes<CACHE_INDEX_KEY>(Di), i, Di);
  } else {
    return load<DT>(keys, e * Di + i);
  }
}

// Entry e's whole key into k (fp32, exact): 16-byte loads of act rows, 4-byte loads of packed rows of
// whole words, when `wide` (the cache's base aligned so); element loads otherwise.
template <int DT, int Di>
__device__ __forceinline__ void load_key(const char* keys, long long e, bool wide, float (&k)[Di]) {
  if constexpr (DT == DT_BF16) {
    if (wide) {
      const uint4* row = reinterpret_cast<const uint4*>(keys + e * Di * 2);
#pragma unroll
      for (int c = 0; c < Di / 8; ++c) {
        const uint4 v = __ldg(row + c);
        const unsigned wv[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          k[8 * c + 2 * t] = __uint_as_float(wv[t] << 16);
          k[8 * c + 2 * t + 1] = __uint_as_float(wv[t] & 0xffff0000u);
        }
      }
      return;
    }
  } else if constexpr (DT == DT_F32) {
    if (wide) {
      const float4* row = reinterpret_cast<const float4*>(keys + e * Di * 4);
#pragma unroll
      for (int c = 0; c < Di / 4; ++c) {
        const float4 v = __ldg(row + c);
        k[4 * c] = v.x, k[4 * c + 1] = v.y, k[4 * c + 2] = v.z, k[4 * c + 3] = v.w;
      }
      return;
    }
  } else if constexpr (DT == DT_PACKED) {
    static_assert(Di % 32 == 0, "packed index keys are whole groups of 32");
    // Rows of Di/2 + Di/32 bytes are whole words only when Di is a multiple of 128 (the tiny's 17-byte
    // rows of 32 values are not: element loads).
    constexpr bool kWords = cache_rows::row_bytes<CACHE_INDEX_KEY>(Di) % 4 == 0;
    if (kWords && wide) {  // codes: Di/2 bytes (low nibble first), then one UE8M0 scale a group of 32
      const unsigned char* row =
          reinterpret_cast<const unsigned char*>(keys) + e * cache_rows::row_bytes<CACHE_INDEX_KEY>(Di);
      const unsigned* words = reinterpret_cast<const unsigned*>(row);
      unsigned scales = 0;
#pragma unroll
      for (int g = 0; g < Di / 32; ++g) {
        if (g % 4 == 0) scales = __ldg(words + Di / 8 + g / 4);
        const float scale = e8m0_to_float((scales >> (8 * (g % 4))) & 255u);
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const unsigned wv = __ldg(words + 4 * g + c);
#pragma unroll
          for (int t = 0; t < 8; ++t) k[32 * g + 8 * c + t] = __fmul_rn(e2m1_to_float((wv >> (4 * t)) & 15u), scale);
        }
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < Di; ++i) k[i] = key_value<DT, Di>(keys, e, i);
}

// Whether entry e is scored: in mode 2 only entries of listed candidate blocks (the others read key 0).
template <int MODE>
__device__ __forceinline__ bool entry_listed(const unsigned* kept_bits, long long B, int e) {
  if constexpr (MODE == 2) {
    const int b = static_cast<int>(e / B);
    return (kept_bits[b >> 5] >> (b & 31)) & 1u;
  } else {
    return true;
  }
}

// The register path: keys of entries base .. base + c − 1 into chunk[0, c). q rows are QS floats apart
// (QS a multiple of 4, q 16-byte aligned); `terms` holds term_floats(Hi, Di) floats. Every thread calls
// it; it ends with a barrier.
template <int Hi, int Di, int QS, int DT, int MODE>
__device__ __forceinline__ void score_chunk_registers(const char* keys, bool wide, const float* q, const float* w,
                                                      const unsigned* kept_bits, long long B, int base, int c,
                                                      Key* chunk, float* terms) {
  static_assert(register_path(Hi, Di) && QS % 4 == 0, "the register path's shapes");
  constexpr int HPT = (Hi + kHeadGroups - 1) / kHeadGroups;  // heads a thread takes
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int hg = warp % kHeadGroups, el = (warp / kHeadGroups) * 32 + lane;
  for (int p0 = 0; p0 < c; p0 += kPassEntries) {
    const int s = p0 + el;
    if (s < c && entry_listed<MODE>(kept_bits, B, base + s)) {
      float k[Di];
      load_key<DT, Di>(keys, base + s, wide, k);
#pragma unroll 1
      for (int hh = 0; hh < HPT; ++hh) {
        const int h = hg * HPT + hh;
        if (h >= Hi) break;
        const float* qh = q + h * QS;
        float a[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};  // a[j]: the CPU's partial sum j
#pragma unroll
        for (int i = 0; i < Di; i += 4) {
          const float4 qv = *reinterpret_cast<const float4*>(qh + i);
          a[(i & 7) + 0] = __fadd_rn(a[(i & 7) + 0], __fmul_rn(qv.x, k[i + 0]));
          a[(i & 7) + 1] = __fadd_rn(a[(i & 7) + 1], __fmul_rn(qv.y, k[i + 1]));
          a[(i & 7) + 2] = __fadd_rn(a[(i & 7) + 2], __fmul_rn(qv.z, k[i + 2]));
          a[(i & 7) + 3] = __fadd_rn(a[(i & 7) + 3], __fmul_rn(qv.w, k[i + 3]));
        }
        const float dot = __fadd_rn(__fadd_rn(__fadd_rn(a[0], a[1]), __fadd_rn(a[2], a[3])),
                                    __fadd_rn(__fadd_rn(a[4], a[5]), __fadd_rn(a[6], a[7])));
        const float relu = 0.0f < dot ? dot : 0.0f;  // std::max(0.0f, dot): NaN gives 0
        terms[h * kPassEntries + el] = __fmul_rn(w[h], relu);
      }
    }
    __syncthreads();
    if (threadIdx.x < kPassEntries && p0 + static_cast<int>(threadIdx.x) < c) {
      const int t = threadIdx.x, e = base + p0 + t;
      Key key = 0ull;
      if (entry_listed<MODE>(kept_bits, B, e)) {
        float score = 0.0f;
#pragma unroll
        for (int h = 0; h < Hi; ++h) score = __fadd_rn(score, terms[h * kPassEntries + t]);
        key = topk_keys::entry_key(score, e);
      }
      chunk[p0 + t] = key;
    }
    __syncthreads();  // terms are rewritten by the next pass
  }
}

// The lane-split path: keys of entries base .. base + c − 1 into chunk[0, c). Warp w takes entries
// 4w .. 4w + 3, then 4(w + warps) ..; lane 8·e' + k sums the products of columns ≡ k (mod 8) of entry e'
// for one head at a time (the heads' dots are independent chains), the butterfly forms the CPU's
// eight-way sum in all eight lanes, and the head terms add in head order. q rows are QS floats apart.
template <int Hi, int Di, int QS, int DT, int MODE>
__device__ __forceinline__ void score_chunk_lanes(const char* keys, const float* q, const float* w,
                                                  const unsigned* kept_bits, long long B, int base, int c, Key* chunk) {
  constexpr int NJ = Di / 8;  // full chunks of 8 of one dot
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int sub = lane >> 3, k8 = lane & 7;
  for (int s0 = 4 * warp; s0 < c; s0 += 4 * warps) {  // warp-uniform: every lane reaches the shuffles
    const int s = s0 + sub;
    const bool live = s < c;
    const int e = base + (live ? s : s0);
    const bool listed = entry_listed<MODE>(kept_bits, B, e);
    float kreg[NJ > 0 ? NJ : 1];
#pragma unroll
    for (int j = 0; j < NJ; ++j) kreg[j] = listed ? key_value<DT, Di>(keys, e, k8 + 8 * j) : 0.0f;
    float score = 0.0f;
#pragma unroll 4
    for (int h = 0; h < Hi; ++h) {
      const float* qh = q + h * QS;
      float acc = 0.0f;
#pragma unroll
      for (int j = 0; j < NJ; ++j) acc = __fadd_rn(acc, __fmul_rn(qh[k8 + 8 * j], kreg[j]));
      acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 1));
      acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 2));
      acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 4));
      if constexpr (Di % 8 != 0) {
        float tail = 0.0f;
        for (int i = NJ * 8; i < Di; ++i)
          tail = __fadd_rn(tail, __fmul_rn(qh[i], listed ? key_value<DT, Di>(keys, e, i) : 0.0f));
        acc = __fadd_rn(acc, tail);
      }
      const float relu = 0.0f < acc ? acc : 0.0f;  // std::max(0.0f, dot): NaN gives 0
      score = __fadd_rn(score, __fmul_rn(w[h], relu));
    }
    if (k8 == 0 && live) chunk[s] = listed ? topk_keys::entry_key(score, e) : 0ull;
  }
  __syncthreads();
}

// Keys of entries base .. base + c − 1 into chunk[0, c) by the path the shape takes. Every thread calls
// it; it ends with a barrier.
template <int Hi, int Di, int QS, int DT, int MODE>
__device__ __forceinline__ void score_chunk(const char* keys, bool wide, const float* q, const float* w,
                                            const unsigned* kept_bits, long long B, int base, int c, Key* chunk,
                                            float* terms) {
  if constexpr (register_path(Hi, Di))
    score_chunk_registers<Hi, Di, QS, DT, MODE>(keys, wide, q, w, kept_bits, B, base, c, chunk, terms);
  else
    score_chunk_lanes<Hi, Di, QS, DT, MODE>(keys, q, w, kept_bits, B, base, c, chunk);
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace index_scores
}  // namespace dsv41k
