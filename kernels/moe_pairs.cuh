// kernels/moe_pairs.cuh — the (row, choice) pairs of a grouped decode step (kernels/moe_grouped.cuh)
// grouped by expert, built once per block in shared memory: the distinct experts (the shared expert's
// first, then in order of first pick), their members, and phase 2's jobs (an expert's members, 16 at a
// time: one MMA tile's inputs).
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
  int leads;         // distinct experts: a fused step's shared expert, then in order of first pick
  int lead[P];       // their first pairs
  int start[P + 1];  // members of lead i: member[start[i] .. start[i + 1])
  int member[P];
  int jobs;          // phase 2's jobs: up to 16 members of one expert (one MMA tile's inputs)
  int job[P];        // lead index · 65536 + first member within the lead's members
};
static_assert(sizeof(Pairs<1>) == pairs_bytes(1) && sizeof(Pairs<96>) == pairs_bytes(96),
              "pairs_bytes counts Pairs");

// Pairs of the step (pair p = row p / KK, choice p % KK; expert 0 for every active row when ids is null),
// built by warp 0 before a block's first item, each lane holding pairs lane, lane + 32, ... in registers:
// a pair's first pair of the same expert from shuffles, lead indices from ballots, ranks among an expert's
// members from __match_any_sync slice by slice, starts from a warp scan. No step waits on a chain of
// shared loads: the loops over pairs in shared memory that this replaced took 9 µs at eight rows (56
// pairs) of every moe_experts call (docs/perf.md, "Twelfth session").
// ids holds KR choices a row; choices KR .. KK − 1 (KK = KR + 1: the shared expert joined to the routed
// ones) are the shared expert, id `experts`, after the row's routed choices.
template <int P, int KK, int KR = KK>
__device__ __forceinline__ void build_pairs(Pairs<P>& pairs, Rows rows, Statics statics, Errors errors, const int* ids,
                                            long long experts) {
  static_assert(KR == KK || KR + 1 == KK, "at most one shared choice a row");
  constexpr int S = (P + 31) / 32;  // a lane's pairs
  constexpr unsigned kAll = 0xffffffffu;
  if (threadIdx.x >= 32) return;
  const int lane = threadIdx.x, np = static_cast<int>(rows) * KK;
  const unsigned below = (1u << lane) - 1u;  // lanes before this one
  const int ns = (np + 31) / 32;             // slices holding pairs (the loops below stop there)
  int e[S], first[S];
#pragma unroll
  for (int j = 0; j < S; ++j) {  // the experts (-1: none)
    const int p = lane + 32 * j, r = p / KK, k = p % KK;
    e[j] = first[j] = -1;
    if (p >= np) continue;
    if (row_slot(statics, r) < 0) {
    } else if (ids && k >= KR) {
      e[j] = static_cast<int>(experts);
    } else {
      e[j] = ids ? ids[r * KR + k] : 0;
      if (e[j] < 0 || e[j] >= experts) {
        report_error(errors, ERR_EXPERT);
        e[j] = -1;
      }
    }
    pairs.expert[p] = e[j];
    first[j] = e[j] < 0 ? -1 : p;
  }
  // first: the lowest pair of the same expert (every pair q broadcast once; -1 never matches).
#pragma unroll
  for (int jq = 0; jq < S; ++jq) {
    if (jq >= ns) break;
    const int srcs = np - 32 * jq < 32 ? np - 32 * jq : 32;
    for (int src = 0; src < srcs; ++src) {
      const int eq = __shfl_sync(kAll, e[jq], src), q = 32 * jq + src;
#pragma unroll
      for (int j = 0; j < S; ++j)
        if (j < ns && e[j] >= 0 && eq == e[j] && q < first[j]) first[j] = q;
    }
  }
  // Lead indices: the shared expert's first (lead 0: phase 1 runs its items first, so a step's small last
  // round holds routed items, the cheaper ones; docs/kernels.md), then the routed experts in pair order,
  // each after the leads of earlier slices and earlier lanes.
  int li[S], lead_of[S];
  bool shared[S];
  int leads = 0;
  unsigned any_shared = 0u;
#pragma unroll
  for (int j = 0; j < S; ++j) {
    shared[j] = KR < KK && e[j] == experts;
    const bool is_lead = e[j] >= 0 && first[j] == lane + 32 * j;
    const unsigned m = __ballot_sync(kAll, is_lead && !shared[j]);
    any_shared |= __ballot_sync(kAll, is_lead && shared[j]);
    lead_of[j] = leads + __popc(m & below);
    leads += __popc(m);
  }
  const int lead_base = any_shared ? 1 : 0;
  leads += lead_base;
#pragma unroll
  for (int j = 0; j < S; ++j) lead_of[j] = shared[j] ? 0 : lead_of[j] + lead_base;
  // Each pair's lead index: its first pair's, fetched from that pair's lane and slice.
#pragma unroll
  for (int j = 0; j < S; ++j) li[j] = -1;
#pragma unroll
  for (int jq = 0; jq < S; ++jq) {
    if (jq >= ns) break;
#pragma unroll
    for (int j = 0; j < S; ++j) {
      const int v = __shfl_sync(kAll, lead_of[jq], first[j] < 0 ? 0 : first[j] & 31);
      if (e[j] >= 0 && first[j] >> 5 == jq) li[j] = v;
    }
  }
  // Ranks among the lead's members, slice by slice; count[lead] (in start) holds the earlier slices'.
  int* count = pairs.start;
  for (int i = lane; i <= P; i += 32) count[i] = 0;
  __syncwarp();
  int rank[S];
#pragma unroll
  for (int j = 0; j < S; ++j) {
    if (j >= ns) break;
    const unsigned same = __match_any_sync(kAll, li[j]);  // -1 (no expert) lanes match only each other
    rank[j] = li[j] < 0 ? 0 : count[li[j]] + __popc(same & below);
    __syncwarp();
    if (li[j] >= 0 && (same >> lane) == 1u) count[li[j]] += __popc(same);  // the group's highest lane
    __syncwarp();
  }
  // Starts (members of earlier leads) and jobs (16 members each) by a warp scan over the leads.
  int n[S], jn[S];
#pragma unroll
  for (int j = 0; j < S; ++j) {
    const int i = lane + 32 * j;
    n[j] = i < leads ? count[i] : 0;
    jn[j] = (n[j] + kMoeRows - 1) / kMoeRows;
  }
  __syncwarp();
  int valid = 0, jobs = 0;
#pragma unroll
  for (int j = 0; j < S; ++j) {
    if (32 * j >= leads) break;
    int a = n[j], b = jn[j];
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int ua = __shfl_up_sync(kAll, a, d), ub = __shfl_up_sync(kAll, b, d);
      if (lane >= d) a += ua, b += ub;
    }
    const int i = lane + 32 * j, s0 = valid + a - n[j], j0 = jobs + b - jn[j];
    if (i < leads) {
      pairs.start[i] = s0;
      for (int mb = 0; mb < n[j]; mb += kMoeRows) pairs.job[j0 + mb / kMoeRows] = i * 65536 + mb;
    }
    valid += __shfl_sync(kAll, a, 31);
    jobs += __shfl_sync(kAll, b, 31);
  }
  __syncwarp();
#pragma unroll
  for (int j = 0; j < S; ++j) {
    if (j >= ns) break;
    if (li[j] < 0) continue;
    const int p = lane + 32 * j;
    pairs.member[pairs.start[li[j]] + rank[j]] = p;
    if (first[j] == p) pairs.lead[li[j]] = p;
  }
  if (lane != 0) return;
  pairs.leads = leads;
  pairs.start[leads] = valid;
  pairs.jobs = jobs;
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace moe_grouped
}  // namespace dsv41k
