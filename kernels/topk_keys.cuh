// kernels/topk_keys.cuh — block-wide top-k over unique 64-bit keys (an ordered fp32 score above ~index,
// so "higher key" is "higher score, then lower index"): the key encoding, a stable block compaction and
// an 8-bit radix select that keeps the best `count` keys in place and in order. index_select's per-block
// and merge passes share it; key 0 marks an entry that is never chosen.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace topk_keys {
constexpr int kTopkShInts = 256 + 64;  // shared ints keep_best needs: radix histogram + scan scratch

#ifndef DSV41_CONTRACT_SCAN
typedef unsigned long long Key;
constexpr unsigned kNegInfOrdered = 0x007fffffu;  // ordered_key(−∞)
constexpr unsigned kPosInfOrdered = 0xff800000u;  // ordered_key(+∞)

__device__ __forceinline__ unsigned ordered_key(float v) {
  if (v == 0.0f) v = 0.0f;  // −0 and +0 tie, as in the CPU's comparisons
  const unsigned b = __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ Key make_key(unsigned ordered, unsigned index) {
  return (static_cast<Key>(ordered) << 32) | static_cast<Key>(~index);
}
// An entry's key; 0 (never chosen) for −∞ and NaN.
__device__ __forceinline__ Key entry_key(float score, int index) {
  if (!(score > -__int_as_float(0x7f800000))) return 0ull;
  return make_key(ordered_key(score), static_cast<unsigned>(index));
}
// The ordered score of an entry key (0 reads as −∞).
__device__ __forceinline__ unsigned key_ordered(Key k) {
  return k == 0ull ? kNegInfOrdered : static_cast<unsigned>(k >> 32);
}
__device__ __forceinline__ int key_index(Key k) { return static_cast<int>(~static_cast<unsigned>(k)); }

// Exclusive prefix of a 0/1 flag over the block (thread order); `total` gets the block's count.
// `sh` holds 32 ints.
__device__ __forceinline__ int block_flag_scan(bool flag, int* sh, int& total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const unsigned ballot = __ballot_sync(0xffffffffu, flag);
  __syncthreads();  // sh may still be read by a previous scan
  if (lane == 0) sh[warp] = __popc(ballot);
  __syncthreads();
  int before = 0;
  total = 0;
  for (int w = 0; w < warps; ++w) {
    const int c = sh[w];
    if (w < warp) before += c;
    total += c;
  }
  return before + __popc(ballot & ((1u << lane) - 1u));
}

__device__ __forceinline__ unsigned warp_umax(unsigned v) {
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned u = __shfl_xor_sync(0xffffffffu, v, o);
    v = v < u ? u : v;
  }
  return v;
}
// Block-wide maximum; every thread gets it. `sh` holds 32 ints.
__device__ __forceinline__ unsigned block_umax(unsigned v, int* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_umax(v);
  __syncthreads();
  if (lane == 0) sh[warp] = static_cast<int>(v);
  __syncthreads();
  unsigned m = 0;
  for (int w = 0; w < warps; ++w) {
    const unsigned u = static_cast<unsigned>(sh[w]);
    m = m < u ? u : m;
  }
  return m;
}

// Keeps the best `count` of keys[0, total) that are not 0 (the keys other than 0 are distinct), in
// place and in their order, at keys[0 ..); returns how many remain. `sh` holds kTopkShInts ints. Every
// thread must call it with the same arguments; it ends with a barrier.
__device__ __forceinline__ int keep_best(Key* keys, int total, int count, int* sh) {
  if (count <= 0) return 0;
  int* hist = sh;
  int* scratch = sh + 256;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  Key threshold = 0ull;  // keep the keys ≥ threshold (and not 0)
  if (total > count) {
    // The bits every key other than 0 shares (the AND and OR of them agree there) need no pass: the
    // search starts at the highest bit where two keys differ (scores of one binade share 9 or more).
    Key any = 0ull, all = ~0ull;
    int nonzero = 0;
    for (int i = threadIdx.x; i < total; i += blockDim.x) {
      const Key k = keys[i];
      if (k != 0ull) any |= k, all &= k, ++nonzero;
    }
    for (int o = 16; o > 0; o >>= 1) {
      any |= __shfl_xor_sync(0xffffffffu, any, o);
      all &= __shfl_xor_sync(0xffffffffu, all, o);
      nonzero += __shfl_xor_sync(0xffffffffu, nonzero, o);
    }
    __syncthreads();  // scratch may still be read by a previous call's last scan
    if (lane == 0) {
      scratch[5 * warp + 0] = static_cast<int>(any), scratch[5 * warp + 1] = static_cast<int>(any >> 32);
      scratch[5 * warp + 2] = static_cast<int>(all), scratch[5 * warp + 3] = static_cast<int>(all >> 32);
      scratch[5 * warp + 4] = nonzero;
    }
    __syncthreads();
    any = 0ull, all = ~0ull, nonzero = 0;
    for (int v = 0; v < static_cast<int>(blockDim.x >> 5); ++v) {
      any |= static_cast<Key>(static_cast<unsigned>(scratch[5 * v])) |
             static_cast<Key>(static_cast<unsigned>(scratch[5 * v + 1])) << 32;
      all &= static_cast<Key>(static_cast<unsigned>(scratch[5 * v + 2])) |
             static_cast<Key>(static_cast<unsigned>(scratch[5 * v + 3])) << 32;
      nonzero += scratch[5 * v + 4];
    }
    __syncthreads();  // scratch is rewritten below
    if (nonzero <= count) {
      threshold = 1ull;  // every key other than 0 is kept
    } else {
      // The count-th largest key, 8 bits at a time from the highest differing bit down. Bits at and
      // above `fixed` are decided (prefix); every key matching them is a candidate.
      int fixed = 64 - __clzll(static_cast<long long>(any ^ all));  // ≥ 1: the keys are distinct
      Key prefix = fixed >= 64 ? 0ull : (all & (~0ull << fixed));
      int need = count;  // #{candidates with a higher remainder} < need ≤ #{candidates}
      while (fixed > 0) {
        const int shift = fixed > 8 ? fixed - 8 : 0;  // the digit: bits shift .. shift + 7
        const Key mask = fixed >= 64 ? 0ull : (~0ull << fixed);
        for (int i = threadIdx.x; i < 256; i += blockDim.x) hist[i] = 0;
        __syncthreads();
        // Warp-aggregated: keys that share a bin add once per warp.
        for (int base = 0; base < total; base += blockDim.x) {
          const int i = base + threadIdx.x;
          const Key k = i < total ? keys[i] : 0ull;
          const int bin = k != 0ull && (k & mask) == prefix ? static_cast<int>((k >> shift) & 255ull) : -1;
          const unsigned peers = __match_any_sync(0xffffffffu, bin);
          if (bin >= 0 && lane == __ffs(peers) - 1) atomicAdd(&hist[bin], __popc(peers));
        }
        __syncthreads();
        // Thread t < 256 owns bin t: its suffix sum over bins ≥ t.
        const int t = threadIdx.x;
        const int h = t < 256 ? hist[t] : 0;
        int x = h;
        for (int o = 1; o < 32; o <<= 1) {
          const int v = __shfl_down_sync(0xffffffffu, x, o);
          if (lane + o < 32) x += v;
        }
        if (lane == 0) scratch[warp] = x;
        __syncthreads();
        int suffix = x;
        for (int w = warp + 1; w < 8; ++w) suffix += scratch[w];
        if (t < 256 && suffix >= need && suffix - h < need) {
          scratch[32] = t;
          scratch[33] = need - (suffix - h);
          scratch[34] = h;
        }
        __syncthreads();
        // Bits of the digit below `fixed` join the prefix (those above are the prefix's own already).
        prefix |= static_cast<Key>(scratch[32]) << shift;
        need = scratch[33];
        fixed = shift;
        // Every candidate of the bin is kept: the lower bits cannot change the choice (with distinct
        // scores this ends after one or two passes).
        if (need == scratch[34]) break;
      }
      threshold = prefix;
    }
  }
  int kept = 0;
  for (int base = 0; base < total; base += blockDim.x) {
    const int i = base + threadIdx.x;
    const Key k = i < total ? keys[i] : 0ull;
    const bool keep = k != 0ull && k >= threshold;
    int tile = 0;
    const int pos = kept + block_flag_scan(keep, scratch, tile);  // pos ≤ i: in place is safe
    if (keep) keys[pos] = k;
    kept += tile;
  }
  __syncthreads();
  return kept;
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace topk_keys
}  // namespace dsv41k
