// kernels/moe_pairs.cuh — the (row, choice) pairs of a grouped decode step (kernels/moe_grouped.cuh)
// grouped by expert, built once per block in shared memory: the distinct experts in order of first
// pick, their members, and phase 2's jobs (an expert's members, 16 at a time: one MMA tile's inputs).
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace moe_grouped {

constexpr int kMoeRows = 16;  // the largest row count served grouped; larger phases run a block a row
constexpr int kMoeCols = 16;  // activation columns (phase 1) or output dims (phase 2) of a work item
constexpr int kMoeBlocks = 264;  // blocks of the grouped launch (two per H200 SM)

// The shared bytes of Pairs<P> (kernels/moe_grouped.cuh shared_bytes, common/kernel_launch_moe.cpp).
__device__ constexpr long long pairs_bytes(long long pairs) { return 4 * (5 * pairs + 3); }

#ifndef DSV41_CONTRACT_SCAN

template <int P>
struct Pairs {
  int expert[P];     // expert of pair p, or -1 (inactive row, or an id out of range)
  int leads;         // distinct experts, in order of first pick
  int lead[P];       // their first pairs
  int start[P + 1];  // members of lead i: member[start[i] .. start[i + 1])
  int member[P];
  int jobs;          // phase 2's jobs: up to 16 members of one expert (one MMA tile's inputs)
  int job[P];        // lead index · 65536 + first member within the lead's members
};
static_assert(sizeof(Pairs<1>) == pairs_bytes(1) && sizeof(Pairs<96>) == pairs_bytes(96),
              "pairs_bytes counts Pairs");

// Pairs of the step (pair p = row p / KK, choice p % KK; expert 0 for every active row when ids is null),
// built by warp 0, a lane per pair: every block builds them before its first item, so a serial build
// (thread 0 comparing each pair with every lead, two dependent shared loads a step) delayed each block's
// first loads by tens of µs at 16 rows. job[] first holds each pair's first pair of the same expert.
// ids holds KR choices a row; choices KR .. KK − 1 (KK = KR + 1: the shared expert joined to the routed
// ones) are the shared expert, id `experts`, after the row's routed choices.
template <int P, int KK, int KR = KK>
__device__ __forceinline__ void build_pairs(Pairs<P>& pairs, Rows rows, Statics statics, Errors errors, const int* ids,
                                            long long experts) {
  static_assert(KR == KK || KR + 1 == KK, "at most one shared choice a row");
  if (threadIdx.x >= 32) return;
  const int lane = threadIdx.x, np = static_cast<int>(rows) * KK;
  for (int p = lane; p < np; p += 32) {
    int e = -1;
    const int r = p / KK, k = p % KK;
    if (row_slot(statics, r) < 0) {
    } else if (ids && k >= KR) {
      e = static_cast<int>(experts);
    } else {
      e = ids ? ids[r * KR + k] : 0;
      if (e < 0 || e >= experts) {
        report_error(errors, ERR_EXPERT);
        e = -1;
      }
    }
    pairs.expert[p] = e;
  }
  __syncwarp();
  int* first = pairs.job;
  for (int p = lane; p < np; p += 32) {
    const int e = pairs.expert[p];
    int f = e < 0 ? -1 : p;
    for (int q = 0; q < p && f == p; ++q)
      if (pairs.expert[q] == e) f = q;
    first[p] = f;
  }
  __syncwarp();
  // Lead i is the i-th pair that is its own first; its members sit after those of earlier leads, in
  // pair order.
  for (int p = lane; p < np; p += 32) {
    const int f = first[p];
    if (f < 0) continue;
    int li = 0, start = 0, rank = 0;
    for (int q = 0; q < np; ++q) {
      const int fq = first[q];
      li += q < f && fq == q;
      start += fq >= 0 && fq < f;
      rank += q < p && fq == f;
    }
    pairs.member[start + rank] = p;
    if (p == f) {
      pairs.lead[li] = p;
      pairs.start[li] = start;
    }
  }
  int leads = 0, valid = 0;
  for (int q = 0; q < np; ++q) {
    leads += first[q] == q;
    valid += first[q] >= 0;
  }
  __syncwarp();
  if (lane != 0) return;
  pairs.leads = leads;
  pairs.start[leads] = valid;
  pairs.jobs = 0;
  for (int i = 0; i < leads; ++i)
    for (int mb = 0; mb < pairs.start[i + 1] - pairs.start[i]; mb += kMoeRows) pairs.job[pairs.jobs++] = i * 65536 + mb;
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace moe_grouped
}  // namespace dsv41k
