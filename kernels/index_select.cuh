// kernels/index_select.cuh — the indexer's top-k (docs/ops.md "index_select"): scores
// I[s] = Σ_h w_h·max(0, iq_h·k_s) over the visible index entries, optional candidate blocks (mode 1
// writes them, mode 2 masks by them), then the best min(K, n) entries (higher score, then lower index;
// NaN counts as −∞; −∞ entries dropped) in ascending index order, padded with −1. Mirrors
// runtime/cpu/ops_indexer.cpp: each dot is the CPU's eight-way dot and the head sum runs in head order,
// so the scores (and the integer outputs) are the CPU's bit for bit.
//
// Launch (common/kernel_launch_attention.cpp): grid (R, 1, 1), one block of 256 threads per row.
// Shared memory does not grow with the context: the visible entries are streamed in chunks of at most
// kChunk entries, and running lists keep the best so far.
// Dynamic shared memory (64-bit keys): 8·(K + kChunk) (the entry list and one chunk), plus in mode 1
// 8·(CB + BPC) (the block list and one chunk's blocks, BPC = kChunk / B when B ≤ kChunk, else 1), plus
// in mode 2 4·ceil(nbC / 32) (a bitmap of the listed blocks, nbC = ceil(C / B), C = index_cache_rows,
// the capacity). Static shared memory: 4·Hi·(ceil32(Di) + 8) (the row's queries) + 4·Hi + 4·320 bytes.
//
// Each candidate is a 64-bit key: the score as an ordered integer (−0 as +0) in the upper half and
// ~index in the lower half, so "higher key" is exactly "higher score, then lower index" and keys are
// unique; key 0 marks an entry that is never chosen (score −∞ or NaN, or a block not listed in mode 2).
// Scores: warp w takes entries w, w+8, ... of a chunk; lane = 8·h' + k computes partial sum k of head
// 4g + h', and lane 0 writes the entry's key behind the running list. Merge: an 8-pass radix select
// (256-bin histograms) finds the K-th largest key of list ∪ chunk, and a stable block scan compacts the
// keys at or above it (and not 0) to the front. The list stays in ascending index order, since the
// chunk's entries follow the list's and every compaction is stable. Mode 1 also folds each chunk's
// entries into block keys (max ordered score per block; the newest block scores +∞) and merges them
// into a running list of CB blocks the same way; a chunk never holds part of two blocks' entries
// unless it holds them whole (chunks of ⌊kChunk / B⌋·B entries, or when B > kChunk, chunks that stop
// at block boundaries, the block's maximum carried over).
#pragma once

#include "cache_rows.cuh"
#include "kernel_abi.cuh"

namespace dsv41k {
namespace index_select_detail {
constexpr int kThreads = 256;
constexpr int kChunk = 4096;    // entries scored per pass
constexpr int kMaxList = 4096;  // the most topk and cand_blocks (the running lists live in shared memory)
constexpr int kShInts = 256 + 64;  // radix histogram + scan scratch
// Query rows in shared memory are padded to ≡ 8 (mod 32) floats: the four heads a warp reads at once
// fall in distinct banks.
__device__ constexpr long long q_stride(long long di) { return (di + 31) / 32 * 32 + 8; }
__device__ constexpr long long static_shared_bytes(long long hi, long long di) {
  return 4 * hi * q_stride(di) + 4 * hi + 4 * kShInts;
}
// Entries per chunk and the blocks one chunk holds (mode 1).
__device__ constexpr long long chunk_entries(long long mode, long long block) {
  return mode == 1 && block <= kChunk ? kChunk / block * block : kChunk;
}
__device__ constexpr long long chunk_blocks(long long mode, long long block) {
  return mode != 1 ? 0 : block <= kChunk ? kChunk / block : 1;
}
// Dynamic shared memory of a capacity of `entries` index rows.
__device__ constexpr long long dynamic_shared_bytes(long long entries, long long topk, long long mode,
                                                    long long cand_blocks, long long block) {
  const long long nb = mode == 2 ? (entries + block - 1) / block : 0;
  return 8 * (topk + kChunk) + (mode == 1 ? 8 * (cand_blocks + chunk_blocks(mode, block)) : 0) +
         (mode == 2 ? 4 * ((nb + 31) / 32) : 0);
}

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
// place and in their order, at keys[0 ..); returns how many remain. `sh` holds kShInts ints. Every
// thread must call it with the same arguments; it ends with a barrier.
__device__ __forceinline__ int keep_best(Key* keys, int total, int count, int* sh) {
  if (count <= 0) return 0;
  int* hist = sh;
  int* scratch = sh + 256;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  Key threshold = 0ull;  // keep the keys ≥ threshold (and not 0)
  if (total > count) {
    // The count-th largest key, 8 bits at a time from the top.
    Key prefix = 0ull;
    int need = count;  // #{keys matching prefix with a higher remainder} < need ≤ #{keys matching prefix}
    for (int shift = 56; shift >= 0; shift -= 8) {
      const Key mask = shift == 56 ? 0ull : (~0ull << (shift + 8));
      for (int i = threadIdx.x; i < 256; i += blockDim.x) hist[i] = 0;
      __syncthreads();
      // Warp-aggregated: keys that share a bin (common in the upper bytes) add once per warp.
      for (int base = 0; base < total; base += blockDim.x) {
        const int i = base + threadIdx.x;
        const Key k = i < total ? keys[i] : 0ull;
        const int bin = i < total && (k & mask) == prefix ? static_cast<int>((k >> shift) & 255ull) : -1;
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
      }
      __syncthreads();
      prefix |= static_cast<Key>(scratch[32]) << shift;
      need = scratch[33];
    }
    threshold = prefix;
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
}  // namespace index_select_detail

namespace index_select_detail {
#ifndef DSV41_CONTRACT_SCAN
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
#endif  // DSV41_CONTRACT_SCAN
}  // namespace index_select_detail

namespace entry {

template <long long index_heads, long long index_head_dim, long long ratio, long long topk, long long mode,
          long long cand_blocks, long long cand_block_size, int dtype_index_cache>
__device__ __forceinline__ void index_select(Rows rows, Statics statics, Errors errors, Scratch iq, Scratch iw,
                                             State index_cache, Int index_cache_rows, Scratch candidates,
                                             Scratch out) {
#ifndef DSV41_CONTRACT_SCAN
  using namespace index_select_detail;
  static_assert(index_heads >= 1 && index_heads <= 1024, "index_heads out of range");
  static_assert(index_head_dim >= 1 && index_head_dim <= 1024, "index_head_dim out of range");
  static_assert(static_shared_bytes(index_heads, index_head_dim) <= 40 * 1024,
                "the row's queries must fit static shared memory");
  static_assert(ratio >= 1 && ratio <= (1 << 16), "ratio out of range");
  static_assert(topk >= 0 && topk <= kMaxList, "topk out of range (the running list lives in shared memory)");
  static_assert(mode >= 0 && mode <= 2, "mode is 0, 1 or 2");
  static_assert(mode == 0 || (cand_blocks >= 1 && cand_blocks <= kMaxList && cand_block_size >= 1 &&
                              cand_block_size <= (1 << 24)),
                "candidate constants out of range (the block list lives in shared memory)");
  static_assert(dtype_index_cache == DT_F32 || dtype_index_cache == DT_BF16 ||
                    (dtype_index_cache == DT_PACKED && index_head_dim % 32 == 0),
                "index_cache is an act buffer, or packed rows of whole groups of 32");
  constexpr int Hi = static_cast<int>(index_heads), Di = static_cast<int>(index_head_dim);
  constexpr int QS = static_cast<int>(q_stride(index_head_dim));
  constexpr int NJ = Di / 8;  // full chunks of 8 of one dot
  constexpr int K = static_cast<int>(topk);
  constexpr int CB = mode == 0 ? 1 : static_cast<int>(cand_blocks);
  constexpr long long B = mode == 0 ? 1 : cand_block_size;
  constexpr int CE = static_cast<int>(chunk_entries(mode, B));  // entries per chunk (B ≤ kChunk: whole blocks)
  constexpr int BPC = static_cast<int>(chunk_blocks(mode, B));
  __shared__ float q[Hi * QS];
  __shared__ float w[Hi];
  __shared__ int sh[kShInts];
  extern __shared__ Key dyn[];
  Key* elist = dyn;                                      // [K + kChunk]: the entry list, then a chunk
  Key* blist = dyn + (K + kChunk);                       // [CB + BPC] (mode 1): the block list, then a chunk's
  unsigned* kept_bits = reinterpret_cast<unsigned*>(dyn + (K + kChunk) + (mode == 1 ? CB + BPC : 0));  // mode 2

  const long long r = blockIdx.x;
  if (r >= rows) return;
  int* outr = static_cast<int*>(out) + r * K;
  int* candr = mode != 0 ? static_cast<int*>(candidates) + r * CB : nullptr;
  const int slot = row_slot(statics, r);
  if (slot < 0) {
    for (int i = threadIdx.x; i < K; i += blockDim.x) outr[i] = 0;
    if constexpr (mode == 1)
      for (int i = threadIdx.x; i < CB; i += blockDim.x) candr[i] = 0;
    return;
  }
  const long long p = row_position(statics, r);
  const long long n_long = p < 0 ? -1 : (p + 1) / ratio;
  if (n_long < 0 || n_long > index_cache_rows || !slot_in(slot, index_cache)) {
    if (threadIdx.x == 0) report_error(errors, n_long > index_cache_rows ? ERR_CAPACITY : ERR_STATICS);
    for (int i = threadIdx.x; i < K; i += blockDim.x) outr[i] = -1;
    if constexpr (mode == 1)
      for (int i = threadIdx.x; i < CB; i += blockDim.x) candr[i] = -1;
    return;
  }
  const int n = static_cast<int>(n_long);
  const int nb = mode == 0 ? 0 : static_cast<int>((n_long + B - 1) / B);

  // The row's queries and head weights w_h = iw_h·Di^−½·Hi^−½ (fp32, in that order).
  const float* iqr = static_cast<const float*>(iq) + r * Hi * Di;
  for (int i = threadIdx.x; i < Hi * Di; i += blockDim.x) q[(i / Di) * QS + i % Di] = iqr[i];
  if (threadIdx.x < 32) {
    const float factor_dim = static_cast<float>(1.0 / sqrt(static_cast<double>(Di)));
    const float factor_heads = static_cast<float>(1.0 / sqrt(static_cast<double>(Hi)));
    for (int h = threadIdx.x; h < Hi; h += 32)
      w[h] = __fmul_rn(__fmul_rn(static_cast<const float*>(iw)[r * Hi + h], factor_dim), factor_heads);
  }
  if constexpr (mode == 2) {
    // The listed blocks (−1 ignored, other negatives refused, blocks beyond the visible ones ignored,
    // as the CPU does).
    const int words = (nb + 31) / 32;
    for (int i = threadIdx.x; i < words; i += blockDim.x) kept_bits[i] = 0u;
    __syncthreads();
    for (int c = threadIdx.x; c < CB; c += blockDim.x) {
      const int b = candr[c];
      if (b < -1) report_error(errors, ERR_SELECTION);
      else if (b >= 0 && b < nb) atomicOr(&kept_bits[b >> 5], 1u << (b & 31));
    }
  }
  __syncthreads();

  const char* keys = slot_base(index_cache, slot);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int hsub = lane >> 3, k8 = lane & 7;
  int m_entries = 0, m_blocks = 0;  // lengths of the running lists
  unsigned run_block = kNegInfOrdered;  // B > kChunk: the ordered maximum of the current block so far
  const bool score_any = K > 0 || mode == 1;
  for (int base = 0; score_any && base < n;) {
    int c = n - base < CE ? n - base : CE;
    if constexpr (mode == 1 && B > kChunk) {
      const long long block_end = (base / B + 1) * B;  // a chunk never crosses a block boundary
      if (block_end - base < c) c = static_cast<int>(block_end - base);
    }
    Key* chunk = elist + m_entries;

    // Scores of entries base .. base+c−1, as keys.
    for (int s = warp; s < c; s += warps) {
      const int e = base + s;
      if constexpr (mode == 2) {
        const int b = static_cast<int>(e / B);
        if (!((kept_bits[b >> 5] >> (b & 31)) & 1u)) {  // warp-uniform
          if (lane == 0) chunk[s] = 0ull;
          continue;
        }
      }
      float kreg[NJ > 0 ? NJ : 1];
#pragma unroll
      for (int j = 0; j < NJ; ++j) kreg[j] = key_value<dtype_index_cache, Di>(keys, e, k8 + 8 * j);
      float acc_score = 0.0f;
      for (int g = 0; g < (Hi + 3) / 4; ++g) {
        const int h = 4 * g + hsub;
        const float* qh = q + (h < Hi ? h : 0) * QS;
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < NJ; ++j) acc = __fadd_rn(acc, __fmul_rn(qh[k8 + 8 * j], kreg[j]));
        acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 1));
        acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 2));
        acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 4));
        if constexpr (Di % 8 != 0) {
          float tail = 0.0f;
          for (int i = NJ * 8; i < Di; ++i)
            tail = __fadd_rn(tail, __fmul_rn(qh[i], key_value<dtype_index_cache, Di>(keys, e, i)));
          acc = __fadd_rn(acc, tail);
        }
        const float relu = 0.0f < acc ? acc : 0.0f;  // std::max(0.0f, dot): NaN gives 0
        const float term = h < Hi ? __fmul_rn(w[h], relu) : 0.0f;
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const float v = __shfl_sync(0xffffffffu, term, 8 * t);
          if (4 * g + t < Hi) acc_score = __fadd_rn(acc_score, v);
        }
      }
      if (lane == 0) chunk[s] = entry_key(acc_score, e);
    }
    __syncthreads();

    if constexpr (mode == 1) {
      // Block keys of this chunk behind the block list: the maximum ordered score of each block's
      // visible entries; the newest block (nb − 1) scores +∞.
      int gc = 0;
      Key* bchunk = blist + m_blocks;
      if constexpr (B <= kChunk) {
        const int b0 = static_cast<int>(base / B);
        gc = static_cast<int>((c + B - 1) / B);
        if constexpr (B <= 32) {
          for (int j = threadIdx.x; j < gc; j += blockDim.x) {
            const int lo = static_cast<int>(j * B), hi = lo + B < c ? static_cast<int>(lo + B) : c;
            unsigned u = kNegInfOrdered;
            for (int s = lo; s < hi; ++s) {
              const unsigned v = key_ordered(chunk[s]);
              u = u < v ? v : u;
            }
            const int b = b0 + j;
            bchunk[j] = make_key(b == nb - 1 ? kPosInfOrdered : u, static_cast<unsigned>(b));
          }
        } else {
          for (int j = warp; j < gc; j += warps) {
            const int lo = static_cast<int>(j * B), hi = lo + B < c ? static_cast<int>(lo + B) : c;
            unsigned u = kNegInfOrdered;
            for (int s = lo + lane; s < hi; s += 32) {
              const unsigned v = key_ordered(chunk[s]);
              u = u < v ? v : u;
            }
            u = warp_umax(u);
            const int b = b0 + j;
            if (lane == 0) bchunk[j] = make_key(b == nb - 1 ? kPosInfOrdered : u, static_cast<unsigned>(b));
          }
        }
      } else {
        const int b = static_cast<int>(base / B);
        if (base % B == 0) run_block = kNegInfOrdered;
        unsigned u = kNegInfOrdered;
        for (int s = threadIdx.x; s < c; s += blockDim.x) {
          const unsigned v = key_ordered(chunk[s]);
          u = u < v ? v : u;
        }
        u = block_umax(u, sh + 256);
        run_block = run_block < u ? u : run_block;
        const long long block_end = (static_cast<long long>(b) + 1) * B;
        if (base + c == (block_end < n ? block_end : n)) {  // the block is complete
          gc = 1;
          if (threadIdx.x == 0)
            bchunk[0] = make_key(b == nb - 1 ? kPosInfOrdered : run_block, static_cast<unsigned>(b));
        }
      }
      __syncthreads();
      if (gc > 0) m_blocks = keep_best(blist, m_blocks + gc, CB, sh);
    }
    m_entries = keep_best(elist, m_entries + c, K, sh);
    base += c;
  }

  if constexpr (mode == 1)
    for (int i = threadIdx.x; i < CB; i += blockDim.x) candr[i] = i < m_blocks ? key_index(blist[i]) : -1;
  for (int i = threadIdx.x; i < K; i += blockDim.x) outr[i] = i < m_entries ? key_index(elist[i]) : -1;
#endif
}

}  // namespace entry
}  // namespace dsv41k
