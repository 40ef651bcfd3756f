// kernels/index_select.cuh — the indexer's top-k (docs/ops.md "index_select"): scores
// I[s] = Σ_h w_h·max(0, iq_h·k_s) over the visible index entries, optional candidate blocks (mode 1
// writes them, mode 2 masks by them), then the best min(K, n) entries (higher score, then lower index;
// NaN counts as −∞; −∞ entries dropped) in ascending index order, padded with −1. Mirrors
// runtime/cpu/ops_indexer.cpp: each dot is the CPU's eight-way dot and the head sum runs in head order,
// so the scores (and the integer outputs) are the CPU's bit for bit.
//
// Launch (common/kernel_launch_attention.cpp): grid (R, S, 1), blocks of 256 threads. S = splits():
// phases of at most kSplitRows rows spread each row's visible entries over S blocks (S·R ≤ kSplitBlocks,
// at least kMinSlice entries of capacity a block; in mode 1 whole candidate blocks a slice), each block
// keeping the best K entries (and CB candidate blocks) of its slice in the module's partial lists; the
// row's last block to finish (a counter per row, reset by that block) merges the lists in slice order,
// which is index order, and writes the outputs. The best K of the union of each slice's best K is the
// best K overall, so the ids are those of one block per row (S = 1: larger phases, prefill). Partial
// lists: kSplitBlocks·8·(K + CB) bytes of `__device__` memory per variant, beside the memory ledger.
// Shared memory does not grow with the context: a slice is streamed in chunks of at most kChunk entries,
// and running lists keep the best so far.
// Dynamic shared memory (64-bit keys): 8·(K + kChunk) (the entry list and one chunk), plus in mode 1
// 8·(CB + BPC) (the block list and one chunk's blocks, BPC = kChunk / B when B ≤ kChunk, else 1), plus
// in mode 2 4·ceil(nbC / 32) (a bitmap of the listed blocks, nbC = ceil(C / B), C = index_cache_rows,
// the capacity). Static shared memory: 4·Hi·(ceil32(Di) + 8) (the row's queries) + 4·Hi + 4·320 +
// 4·(kSplitBlocks + 2) bytes.
//
// Keys and selection: kernels/topk_keys.cuh (score as an ordered integer above ~index; key 0 is never
// chosen: score −∞ or NaN, or a block not listed in mode 2). Scores: a warp takes four entries at a
// time, lane 8·e' + k holding partial sum k of entry e' for each head in turn. Merge: a radix select
// finds the K-th largest key of list ∪ chunk, and a stable block scan compacts the keys at or above it
// to the front, so the list stays in ascending index order. Mode 1 also folds each chunk's entries into
// block keys (max ordered score per block; the newest block scores +∞) and merges them into a running
// list of CB blocks the same way; a chunk never holds part of two blocks' entries unless it holds them
// whole (chunks of ⌊kChunk / B⌋·B entries, or when B > kChunk, chunks that stop at block boundaries, the
// block's maximum carried over; such variants never split).
#pragma once

#include "cache_rows.cuh"
#include "kernel_abi.cuh"
#include "topk_keys.cuh"

namespace dsv41k {
namespace index_select_detail {
constexpr int kThreads = 256;
constexpr int kChunk = 4096;    // entries scored per pass
constexpr int kMaxList = 4096;  // the most topk and cand_blocks (the running lists live in shared memory)
constexpr int kShInts = topk_keys::kTopkShInts;
constexpr int kSplitRows = 16;     // phases of at most this many rows split a row over blocks
constexpr int kSplitBlocks = 128;  // the most blocks of a split launch: sizes the partial lists
constexpr int kMinSlice = 64;      // capacity entries per split block, at least
// Query rows in shared memory are padded to ≡ 8 (mod 32) floats: eight consecutive lanes read eight
// consecutive floats of one head, in distinct banks.
__device__ constexpr long long q_stride(long long di) { return (di + 31) / 32 * 32 + 8; }
__device__ constexpr long long static_shared_bytes(long long hi, long long di) {
  return 4 * hi * q_stride(di) + 4 * hi + 4 * kShInts + 4 * (kSplitBlocks + 2);
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
// Blocks per row (grid y) of a phase of `rows` rows over a cache of `capacity` entries.
__device__ constexpr long long splits(long long rows, long long capacity, long long mode, long long block) {
  if (rows < 1 || rows > kSplitRows || (mode == 1 && block > kChunk)) return 1;
  const long long want = (capacity + kMinSlice - 1) / kMinSlice, most = kSplitBlocks / rows;
  return want < 1 ? 1 : want < most ? want : most;
}

#ifndef DSV41_CONTRACT_SCAN
using topk_keys::Key;

// A split launch's partial lists, block (row r, split s) at r·S + s: its best K entry keys and best CB
// block keys, with their counts; each row's count of finished blocks (zero at load; the last resets it).
template <long long K>
__device__ Key g_entries[kSplitBlocks * (K > 0 ? K : 1)];
template <long long CB>
__device__ Key g_blocks[kSplitBlocks * CB];
__device__ int g_counts[kSplitBlocks][2];
__device__ unsigned g_finished[kSplitRows];

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

// Keys of entries base .. base + c − 1 into chunk[0, c). Warp w takes entries 4w .. 4w + 3, then
// 4(w + warps) ..; lane 8·e' + k sums the products of columns ≡ k (mod 8) of entry e' for one head at a
// time (the heads' dots are independent chains), the butterfly forms the CPU's eight-way sum in all
// eight lanes, and the head terms add in head order. Unlisted entries (mode 2) read as key 0.
template <int Hi, int Di, int QS, int DT, int MODE>
__device__ __forceinline__ void score_chunk(const char* keys, const float* q, const float* w, const unsigned* kept_bits,
                                            long long B, int base, int c, Key* chunk) {
  constexpr int NJ = Di / 8;  // full chunks of 8 of one dot
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int sub = lane >> 3, k8 = lane & 7;
  for (int s0 = 4 * warp; s0 < c; s0 += 4 * warps) {  // warp-uniform: every lane reaches the shuffles
    const int s = s0 + sub;
    const bool live = s < c;
    const int e = base + (live ? s : s0);
    bool listed = true;
    if constexpr (MODE == 2) {
      const int b = static_cast<int>(e / B);
      listed = (kept_bits[b >> 5] >> (b & 31)) & 1u;
    }
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
}

// The merge of a split launch: appends the S partial lists (`count_of(s)` keys of `list(s)`, in split
// order) behind an empty running list in chunks of `chunk` keys and keeps the best `keep`. `pref` holds
// S + 1 ints. Every thread calls it; returns the list's length.
template <class CountOf, class ListOf>
__device__ __forceinline__ int merge_partials(Key* list, int chunk, int keep, int S, int* pref, int* sh,
                                              CountOf count_of, ListOf list_of) {
  __syncthreads();  // pref may still be read by a previous merge
  if (threadIdx.x == 0) {
    int t = 0;
    for (int s = 0; s < S; ++s) {
      pref[s] = t;
      t += count_of(s);
    }
    pref[S] = t;
  }
  __syncthreads();
  const int total = pref[S];
  int m = 0;
  for (int base = 0; base < total; base += chunk) {
    const int c = total - base < chunk ? total - base : chunk;
    for (int i = threadIdx.x; i < c; i += blockDim.x) {
      const int v = base + i;
      int lo = 0, hi = S - 1;  // the last split whose list starts at or before v
      while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (pref[mid] <= v) lo = mid;
        else hi = mid - 1;
      }
      list[m + i] = __ldcg(list_of(lo) + (v - pref[lo]));
    }
    __syncthreads();
    m = topk_keys::keep_best(list, m + c, keep, sh);
  }
  return m;
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
  using namespace topk_keys;
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
  constexpr int K = static_cast<int>(topk);
  constexpr int CB = mode == 0 ? 1 : static_cast<int>(cand_blocks);
  constexpr long long B = mode == 0 ? 1 : cand_block_size;
  constexpr int CE = static_cast<int>(chunk_entries(mode, B));  // entries per chunk (B ≤ kChunk: whole blocks)
  constexpr int BPC = static_cast<int>(chunk_blocks(mode, B));
  __shared__ float q[Hi * QS];
  __shared__ float w[Hi];
  __shared__ int sh[kShInts];
  __shared__ int pref[kSplitBlocks + 2];  // the merge's list offsets; [kSplitBlocks + 1]: "this block merges"
  extern __shared__ Key dyn[];
  Key* elist = dyn;                                      // [K + kChunk]: the entry list, then a chunk
  Key* blist = dyn + (K + kChunk);                       // [CB + BPC] (mode 1): the block list, then a chunk's
  unsigned* kept_bits = reinterpret_cast<unsigned*>(dyn + (K + kChunk) + (mode == 1 ? CB + BPC : 0));  // mode 2

  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int S = static_cast<int>(gridDim.y), split = static_cast<int>(blockIdx.y);
  int* outr = static_cast<int*>(out) + r * K;
  int* candr = mode != 0 ? static_cast<int*>(candidates) + r * CB : nullptr;
  if (S > 1 && (rows > kSplitRows || rows * S > kSplitBlocks || (mode == 1 && B > kChunk))) {
    if (threadIdx.x == 0 && split == 0) report_error(errors, ERR_STATICS);  // a grid the partial lists cannot hold
    return;
  }
  const int slot = row_slot(statics, r);
  if (slot < 0) {
    if (split == 0) {
      for (int i = threadIdx.x; i < K; i += blockDim.x) outr[i] = 0;
      if constexpr (mode == 1)
        for (int i = threadIdx.x; i < CB; i += blockDim.x) candr[i] = 0;
    }
    return;
  }
  const long long p = row_position(statics, r);
  const long long n_long = p < 0 ? -1 : (p + 1) / ratio;
  if (n_long < 0 || n_long > index_cache_rows || !slot_in(slot, index_cache)) {
    if (split == 0) {
      if (threadIdx.x == 0) report_error(errors, n_long > index_cache_rows ? ERR_CAPACITY : ERR_STATICS);
      for (int i = threadIdx.x; i < K; i += blockDim.x) outr[i] = -1;
      if constexpr (mode == 1)
        for (int i = threadIdx.x; i < CB; i += blockDim.x) candr[i] = -1;
    }
    return;
  }
  const int n = static_cast<int>(n_long);
  const int nb = mode == 0 ? 0 : static_cast<int>((n_long + B - 1) / B);
  // This block's slice [lo, hi) of the visible entries (whole candidate blocks in mode 1).
  int lo = 0, hi = n;
  if (S > 1) {
    long long per = (n_long + S - 1) / S;
    if constexpr (mode == 1) per = (per + B - 1) / B * B;
    const long long l = split * per;
    lo = static_cast<int>(l < n_long ? l : n_long);
    hi = static_cast<int>(l + per < n_long ? l + per : n_long);
  }
  const bool score_any = lo < hi && (K > 0 || mode == 1);

  if (score_any) {
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
  }

  const char* keys = slot_base(index_cache, slot);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  int m_entries = 0, m_blocks = 0;  // lengths of the running lists
  unsigned run_block = kNegInfOrdered;  // B > kChunk: the ordered maximum of the current block so far
  for (int base = lo; score_any && base < hi;) {
    int c = hi - base < CE ? hi - base : CE;
    if constexpr (mode == 1 && B > kChunk) {
      const long long block_end = (base / B + 1) * B;  // a chunk never crosses a block boundary
      if (block_end - base < c) c = static_cast<int>(block_end - base);
    }
    Key* chunk = elist + m_entries;
    score_chunk<Hi, Di, QS, dtype_index_cache, static_cast<int>(mode)>(keys, q, w, kept_bits, B, base, c, chunk);
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
            const int bl = static_cast<int>(j * B), bh = bl + B < c ? static_cast<int>(bl + B) : c;
            unsigned u = kNegInfOrdered;
            for (int s = bl; s < bh; ++s) {
              const unsigned v = key_ordered(chunk[s]);
              u = u < v ? v : u;
            }
            const int b = b0 + j;
            bchunk[j] = make_key(b == nb - 1 ? kPosInfOrdered : u, static_cast<unsigned>(b));
          }
        } else {
          for (int j = warp; j < gc; j += warps) {
            const int bl = static_cast<int>(j * B), bh = bl + B < c ? static_cast<int>(bl + B) : c;
            unsigned u = kNegInfOrdered;
            for (int s = bl + lane; s < bh; s += 32) {
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

  if (S > 1) {
    // Hand this slice's lists over; the row's last block merges them.
    const int part = static_cast<int>(r) * S + split;
    Key* pe = g_entries<K> + static_cast<long long>(part) * (K > 0 ? K : 1);
    for (int i = threadIdx.x; i < m_entries; i += blockDim.x) pe[i] = elist[i];
    if constexpr (mode == 1) {
      Key* pb = g_blocks<CB> + static_cast<long long>(part) * CB;
      for (int i = threadIdx.x; i < m_blocks; i += blockDim.x) pb[i] = blist[i];
    }
    if (threadIdx.x == 0) {
      g_counts[part][0] = m_entries;
      g_counts[part][1] = m_blocks;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) pref[kSplitBlocks + 1] = atomicAdd(&g_finished[r], 1u) == static_cast<unsigned>(S - 1);
    __syncthreads();
    if (!pref[kSplitBlocks + 1]) return;
    __threadfence();
    if (threadIdx.x == 0) g_finished[r] = 0u;  // for the next launch
    const int row_part = static_cast<int>(r) * S;
    if constexpr (mode == 1)
      m_blocks = merge_partials(
          blist, BPC, CB, S, pref, sh, [&](int s) { return __ldcg(&g_counts[row_part + s][1]); },
          [&](int s) { return g_blocks<CB> + static_cast<long long>(row_part + s) * CB; });
    m_entries = merge_partials(
        elist, kChunk, K, S, pref, sh, [&](int s) { return __ldcg(&g_counts[row_part + s][0]); },
        [&](int s) { return g_entries<K> + static_cast<long long>(row_part + s) * (K > 0 ? K : 1); });
  }

  if constexpr (mode == 1)
    for (int i = threadIdx.x; i < CB; i += blockDim.x) candr[i] = i < m_blocks ? key_index(blist[i]) : -1;
  for (int i = threadIdx.x; i < K; i += blockDim.x) outr[i] = i < m_entries ? key_index(elist[i]) : -1;
#endif
}

}  // namespace entry
}  // namespace dsv41k
