// kernels/moe_grouped.cuh — the experts of a decode step (at most kMoeRows rows) grouped by expert: each
// selected expert's weights are read once for every row that picked it, spread over the whole GPU.
// Shared by moe_experts (K choices a row) and shared_expert (one expert every row picks, weight 1). A
// moe_experts call with the shared expert's weights runs both in one launch: the shared expert is one
// more choice of every active row (after its routed ones, weight 1, id `experts`), so its items join the
// routed experts' tickets and its down-projection is added last, as the CPU adds it after the routed sum.
//
// One launch, two phases of work items claimed from a ticket counter (kMoeBlocks blocks loop until the
// tickets run out): phase 1 items are (expert, 16 activation columns): g and u of every row that picked
// the expert, then act = b?(w·silu(min(g, L))·clamp(u, −L, L)) per (row, choice), into a store in the
// module's global memory; phase 2 items are 16 output dims: each takes every selected expert's w2 rows
// once (a warp an expert, each waiting only until that expert's phase 1 items are done) and sums a row's
// choices in selection order (as the CPU op does; the dots themselves are summed in another order: the
// f32 tolerance of the GPU op tests). Phase 1's tickets run expert by expert, so its last round holds
// the last experts' items only and phase 2's warps on the others need not wait for it.
// Waiting cannot deadlock: tickets are handed out in order, so every phase 1 item was claimed by a
// block that is running and never waits. The last block to leave resets the counters for the next
// launch (launches of one module are ordered on its stream).
//
// With tensor cores (bf16 activations) the products are gemv_detail::mma_tile's: a phase 1 item's warps
// 0-3 split K of w1 and warps 4-7 that of w3 side by side (one barrier a tile, not three: moe_experts at
// one row 136 -> 124 µs against w1 then w3 on all 8 warps, docs/perf.md dmoe); a phase 2 item's warps
// take its experts' jobs side by side (split K, summed in slice order, only while there are fewer jobs
// than warps). Steps with few items or many jobs split them further over blocks (kernels/moe_slices.cuh):
// phase 1 items into K slices while there are few (release world 8's fused one-row step: 112; measured
// on the release share's shared expert while it ran unfused, before branch moe4), phase 2 items into
// sets of at most 8 jobs (no warp runs two jobs in turn), and a small last round's items of either phase
// into parts; an item's last part to finish sums the parts in a fixed order.
#pragma once

#include "gemv_mma.cuh"
#include "moe_pairs.cuh"
#include "moe_rows.cuh"
#include "moe_slices.cuh"

namespace dsv41k {
namespace moe_grouped {

constexpr int kWarps = 8;
// Static shared memory of the grouped path (Tables: the pair tables, the partials, the claimed item), which
// the entries overlay on the per-row path's row and activation (common/kernel_launch_moe.cpp mirrors it).
__device__ constexpr long long part_floats(long long choices) {
  return kMoeCols * kMoeRows * choices > 512 ? kMoeCols * kMoeRows * choices : 512;
}
__device__ constexpr long long shared_bytes(long long choices) {
  return pairs_bytes(kMoeRows * choices) + 4 * part_floats(choices) + 4 * kWarps * kMoeCols * kMoeRows +
         4 /* s_item */;
}

#ifndef DSV41_CONTRACT_SCAN
template <int KK>
struct Tables {
  Pairs<kMoeRows * KK> pairs;
  float part[part_floats(KK)];             // phase 2: [dim][pair]
  float red[kWarps * kMoeCols * kMoeRows];  // the MMA path's per-warp partials
  unsigned item;                            // the block's claimed ticket
};
static_assert(sizeof(Tables<7>) == shared_bytes(7) && sizeof(Tables<1>) == shared_bytes(1),
              "shared_bytes counts Tables");
#endif

#ifndef DSV41_CONTRACT_SCAN

// b?(weight·silu(min(g, L))·clamp(u, −L, L)) as the CPU (std::min/std::clamp: NaN passes through).
template <int DT>
__device__ __forceinline__ float swiglu(float g, float u, float weight, float limit) {
  if (limit > 0.0f) {
    g = limit < g ? limit : g;
    u = u < -limit ? -limit : (limit < u ? limit : u);
  }
  const float e = static_cast<float>(exp(-static_cast<double>(g)));
  const float silu = __fmul_rn(g, __fdiv_rn(1.0f, __fadd_rn(1.0f, e)));
  return round_as<DT>(__fmul_rn(__fmul_rn(weight, silu), u));
}

// The module's state between blocks of one launch (zero when the module loads and after each launch),
// each counter on its own 128-byte line: blocks polling g_lead_done do not delay the ticket's atomics.
__device__ __align__(128) unsigned g_ticket;
__device__ __align__(128) unsigned g_exited;
// Phase 1 items finished (all their slices) of each lead (distinct expert), which phase 2's warps poll.
template <int P>
__device__ __align__(128) unsigned g_lead_done[P];

// Reads a counter other blocks raise (phase 2's poll of g_lead_done): a relaxed load at the GPU's coherence
// point, the caller fencing once the count is reached. Neither an atomic (the polling blocks would queue
// with the ticket's) nor an acquire load, which made moe_experts 5-8% slower at one row (docs/perf.md,
// dmoe).
__device__ __forceinline__ unsigned load_relaxed(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
template <long long N>
__device__ __align__(16) float g_act[N];  // [pair][F]: act of (row, choice) pair r·KK + k

// The grouped experts of a step of at most kMoeRows rows (file comment) in the caller's shared tables.
// ids null: the shared expert (every active row, weight 1, added onto out; formats fw*); else out = Σ over
// each row's choices, from 0: the KR = KK routed ones, or with fs1 >= 0 (a fused step) KK − 1 routed ones
// then the shared expert (w*s in formats fs*). False: declined before touching anything (the caller runs
// its per-row path).
template <int dtype_x, int fw1, int fw3, int fw2, int fs1, int fs3, int fs2, int D, int F, int KK>
__device__ __forceinline__ bool run(Tables<KK>& sh, Rows rows, Statics statics, Errors errors, Scratch x,
                                    const int* ids, const float* choice_weight, WeightList w1l, WeightList w3l,
                                    WeightList w2l, Weight w1s, Weight w3s, Weight w2s, float limit, float* out,
                                    long long experts) {
  static_assert(F > 0, "the grouped path needs expert columns");
  constexpr bool kFused = fs1 >= 0;
  constexpr int P = kMoeRows * KK, C = kMoeCols, RB = kMoeRows, T = C * RB;  // T: one MMA tile's outputs
  constexpr int G2 = (D + C - 1) / C, H = kWarps / 2, KR = kFused ? KK - 1 : KK;
  using gemv_detail::mma_tile;
  // Gate and up run side by side on the two halves of the warps: one format for both (one call site).
  constexpr bool kMma = gemv_detail::mma_takes(dtype_x, fw1) && fw1 == fw3 && gemv_detail::mma_takes(dtype_x, fw2) &&
                        (!kFused || (gemv_detail::mma_takes(dtype_x, fs1) && fs1 == fs3 &&
                                     gemv_detail::mma_takes(dtype_x, fs2)));
  Pairs<P>& pairs = sh.pairs;
  float* part = sh.part;
  float* red = sh.red;
  build_pairs<P, KK, KR>(pairs, rows, statics, errors, ids, experts);
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, leads = pairs.leads;
  constexpr unsigned kLeadItems = (F + C - 1) / C;  // phase 1 items of one lead
  const unsigned groups1 = static_cast<unsigned>(leads) * kLeadItems;
  unsigned* lead_done = g_lead_done<P>;
  // Until lead li's phase 1 items are done: lane 0 polls (a plain load, not an atomic), then fences for
  // the warp, whose lanes then read the lead's act through L2.
  auto wait_lead = [&](int li) {
    if (lane == 0) {
      while (load_relaxed(&lead_done[li]) < kLeadItems) __nanosleep(100);
      __threadfence();
    }
    __syncwarp();
  };
  // Expert e's weights and whether they are the shared expert's (formats fs*).
  auto is_shared = [&](int e) { return kFused && e == experts; };
  auto pick = [&](WeightList l, Weight s, int e) { return !ids || is_shared(e) ? s : l[e]; };
  // A product of the shared expert's in a format other than the routed experts' takes a call site of its
  // own (the else branches below: dead code unless kMixed*; each inlined copy of mma_tile costs registers).
  constexpr bool kMixed1 = kFused && fs1 != fw1, kMixed2 = kFused && fs2 != fw2;
  constexpr int kS1 = kMixed1 ? fs1 : fw1, kS3 = kMixed1 ? fs3 : fw3, kS2 = kMixed2 ? fs2 : fw2;
  // The choice weight of pair p (the shared expert's: 1).
  auto pair_weight = [&](int p) { return !ids || p % KK >= KR ? 1.0f : choice_weight[(p / KK) * KR + p % KK]; };
  bool x_chunks = gemv_detail::gemv_applies<dtype_x, fw1>(x, (ids ? w1l[0] : w1s).data, D, 0, D) &&
                  gemv_detail::gemv_applies<dtype_x, fw3>(x, (ids ? w3l[0] : w3s).data, D, 0, D);
  constexpr int E2 = gemv_detail::chunk_elems(fw2);
  bool a_chunks = E2 > 0 && F % (E2 > 0 ? E2 : 1) == 0 &&
                  (reinterpret_cast<unsigned long long>((ids ? w2l[0] : w2s).data) & 15) == 0;
  if constexpr (kFused) {
    constexpr int ES = gemv_detail::chunk_elems(fs2);
    x_chunks = x_chunks && gemv_detail::gemv_applies<dtype_x, fs1>(x, w1s.data, D, 0, D) &&
               gemv_detail::gemv_applies<dtype_x, fs3>(x, w3s.data, D, 0, D);
    a_chunks = a_chunks && ES > 0 && F % (ES > 0 ? ES : 1) == 0 &&
               (reinterpret_cast<unsigned long long>(w2s.data) & 15) == 0;
  }
  // Tensor cores (bf16 x and act, both products chunked): act is stored as bf16 (exact: it is rounded
  // to bf16 already); otherwise as f32 for the CUDA-core products.
  // Variants with tensor cores compile no CUDA-core products (NVRTC time): shapes they cannot take
  // (never for whole 128-column expert shares and aligned buffers) go to the caller's per-row path.
  // Tickets (kernels/moe_slices.cuh): phase 1's items [0, sp1.whole) whole, the rest as sp1.parts K slices;
  // phase 2's items [0, sp2.whole) as `sets` sets of at most kWarps jobs, the rest as sp2.parts sets.
  Split sp1{groups1, 1}, sp2{static_cast<unsigned>(G2), 1};
  int sets = 1;
  if constexpr (kMma) {
    if (!x_chunks || !a_chunks) return false;
    sp1 = phase1_split(groups1, pairs.jobs == leads, kblocks_of<fw1>(D), kWarps);
    sets = (pairs.jobs + kWarps - 1) / kWarps;
    if (sets < 1) sets = 1;
    sp2 = phase2_split(static_cast<unsigned>(G2), pairs.jobs, kWarps);
  }
  const unsigned n1 = sp1.whole + (groups1 - sp1.whole) * sp1.parts, n2w = sp2.whole * sets;
  const unsigned total = n1 + n2w + (static_cast<unsigned>(G2) - sp2.whole) * sp2.parts;
  float* act = g_act<static_cast<long long>(P) * F>;
  unsigned short* act16 = reinterpret_cast<unsigned short*>(act);
  const unsigned short* xs = static_cast<const unsigned short*>(x);
  // Thread 0 claims a block's next ticket once its current item's weights are read (claim_next after the
  // products), so the atomic's round trip hides behind the item's sums and stores, yet the last round's
  // items go to the blocks that finish first. Claimed as an item started, a block's second ticket was
  // fixed while every block was still on its first item: the release share's small last rounds of either
  // phase then waited on the slowest first items (moe_experts at one row 57.2 -> 52.1 us a call, its graph
  // timeline 52 -> 44.5 us: docs/perf.md, "Twelfth session").
  // Still no deadlock: tickets rise, so a phase 1 ticket is only ever claimed during a phase 1 item (or
  // before the first), by a block that goes on to run it without waiting.
  unsigned next = 0u;
  bool claimed = false;  // thread 0's: next holds the block's next ticket
  auto claim_next = [&] {
    if (threadIdx.x == 0 && !claimed) {
      next = atomicAdd(&g_ticket, 1u);
      claimed = true;
    }
  };
  for (;;) {
    claim_next();  // unless the previous item claimed it
    if (threadIdx.x == 0) {
      sh.item = next;
      claimed = false;
    }
    __syncthreads();
    const unsigned item = sh.item;
    __syncthreads();
    if (item >= total) break;
    if (item < n1) {  // phase 1: act of 16 columns of one expert for all its pairs (one K slice of them)
      // A sliced item's tickets: `sliced` counts them from the first sliced one (its tables' index).
      const bool whole = item < sp1.whole;
      const unsigned sliced = whole ? 0u : item - sp1.whole;
      const unsigned group = whole ? item : sp1.whole + sliced / sp1.parts;
      const int s1 = whole ? 1 : sp1.parts, slice = whole ? 0 : static_cast<int>(sliced % sp1.parts);
      const int li = static_cast<int>(group / kLeadItems), col0 = static_cast<int>(group % kLeadItems) * C;
      const int e = pairs.expert[pairs.lead[li]];
      const Weight w1 = pick(w1l, w1s, e), w3 = pick(w3l, w3s, e);
      const int m0 = pairs.start[li], count = pairs.start[li + 1] - m0;
      bool finished = true;  // this block completes the item (its only or its last slice)
      if constexpr (kMma) {
        // Warps 0-3 take w1 (gate), 4-7 w3 (up), each a K slice of 4·s1; each half summed in warp order.
        float* mine = g_part1 + static_cast<long long>(sliced) * 2 * T;
        for (int mb = 0; mb < count; mb += RB) {
          const int nm = count - mb < RB ? count - mb : RB;
          const int* mem = pairs.member + m0 + mb;
          auto xrow = [&](int i) { return static_cast<long long>(mem[i] / KK) * D; };
          const Weight w = warp < H ? w1 : w3;
          const int part_k = slice * H + warp % H;
          if (!kMixed1 || !is_shared(e))
            mma_tile<fw1, false>(xs, xrow, nm, w, D, col0, F, part_k, H * s1, red + warp * T);
          else
            mma_tile<kS1, false>(xs, xrow, nm, w, D, col0, F, part_k, H * s1, red + warp * T);
          claim_next();
          __syncthreads();
          for (int t = threadIdx.x; t < T; t += blockDim.x) {
            float g = 0.0f, u = 0.0f;
            for (int k = 0; k < H; ++k) g += red[k * T + t];
            for (int k = H; k < kWarps; ++k) u += red[k * T + t];
            if (s1 > 1) {  // one tile of members (phase1_split): the slice's partials
              mine[t] = g;
              mine[T + t] = u;
              continue;
            }
            const int c = t / RB, m = t % RB;
            if (m >= nm || col0 + c >= F) continue;
            const int p = mem[m];
            act16[static_cast<long long>(p) * F + col0 + c] =
                float_to_bf16_bits(swiglu<dtype_x>(g, u, pair_weight(p), limit));
          }
          __syncthreads();
        }
        if (s1 > 1) {
          finished = last_block_of_row(&g_count1[group - sp1.whole], static_cast<unsigned>(s1));
          if (finished) {
            const float* all = g_part1 + static_cast<long long>(group - sp1.whole) * s1 * 2 * T;
            for (int t = threadIdx.x; t < T; t += blockDim.x) {
              const int c = t / RB, m = t % RB;
              if (m >= count || col0 + c >= F) continue;
              float g = 0.0f, u = 0.0f;
              for (int k = 0; k < s1; ++k) {
                g += __ldcg(all + k * 2 * T + t);
                u += __ldcg(all + k * 2 * T + T + t);
              }
              const int p = pairs.member[m0 + m];
              act16[static_cast<long long>(p) * F + col0 + c] =
                  float_to_bf16_bits(swiglu<dtype_x>(g, u, pair_weight(p), limit));
            }
          }
        }
      }
      if constexpr (!kMma)
        for (int j = 0; j < C / kWarps; ++j) {
          const int f = col0 + warp * (C / kWarps) + j;
          if (f >= F) break;
          for (int mb = 0; mb < count; mb += RB) {
            const int nm = count - mb < RB ? count - mb : RB;
            const XSource<dtype_x, KK> src{x, pairs.member + m0 + mb, D};
            float g[RB], u[RB];
#pragma unroll
            for (int m = 0; m < RB; ++m) g[m] = u[m] = 0.0f;
            if (!kMixed1 || !is_shared(e)) {
              warp_rows<fw1, RB>(w1, f, D, nm, src, x_chunks, g);
              warp_rows<fw3, RB>(w3, f, D, nm, src, x_chunks, u);
            } else {
              warp_rows<kS1, RB>(w1, f, D, nm, src, x_chunks, g);
              warp_rows<kS3, RB>(w3, f, D, nm, src, x_chunks, u);
            }
#pragma unroll
            for (int m = 0; m < RB; ++m) {
              if (m >= nm) break;
              const float gs = warp_sum(g[m]), us = warp_sum(u[m]);
              const int p = pairs.member[m0 + mb + m];
              if (lane == 0)
                act[static_cast<long long>(p) * F + f] = swiglu<dtype_x>(gs, us, pair_weight(p), limit);
            }
          }
        }
      if (finished) {
        __syncthreads();
        if (threadIdx.x == 0) {
          __threadfence();
          atomicAdd(&lead_done[li], 1u);
        }
      }
    } else {  // phase 2: 16 output dims, every expert's w2 rows once, then each row's choices in order
      // Item (group of 16 dims, job set): sets of at most kWarps jobs, so no warp takes two jobs one after
      // the other while others idle; one set: the whole item. The last round's items: nsets sets of `per`.
      const unsigned i2 = item - n1;
      const bool whole = i2 < n2w;
      const int nsets = whole ? sets : sp2.parts;
      const int group = static_cast<int>(whole ? i2 / sets : sp2.whole + (i2 - n2w) / sp2.parts);
      const int set = static_cast<int>(whole ? i2 % sets : (i2 - n2w) % sp2.parts);
      const int per = whole ? kWarps : (pairs.jobs + nsets - 1) / nsets;
      const int d0 = group * C;
      if constexpr (!kMma) {  // every lead's act: warp 0 waits for all, then the block barrier
        if (warp == 0)
          for (int li = 0; li < leads; ++li) wait_lead(li);
        __syncthreads();
      }
      bool finished = true;  // this block writes the item's outputs (its only or its last part)
      if constexpr (kMma) {
        // The set's jobs side by side, split K only while there are fewer jobs than warps; each job's tile
        // sums straight into part when one warp holds it, else through red in slice order.
        const int jb = set * per, je = pairs.jobs < jb + per ? pairs.jobs : jb + per, nj = je - jb;
        const int split = nj <= 0 || nj >= kWarps ? 1 : kWarps / nj;
        // Warp w: job jb + w / split, K slice w % split. One mma_tile call site per weight format (a fused
        // call whose shared expert has another format adds one: kMixed*); each inlined copy costs registers:
        // two copies of one format took the shared expert from 128 to 162.
        const int j = jb + warp / split;
        if (warp < split * nj) {
          const int li = pairs.job[j] >> 16, m0 = pairs.start[li] + (pairs.job[j] & 65535);
          const int e = pairs.expert[pairs.lead[li]], count = pairs.start[li + 1] - m0;
          const int nm = count < RB ? count : RB;
          const int* mem = pairs.member + m0;
          wait_lead(li);
          auto arow = [&](int i) { return static_cast<long long>(mem[i]) * F; };
          if (!kMixed2 || !is_shared(e))
            mma_tile<fw2, true>(act16, arow, nm, pick(w2l, w2s, e), F, d0, D, warp % split, split, red + warp * T);
          else
            mma_tile<kS2, true>(act16, arow, nm, pick(w2l, w2s, e), F, d0, D, warp % split, split, red + warp * T);
          claim_next();
          if (split == 1) {
            __syncwarp();  // the warp's partials, written lane by lane, read by every lane
            for (int t = lane; t < T; t += 32)
              if (t % RB < nm) part[(t / RB) * P + mem[t % RB]] = red[warp * T + t];
          }
        }
        __syncthreads();
        // Split jobs: their slices summed in slice order into part. Several sets: the set's pairs also into
        // the group's table, and the group's last set gathers every pair from it.
        float* table = g_part2<static_cast<long long>(G2) * C * P> + static_cast<long long>(group) * C * P;
        if (split > 1 || nsets > 1)
          for (int i = threadIdx.x; i < nj * T; i += blockDim.x) {
            const int jj = jb + i / T, t = i % T, dl = t / RB, m = t % RB;
            const int li = pairs.job[jj] >> 16, m0 = pairs.start[li] + (pairs.job[jj] & 65535);
            if (m >= pairs.start[li + 1] - m0) continue;
            float* v = part + dl * P + pairs.member[m0 + m];
            if (split > 1) {
              float sum = 0.0f;
              for (int k = 0; k < split; ++k) sum += red[((jj - jb) * split + k) * T + t];
              *v = sum;
            }
            if (nsets > 1) table[v - part] = *v;
          }
        if (nsets > 1) {
          const int np = static_cast<int>(rows) * KK;
          finished = last_block_of_row(&g_count2<G2>[group], static_cast<unsigned>(nsets));
          if (finished)
            for (int i = threadIdx.x; i < C * np; i += blockDim.x)
              if (pairs.expert[i % np] >= 0) part[(i / np) * P + i % np] = __ldcg(table + (i / np) * P + i % np);
        }
      }
      if constexpr (!kMma) {
        for (int li = 0; li < leads; ++li) {
          const int e = pairs.expert[pairs.lead[li]];
          const Weight w2 = pick(w2l, w2s, e);
          const int m0 = pairs.start[li], count = pairs.start[li + 1] - m0;
          for (int j = 0; j < C / kWarps; ++j) {
            const int dl = warp * (C / kWarps) + j, d = d0 + dl;
            if (d >= D) break;
            for (int mb = 0; mb < count; mb += RB) {
              const int nm = count - mb < RB ? count - mb : RB;
              const ActSource src{act, pairs.member + m0 + mb, F};
              float acc[RB];
#pragma unroll
              for (int m = 0; m < RB; ++m) acc[m] = 0.0f;
              if (!kMixed2 || !is_shared(e))
                warp_rows<fw2, RB>(w2, d, F, nm, src, a_chunks, acc);
              else
                warp_rows<kS2, RB>(w2, d, F, nm, src, a_chunks, acc);
#pragma unroll
              for (int m = 0; m < RB; ++m) {
                if (m >= nm) break;
                const float v = warp_sum(acc[m]);
                if (lane == 0) part[dl * P + pairs.member[m0 + mb + m]] = v;
              }
            }
          }
        }
      }
      __syncthreads();
      if (finished)
        for (int t = threadIdx.x; t < C * rows; t += blockDim.x) {
          const int dl = t % C, r = t / C, d = d0 + dl;
          if (d >= D) continue;
          float* o = out + static_cast<long long>(r) * D + d;
          if (row_slot(statics, r) < 0) {
            if (ids) *o = 0.0f;  // routed experts: inactive rows are zero; the shared expert leaves them
            continue;
          }
          float v = ids ? 0.0f : *o;
          for (int k = 0; k < KK; ++k)
            if (pairs.expert[r * KK + k] >= 0) v = __fadd_rn(v, part[dl * P + r * KK + k]);
          *o = v;
        }
      __syncthreads();  // part is rewritten by the block's next item
    }
  }
  if (threadIdx.x == 0 && atomicAdd(&g_exited, 1u) == gridDim.x - 1) {  // the last block out resets
    g_ticket = 0;
    for (int li = 0; li < leads; ++li) lead_done[li] = 0;
    __threadfence();
    g_exited = 0;
  }
  return true;
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace moe_grouped
}  // namespace dsv41k
