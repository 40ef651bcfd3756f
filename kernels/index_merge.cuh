// kernels/index_merge.cuh — index_select's split launch: the blocks of a row hand their best-K entry
// lists (and in mode 1 their candidate block lists) to the `__device__` partial tables, and the last
// blocks out merge them, in slice order (index order), keeping the best K (CB).
//
// Two levels when one merge would be long: with more than kGroup slices a row whose lists could add up
// to more than one merge chunk (min(K, slice)·S > kChunk), the last block of each group of kGroup
// consecutive slices first merges its group's lists into the group's first table entry, and the row's
// last group merger then merges the groups' lists. The best K of the union of lists that each hold the
// best K of their part is the best K overall, so the ids are those of one block. The group merges of a
// row run at once on different SMs: at fill 65,536 and one row (128 slices of 512 entries, no slice
// list shorter than its slice) the row's last block merges 16 lists instead of 128. A block that
// arrives and is not last simply exits: no block ever waits for another.
#pragma once

#include "kernel_abi.cuh"
#include "topk_keys.cuh"

namespace dsv41k {
namespace index_merge {
constexpr int kSplitRows = 16;     // phases of at most this many rows split a row over blocks
constexpr int kSplitBlocks = 128;  // the most blocks of a split launch: sizes the partial lists
constexpr int kGroup = 8;          // slices a first-level merge joins

#ifndef DSV41_CONTRACT_SCAN
using topk_keys::Key;

// A split launch's partial lists, block (row r, split s) at r·S + s: its best K entry keys and best CB
// block keys, with their counts; per row the count of arrived blocks (or group mergers), per group (at
// the group's first part) the count of its arrived blocks. Counters are zero at load; the last arrival
// resets its counter for the next launch.
template <long long K>
__device__ Key g_entries[kSplitBlocks * (K > 0 ? K : 1)];
template <long long CB>
__device__ Key g_blocks[kSplitBlocks * CB];
__device__ int g_counts[kSplitBlocks][2];
__device__ unsigned g_finished[kSplitRows];
__device__ unsigned g_group_done[kSplitBlocks];

// Appends `lists` partial lists (`count_of(s)` keys at `list_of(s)`, s in order) behind an empty running
// list in chunks of at most `chunk` keys and keeps the best `keep`. The lists hold no key 0 (keep_best
// drops them), so a chunk that leaves the list within `keep` is only appended. `pref` holds lists + 1
// ints, `sh` kTopkShInts; lists ≤ blockDim.x. Every thread calls it; returns the list's length.
template <class CountOf, class ListOf>
__device__ __forceinline__ int merge_partials(Key* list, int chunk, int keep, int lists, int* pref, int* sh,
                                              CountOf count_of, ListOf list_of) {
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5, warps = blockDim.x >> 5;
  __syncthreads();  // pref and sh may still be read by a previous merge
  // Offsets of the lists: a block-wide exclusive scan of their counts (one L2 load a thread, in flight
  // together).
  const int own = t < lists ? count_of(t) : 0;
  int x = own;
  for (int o = 1; o < 32; o <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += v;
  }
  if (lane == 31) sh[warp] = x;
  __syncthreads();
  int before = 0;
  for (int w = 0; w < warp; ++w) before += sh[w];
  if (t < lists) pref[t] = before + x - own;
  if (t == warps * 32 - 1) pref[lists] = before + x;  // the last thread's inclusive sum: the total
  __syncthreads();
  const int total = pref[lists];
  int m = 0;
  for (int base = 0; base < total; base += chunk) {
    const int c = total - base < chunk ? total - base : chunk;
    // kBatch keys a thread in flight before any is stored (one L2 round trip per batch, not per key).
    constexpr int kBatch = 8;
    for (int i0 = t; i0 < c; i0 += kBatch * blockDim.x) {
      Key got[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int i = i0 + b * blockDim.x;
        if (i >= c) break;
        const int v = base + i;
        int lo = 0, hi = lists - 1;  // the last list that starts at or before v
        while (lo < hi) {
          const int mid = (lo + hi + 1) >> 1;
          if (pref[mid] <= v)
            lo = mid;
          else
            hi = mid - 1;
        }
        got[b] = __ldcg(list_of(lo) + (v - pref[lo]));
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int i = i0 + b * blockDim.x;
        if (i >= c) break;
        list[m + i] = got[b];
      }
    }
    __syncthreads();
    m = m + c > keep ? topk_keys::keep_best(list, m + c, keep, sh) : m + c;
  }
  return m;
}

// A row's split launch after its blocks scored their slices. Block `split` of S (row r) holds its
// lists in shared memory: m_entries keys at elist, m_blocks at blist (mode 1). `dyn` is the whole
// dynamic buffer (elist at its start, blist behind K + kChunk entries), `dyn_keys` its keys; the block
// merge uses all of it, the entry merge chunks of `entry_chunk`. Returns whether this block is the
// row's last, holding the merged lists in elist and blist; every thread calls it.
template <int K, int CB, int MODE>
__device__ __forceinline__ bool hand_over(int r, int S, int split, bool two_levels, Key* dyn, int dyn_keys,
                                          int entry_chunk, int& m_entries, int& m_blocks, int* pref, int* sh) {
  Key* elist = dyn;
  Key* blist = dyn + (K + entry_chunk);
  const int row_part = r * S;
  auto publish = [&](int part) {
    Key* pe = g_entries<K> + static_cast<long long>(part) * (K > 0 ? K : 1);
    for (int i = threadIdx.x; i < m_entries; i += blockDim.x) pe[i] = elist[i];
    if constexpr (MODE == 1) {
      Key* pb = g_blocks<CB> + static_cast<long long>(part) * CB;
      for (int i = threadIdx.x; i < m_blocks; i += blockDim.x) pb[i] = blist[i];
    }
    if (threadIdx.x == 0) {
      g_counts[part][0] = m_entries;
      g_counts[part][1] = m_blocks;
    }
    __threadfence();
    __syncthreads();
  };
  // Whether this block is the last of `expected` to arrive at `counter` (the last resets it).
  auto arrive = [&](unsigned* counter, int expected) {
    if (threadIdx.x == 0) pref[kSplitBlocks + 1] = atomicAdd(counter, 1u) == static_cast<unsigned>(expected - 1);
    __syncthreads();
    const bool last = pref[kSplitBlocks + 1] != 0;
    if (last) {
      __threadfence();
      if (threadIdx.x == 0) *counter = 0u;
    }
    return last;
  };
  // Merges `lists` lists at parts row_part + first + s·stride into elist / blist.
  auto merge = [&](int first, int lists, int stride) {
    if constexpr (MODE == 1) {
      // The block lists through the whole buffer (the entry list is not needed yet), then behind it.
      m_blocks = merge_partials(
          dyn, dyn_keys - CB, CB, lists, pref, sh,
          [&](int s) { return __ldcg(&g_counts[row_part + first + s * stride][1]); },
          [&](int s) { return g_blocks<CB> + static_cast<long long>(row_part + first + s * stride) * CB; });
      for (int i = threadIdx.x; i < m_blocks; i += blockDim.x) blist[i] = dyn[i];  // CB ≤ K + entry_chunk: apart
    }
    m_entries = merge_partials(
        elist, entry_chunk, K, lists, pref, sh,
        [&](int s) { return __ldcg(&g_counts[row_part + first + s * stride][0]); },
        [&](int s) { return g_entries<K> + static_cast<long long>(row_part + first + s * stride) * (K > 0 ? K : 1); });
  };

  publish(row_part + split);
  int lists = S, stride = 1;
  if (two_levels) {
    const int g0 = split / kGroup * kGroup, members = S - g0 < kGroup ? S - g0 : kGroup;
    if (!arrive(&g_group_done[row_part + g0], members)) return false;
    merge(g0, members, 1);
    __syncthreads();
    publish(row_part + g0);
    lists = (S + kGroup - 1) / kGroup;
    stride = kGroup;
  }
  if (!arrive(&g_finished[r], lists)) return false;
  merge(0, lists, stride);
  return true;
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace index_merge
}  // namespace dsv41k
