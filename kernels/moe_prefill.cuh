// kernels/moe_prefill.cuh — the experts of a phase above kMoeRows rows (prefill) as grouped tensor-core
// GEMMs over only the selected experts. Shared by moe_experts (K choices a row) and shared_expert (one
// expert every active row picks, weight 1, added onto out).
//
// One launch of at least kPrefillBlocks blocks; work items are claimed from a ticket counter in order,
// and an item only waits for items with smaller tickets (claimed by running blocks that never wait on
// later ones: no deadlock, whatever the number of resident blocks):
//   item 0        routing: the valid pairs (row, choice) are sorted by bucket (expert e, choice k),
//                 b = e·K + k, into `list` (the work buffer's tail); per expert and per (choice,
//                 expert) the count of 64-row tiles, prefix-summed (module tables below);
//   zero items    rows without a valid pair get out = 0 (routed experts only);
//   phase 1       (64 pairs of one expert, 64 activation columns): x rows gathered by pair, w1 and
//                 w3 rows interleaved as one 128-row B tile, so a thread holds g and u of the same
//                 column; act = b(w·silu(min(g, L))·clamp(u, −L, L)) stored as bf16 at the pair's
//                 sorted position (the work buffer's head, [pairs, F]);
//   pass k        (64 pairs of bucket (e, k), 128 output dims), k = 0 .. K−1, each pass after the
//                 previous one is complete: out[r] = (earlier valid choice of r ? out[r] : 0) + act·w2ᵀ
//                 (the shared expert: out[r] + act·w2ᵀ), so a row adds its choices in selection order,
//                 as the CPU op (runtime/cpu/ops_moe.cpp); each (row, dim) is written by one item a pass.
// The dots themselves run in another order than the CPU's (MMA, fp32): the GPU op tests' f32 tolerance.
// The last block out resets the counters for the next launch (launches of a module are stream-ordered).
#pragma once

#include "gemm_tile.cuh"
#include "moe_grouped.cuh"

namespace dsv41k {
namespace moe_prefill {

constexpr int kPrefillBlocks = 264;  // the grid is max(kPrefillBlocks, R) (common/kernel_launch_moe.cpp)
constexpr int kMaxExperts = 1024, kMaxTopk = 16, kMaxBuckets = 4096;
constexpr int kActCols = gemm_tile::kBN / 2;  // activation columns of a phase-1 tile (gate and up rows)

// Whether the tiled path compiles for a variant: bf16 activations (act is bf16 too), weight formats the
// tile loader decodes, gate and up in one format (one B tile), K dimensions of whole 32-column steps.
__device__ constexpr bool takes(int dtype_x, int fw1, int fw3, int fw2, long long d, long long f) {
  return dtype_x == DT_BF16 && gemm_tile::tile_takes(fw1) && fw1 == fw3 && gemm_tile::tile_takes(fw2) && f > 0 &&
         d % gemm_tile::kBK == 0 && f % gemm_tile::kBK == 0;
}

#ifndef DSV41_CONTRACT_SCAN

// The module's state between blocks of one launch (zero when the module loads and after each launch).
__device__ unsigned g_ticket, g_exited, g_routed, g_done[kMaxTopk + 1];  // g_done[0]: phase 1; [k + 1]: pass k
__device__ int g_start[kMaxBuckets + 1];                // bucket b's sorted positions [g_start[b], g_start[b + 1])
__device__ int g_tiles1[kMaxExperts + 1];               // phase-1 row tiles of the experts before e
__device__ int g_tiles2[kMaxTopk][kMaxExperts + 1];     // pass-k row tiles of the experts before e

__device__ __forceinline__ int ld(const int* p) { return __ldcg(p); }
__device__ __forceinline__ long long tiles_of(int n) { return (n + gemm_tile::kBM - 1) / gemm_tile::kBM; }
__device__ __forceinline__ long long min_ll(long long a, long long b) { return a < b ? a : b; }
// The pairs of the 64-row tile starting at sorted position s0 of a bucket ending at s_end (s0 < s_end).
__device__ __forceinline__ int tile_rows(int s0, int s_end) {
  return s_end - s0 < gemm_tile::kBM ? s_end - s0 : gemm_tile::kBM;
}

// The expert of pair p (row p / K, choice p % K), or −1: an inactive row, or an id outside [0, E)
// (reported). ids null: the shared expert, expert 0 for every active row.
__device__ __forceinline__ int pair_expert(Statics statics, const int* ids, int K, long long experts, long long p) {
  if (row_slot(statics, p / K) < 0) return -1;
  if (!ids) return 0;
  const int e = ids[p];
  return e >= 0 && e < experts ? e : -1;
}

// Item 0: one block sorts the pairs by bucket into list and writes the tile tables; smem holds B + 1
// counts and 256 partial sums (B = E·K <= kMaxBuckets).
__device__ __forceinline__ void route(int* smem, Rows rows, Statics statics, Errors errors, const int* ids, int K,
                                      int E, int* list) {
  const int tid = threadIdx.x, B = E * K, np = static_cast<int>(rows) * K;
  int* cnt = smem;            // [B + 1]: counts, then starts, then cursors
  int* sums = smem + B + 1;   // [256]
  for (int b = tid; b <= B; b += blockDim.x) cnt[b] = 0;
  __syncthreads();
  for (int p = tid; p < np; p += blockDim.x) {
    const int e = pair_expert(statics, ids, K, E, p);
    if (e >= 0) atomicAdd(&cnt[e * K + p % K], 1);
    else if (ids && row_slot(statics, p / K) >= 0) report_error(errors, ERR_EXPERT);
  }
  __syncthreads();
  // Exclusive scan: each thread a contiguous segment, the 256 segment sums serially by thread 0.
  const int seg = (B + blockDim.x - 1) / blockDim.x, lo = tid * seg, hi = lo + seg < B ? lo + seg : B;
  int mine = 0;
  for (int b = lo; b < hi; ++b) mine += cnt[b];
  sums[tid] = mine;
  __syncthreads();
  if (tid == 0) {
    int run = 0;
    for (int i = 0; i < static_cast<int>(blockDim.x); ++i) {
      const int v = sums[i];
      sums[i] = run;
      run += v;
    }
    cnt[B] = run;
    g_start[B] = run;
  }
  __syncthreads();
  int run = sums[tid];
  for (int b = lo; b < hi; ++b) {
    const int v = cnt[b];
    cnt[b] = run;
    g_start[b] = run;
    run += v;
  }
  __syncthreads();
  // Tile tables from the starts (before the cursors move them): thread k < K pass k, thread K phase 1.
  if (tid < K) {
    int t = 0;
    for (int e = 0; e < E; ++e) {
      g_tiles2[tid][e] = t;
      t += static_cast<int>(tiles_of(cnt[e * K + tid + 1] - cnt[e * K + tid]));
    }
    g_tiles2[tid][E] = t;
  } else if (tid == K) {
    int t = 0;
    for (int e = 0; e < E; ++e) {
      g_tiles1[e] = t;
      t += static_cast<int>(tiles_of(cnt[(e + 1) * K] - cnt[e * K]));
    }
    g_tiles1[E] = t;
  }
  __syncthreads();
  // Placement (the order inside a bucket does not change any value: a row's result is its own).
  for (int p = tid; p < np; p += blockDim.x) {
    const int e = pair_expert(statics, ids, K, E, p);
    if (e >= 0) list[atomicAdd(&cnt[e * K + p % K], 1)] = p;
  }
  __threadfence();  // every thread's list and table stores, before the flag other blocks wait on
  __syncthreads();
  if (tid == 0) atomicExch(&g_routed, 1u);
}

// The expert whose tiles hold tile t: the last e with table[e] <= t (table[E] is the total).
__device__ __forceinline__ int expert_of_tile(const int* table, int E, int t) {
  int lo = 0, hi = E - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (ld(table + mid) <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

__device__ __forceinline__ void wait_for(const unsigned* counter, unsigned target) {
  if (threadIdx.x == 0) {
    while (atomicAdd(const_cast<unsigned*>(counter), 0u) < target) __nanosleep(200);
    __threadfence();
  }
  __syncthreads();
}
__device__ __forceinline__ void finish(unsigned* counter) {
  __threadfence();  // every thread's act / out stores, before the count other blocks wait on
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(counter, 1u);
}

// The experts of a phase above kMoeRows rows (file comment). ids null: the shared expert. False:
// declined before touching anything (an unaligned x, more buckets than the tables hold): the caller
// runs its per-row path. `work` holds R·K·F bf16 (act) then R·K int32 (list).
template <int dtype_x, int fw1, int fw3, int fw2, int D, int F, int KK>
__device__ __forceinline__ bool run(Rows rows, Statics statics, Errors errors, Scratch x, const int* ids,
                                    const float* choice_weight, WeightList w1l, WeightList w3l, WeightList w2l,
                                    Weight w1s, Weight w3s, Weight w2s, float limit, float* out, Scratch work,
                                    long long experts) {
  static_assert(takes(dtype_x, fw1, fw3, fw2, D, F), "moe_prefill::run needs a variant takes() accepts");
  using gemm_tile::BRow;
  using gemm_tile::kBM;
  using gemm_tile::kBN;
  constexpr int K = KK;
  const int E = static_cast<int>(experts);
  if (K > kMaxTopk || E < 1 || E > kMaxExperts || E * K > kMaxBuckets || !work ||
      (reinterpret_cast<unsigned long long>(x) & 15) || (reinterpret_cast<unsigned long long>(work) & 15))
    return false;
  extern __shared__ __align__(16) unsigned char dyn_smem[];
  unsigned short* smem = reinterpret_cast<unsigned short*>(dyn_smem);
  __shared__ unsigned s_item;
  __shared__ int s_pair[gemm_tile::kBM];      // phase 1: the tile's pairs; pass k: their rows (−1: none)
  __shared__ float s_weight[gemm_tile::kBM];  // phase 1: the choice weights; pass k: 1 where out is added onto
  const unsigned short* xs = static_cast<const unsigned short*>(x);
  unsigned short* act = static_cast<unsigned short*>(work);
  int* list = reinterpret_cast<int*>(act + rows * K * F);
  const long long zero_items = ids ? (rows + kBM - 1) / kBM : 0;
  const long long c1 = (F + kActCols - 1) / kActCols, c2 = (D + kBN - 1) / kBN;
  bool routed = false;
  long long t1 = 0, n1 = 0, t2[K], total = 1;
  for (;;) {
    if (threadIdx.x == 0) s_item = atomicAdd(&g_ticket, 1u);
    __syncthreads();
    const long long item = s_item;
    __syncthreads();
    if (item == 0) {
      route(reinterpret_cast<int*>(dyn_smem), rows, statics, errors, ids, K, E, list);
      continue;
    }
    if (!routed) {
      wait_for(&g_routed, 1u);
      routed = true;
      t1 = ld(g_tiles1 + E);
      n1 = t1 * c1;
      total = 1 + zero_items + n1;
      for (int k = 0; k < K; ++k) {
        t2[k] = ld(&g_tiles2[k][E]);
        total += t2[k] * c2;
      }
    }
    if (item >= total) break;
    long long j = item - 1;
    if (j < zero_items) {  // rows without a valid pair: out = 0
      for (long long r = j * kBM; r < (j + 1) * kBM && r < rows; ++r) {
        bool any = false;
        for (int k = 0; k < K && !any; ++k) any = pair_expert(statics, ids, K, E, r * K + k) >= 0;
        if (any) continue;
        for (int d = threadIdx.x; d < D; d += blockDim.x) out[r * D + d] = 0.0f;
      }
      continue;
    }
    j -= zero_items;
    if (j < n1) {  // phase 1: act of 64 pairs of one expert, 64 columns
      const int rt = static_cast<int>(j % t1), ct = static_cast<int>(j / t1);
      const int e = expert_of_tile(g_tiles1, E, rt);
      const int s0 = ld(g_start + e * K) + (rt - ld(g_tiles1 + e)) * kBM, s_end = ld(g_start + (e + 1) * K);
      const Weight w1 = ids ? w1l[e] : w1s, w3 = ids ? w3l[e] : w3s;
      if (threadIdx.x < kBM) {  // the tile's pairs and their weights, read once
        const int s = s0 + threadIdx.x, p = s < s_end ? ld(list + s) : -1;
        s_pair[threadIdx.x] = p;
        s_weight[threadIdx.x] = p >= 0 && ids ? choice_weight[p] : 1.0f;
      }
      __syncthreads();
      gemm_tile::gemm<fw1, gemm_tile::kBM, gemm_tile::kBK>(
          smem, tile_rows(s0, s_end),
          [&](int i) { return xs + static_cast<long long>(s_pair[i] / K) * D; },
          2 * static_cast<int>(min_ll(kActCols, F - static_cast<long long>(ct) * kActCols)),
          [&](int jj) { return BRow{(jj & 1) ? w3 : w1, static_cast<long long>(ct) * kActCols + (jj >> 1)}; },
          D,
          [&](int i, int jj, float g, float u) {
            const long long c = static_cast<long long>(ct) * kActCols + (jj >> 1);
            if (s_pair[i] < 0 || c >= F) return;
            act[static_cast<long long>(s0 + i) * F + c] =
                float_to_bf16_bits(moe_grouped::swiglu<dtype_x>(g, u, s_weight[i], limit));
          });
      finish(&g_done[0]);
      continue;
    }
    j -= n1;
    int k = 0;
    while (j >= t2[k] * c2) j -= t2[k++] * c2;
    // pass k: 64 pairs of bucket (e, k), 128 output dims, after phase 1 (k = 0) or pass k − 1
    wait_for(&g_done[k], k == 0 ? static_cast<unsigned>(n1) : static_cast<unsigned>(t2[k - 1] * c2));
    const int rt = static_cast<int>(j % t2[k]), ct = static_cast<int>(j / t2[k]);
    const int e = expert_of_tile(g_tiles2[k], E, rt);
    const int s0 = ld(g_start + e * K + k) + (rt - ld(&g_tiles2[k][e])) * kBM, s_end = ld(g_start + e * K + k + 1);
    const Weight w2 = ids ? w2l[e] : w2s;
    if (threadIdx.x < kBM) {  // the tile's rows, and whether each adds onto out (file comment)
      const int s = s0 + threadIdx.x;
      const long long r = s < s_end ? ld(list + s) / K : -1;
      bool base = !ids;
      for (int kk = 0; r >= 0 && kk < k && !base; ++kk) base = pair_expert(statics, ids, K, E, r * K + kk) >= 0;
      s_pair[threadIdx.x] = static_cast<int>(r);
      s_weight[threadIdx.x] = base ? 1.0f : 0.0f;
    }
    __syncthreads();
    gemm_tile::gemm<fw2, gemm_tile::kBM, gemm_tile::kBK>(
        smem, tile_rows(s0, s_end), [&](int i) { return act + static_cast<long long>(s0 + i) * F; },
        static_cast<int>(min_ll(kBN, D - static_cast<long long>(ct) * kBN)),
        [&](int jj) { return BRow{w2, static_cast<long long>(ct) * kBN + jj}; },
        F,
        [&](int i, int jj, float v0, float v1) {
          if (s_pair[i] < 0) return;
          const bool base = s_weight[i] != 0.0f;
          const long long d = static_cast<long long>(ct) * kBN + jj;
          float* o = out + static_cast<long long>(s_pair[i]) * D + d;
          if (d < D) o[0] = __fadd_rn(base ? __ldcg(o) : 0.0f, v0);
          if (d + 1 < D) o[1] = __fadd_rn(base ? __ldcg(o + 1) : 0.0f, v1);
        });
    finish(&g_done[k + 1]);
  }
  if (threadIdx.x == 0 && atomicAdd(&g_exited, 1u) == gridDim.x - 1) {  // the last block out resets
    g_ticket = 0;
    g_routed = 0;
    for (int k = 0; k <= K; ++k) g_done[k] = 0;
    __threadfence();
    g_exited = 0;
  }
  return true;
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace moe_prefill
}  // namespace dsv41k
