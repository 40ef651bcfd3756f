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
// keeping the best K entries (and CB candidate blocks) of its slice; the blocks hand their lists over and
// the last ones out merge them in slice order, which is index order (kernels/index_merge.cuh: in two
// levels when the lists are long), and the row's last block writes the outputs. The best K of the union
// of each slice's best K is the best K overall, so the ids are those of one block per row (S = 1: larger
// phases, prefill). Partial lists: kSplitBlocks·8·(K + CB) bytes of `__device__` memory per variant,
// which the memory ledger counts as kernel globals. Shared memory does not grow with the context: a slice is streamed in chunks
// of at most kChunk entries, and running lists keep the best so far.
// Dynamic shared memory (64-bit keys): 8·(K + kChunk) (the entry list and one chunk), plus in mode 1
// 8·(CB + BPC) (the block list and one chunk's blocks, BPC = kChunk / B when B ≤ kChunk, else 1), plus
// in mode 2 4·ceil(nbC / 32) (a bitmap of the listed blocks, nbC = ceil(C / B), C = index_cache_rows,
// the capacity). Static shared memory: 4·Hi·(ceil32(Di) + 8) (the row's queries) + 4·Hi + 4·320 +
// 4·(kSplitBlocks + 2) bytes, plus 4·64·Hi (the head terms) on the register path of the scores.
//
// Keys and selection: kernels/topk_keys.cuh (score as an ordered integer above ~index; key 0 is never
// chosen: score −∞ or NaN, or a block not listed in mode 2). Scores: kernels/index_scores.cuh (decode:
// the register path), kernels/index_prefill_scores.cuh (phases of more than kSplitRows rows whose shapes
// take the class path; the row's queries are stored in its class order). Merge: a
// radix select finds the K-th largest key of list ∪ chunk, and a stable block scan compacts the keys at
// or above it to the front, so the list stays in ascending index order. Mode 1 also folds each chunk's
// entries into block keys (max ordered score per block; the newest block scores +∞) and merges them into
// a running list of CB blocks the same way; a chunk never holds part of two blocks' entries unless it
// holds them whole (chunks of ⌊kChunk / B⌋·B entries, or when B > kChunk, chunks that stop at block
// boundaries, the block's maximum carried over; such variants never split).
#pragma once

#include "cache_rows.cuh"
#include "index_merge.cuh"
#include "index_prefill_scores.cuh"
#include "index_scores.cuh"
#include "kernel_abi.cuh"
#include "topk_keys.cuh"

namespace dsv41k {
namespace index_select_detail {
constexpr int kThreads = 256;
constexpr int kChunk = 4096;    // entries scored per pass
constexpr int kMaxList = 4096;  // the most topk and cand_blocks (the running lists live in shared memory)
constexpr int kShInts = topk_keys::kTopkShInts;
using index_merge::kSplitRows;
using index_merge::kSplitBlocks;
constexpr int kMinSlice = 64;      // capacity entries per split block, at least
// Query rows in shared memory are padded to ≡ 8 (mod 32) floats: eight consecutive lanes read eight
// consecutive floats of one head, in distinct banks.
__device__ constexpr long long q_stride(long long di) { return (di + 31) / 32 * 32 + 8; }
__device__ constexpr long long static_shared_bytes(long long hi, long long di) {
  return 4 * hi * q_stride(di) + 4 * hi + 4 * kShInts + 4 * (kSplitBlocks + 2) + 4 * index_scores::term_floats(hi, di);
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
  __shared__ __align__(16) float q[Hi * QS];
  __shared__ float w[Hi];
  __shared__ float terms[index_scores::term_floats(index_heads, index_head_dim)];  // the register path's head terms
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
  // Phases of many rows (a block a row) score on the class path, its queries in class order.
  const bool classes = index_prefill_scores::class_path(Hi, Di) && rows > kSplitRows;

  if (score_any) {
    // The row's queries and head weights w_h = iw_h·Di^−½·Hi^−½ (fp32, in that order).
    const float* iqr = static_cast<const float*>(iq) + r * Hi * Di;
    if (classes) {
      for (int i = threadIdx.x; i < Hi * Di; i += blockDim.x)
        q[(i / Di) * QS + index_prefill_scores::class_slot<Di>(i % Di)] = iqr[i];
    } else if (Di % 4 == 0 && (reinterpret_cast<unsigned long long>(iqr) & 15) == 0) {
      // 16-byte loads, four a thread in flight (a head's row is whole float4s).
#pragma unroll 4
      for (int v = threadIdx.x; v < Hi * Di / 4; v += blockDim.x) {
        const float4 x = reinterpret_cast<const float4*>(iqr)[v];
        float* d = q + (4 * v / Di) * QS + 4 * v % Di;
        d[0] = x.x, d[1] = x.y, d[2] = x.z, d[3] = x.w;
      }
    } else {
      for (int i = threadIdx.x; i < Hi * Di; i += blockDim.x) q[(i / Di) * QS + i % Di] = iqr[i];
    }
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
  // Whole-row loads of the keys (kernels/index_scores.cuh) need an aligned cache.
  const bool wide = (reinterpret_cast<unsigned long long>(keys) & (dtype_index_cache == DT_PACKED ? 3 : 15)) == 0;
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
    if constexpr (index_prefill_scores::class_path(index_heads, index_head_dim)) {
      if (classes)
        index_prefill_scores::score_chunk<Hi, Di, QS, dtype_index_cache, static_cast<int>(mode)>(
            keys, wide, q, w, kept_bits, B, base, c, chunk);
    }
    if (!classes)
      index_scores::score_chunk<Hi, Di, QS, dtype_index_cache, static_cast<int>(mode)>(keys, wide, q, w, kept_bits, B,
                                                                                   base, c, chunk, terms);

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
      // Block keys are never 0: a chunk that leaves the list within CB is only appended.
      if (gc > 0) m_blocks = m_blocks + gc > CB ? keep_best(blist, m_blocks + gc, CB, sh) : m_blocks + gc;
    }
    m_entries = keep_best(elist, m_entries + c, K, sh);
    base += c;
  }

  if (S > 1) {
    // Hand this slice's lists over; the row's last block (after the group merges, kernels/index_merge.cuh)
    // holds the merged lists.
    const long long per = (n_long + S - 1) / S;  // the slice's length (mode 1: at most a block more)
    const bool two_levels = S > index_merge::kGroup && (K < per ? K : per) * S > kChunk;
    constexpr int kDynKeys = K + kChunk + (mode == 1 ? CB + BPC : 0);
    if (!index_merge::hand_over<K, CB, static_cast<int>(mode)>(static_cast<int>(r), S, split, two_levels, dyn,
                                                               kDynKeys, kChunk, m_entries, m_blocks, pref, sh))
      return;
  }

  if constexpr (mode == 1)
    for (int i = threadIdx.x; i < CB; i += blockDim.x) candr[i] = i < m_blocks ? key_index(blist[i]) : -1;
  for (int i = threadIdx.x; i < K; i += blockDim.x) outr[i] = i < m_entries ? key_index(elist[i]) : -1;
#endif
}

}  // namespace entry
}  // namespace dsv41k
