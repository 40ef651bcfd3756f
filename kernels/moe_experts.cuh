// kernels/moe_experts.cuh — the routed experts of a row (docs/ops.md "moe_experts"):
// out = Σ_k b(w_k·silu(min(g, L))·clamp(u, −L, L))·w2ᵀ over the row's K experts in selection order,
// g = x·w1ᵀ, u = x·w3ᵀ of expert id_k; inactive rows and width 0 give zeros. Each row adds its
// experts' down-projections to out in selection order, starting from 0, as runtime/cpu/ops_moe.cpp.
// With shared_w1/w3/w2 (decode phases: compiler/emit/phase_emitter_ffn.cpp) the shared expert's
// down-projection (weight 1) is then added to each active row, as shared_expert would: one launch.
//
// Launch (common/kernel_launch_moe.cpp): 256 threads a block. Phases of at most kMoeRows rows (decode):
// grid (kMoeBlocks, 1, 1), no dynamic shared memory, the grouped path of kernels/moe_grouped.cuh (each
// selected expert read once for all its rows, the whole GPU busy). Larger phases (prefill): grid
// (max(kPrefillBlocks, R), 1, 1) with gemm_tile::kGemmSmemBytes of dynamic shared memory: with bf16
// activations the grouped tensor-core GEMMs of kernels/moe_prefill.cuh (act and the sorted pairs in
// `work`: R·K·F bf16, then R·K int32; not with the shared expert, whose larger phases take the per-row
// path); otherwise (f32 check mode) a block a row, rows grid-strided, with the CPU's eight-way dots (the
// same bits), below. Static shared memory: 4·D (the row) + 4·F (one expert's activation), overlaid by the
// grouped path's tables, + 4 (kernels/last_block.cuh's flag). Per row and expert:
// one 8-lane group per activation column (lane k holds partial sum k of g and u), then one group
// per output dim d adding the expert's w2 row dot into out[r, d] (the same lane each time).
// `experts` (E) only bounds the ids: a run-time parameter.
#pragma once

#include "moe_grouped.cuh"
#include "moe_prefill.cuh"

namespace dsv41k {
namespace moe_experts_detail {
constexpr int kThreads = 256;
// The per-row path's row and activation overlaid by the grouped path's tables (`choices` a row), and
// last_block_of_row's flag.
__device__ constexpr long long static_shared_bytes(long long d, long long f, long long choices) {
  return (4 * d + 4 * (f > 0 ? f : 1) > moe_grouped::shared_bytes(choices) ? 4 * d + 4 * (f > 0 ? f : 1)
                                                                            : moe_grouped::shared_bytes(choices)) +
         4;
}

#ifndef DSV41_CONTRACT_SCAN
// One block's static shared memory: the per-row path's row and activation, or the grouped path's tables.
template <int D, int F, int KK>
union Shared {
  struct {
    float xs[D];
    float act[F > 0 ? F : 1];
  } row;
  moe_grouped::Tables<KK> grouped;
};

using moe_grouped::swiglu;

// outr[d] += (b?(weight·silu(min(g, L))·clamp(u, −L, L)) of one expert)·w2ᵀ for one row held in xs:
// one 8-lane group per activation column into act[F], then one group per output dim (the same lane
// adds to outr[d] every time, so the sum runs in the CPU's order). w1e, w3e are [F, D] and w2e is
// [D, F] in their stored formats, dequantized in registers. Shared with shared_expert.
template <int dtype_x, int format_w1, int format_w3, int format_w2, int D, int F>
__device__ __forceinline__ void add_expert(const float* xs, Weight w1e, Weight w3e, Weight w2e, float weight,
                                           float limit, float* act, float* outr) {
  const int k8 = threadIdx.x & 7, group = threadIdx.x >> 3, groups = blockDim.x >> 3;
  for (int base = 0; base < F; base += groups) {
    const int f = base + group;
    const bool valid = f < F;
    const long long row = valid ? f : 0;
    const float g = group8_dot([&](long long i) { return weight_at<format_w1>(w1e, row, i, D); },
                               [&](long long i) { return xs[i]; }, valid ? D : 0, k8);
    const float u = group8_dot([&](long long i) { return weight_at<format_w3>(w3e, row, i, D); },
                               [&](long long i) { return xs[i]; }, valid ? D : 0, k8);
    if (valid && k8 == 0) act[f] = swiglu<dtype_x>(g, u, weight, limit);
  }
  __syncthreads();
  for (int base = 0; base < D; base += groups) {
    const int d = base + group;
    const bool valid = d < D;
    const long long row = valid ? d : 0;
    const float down = group8_dot([&](long long i) { return weight_at<format_w2>(w2e, row, i, F); },
                                  [&](long long i) { return act[i]; }, valid ? F : 0, k8);
    if (valid && k8 == 0) outr[d] = __fadd_rn(outr[d], down);
  }
  __syncthreads();  // act is rewritten by the next expert
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace moe_experts_detail

namespace entry {

template <long long hidden, long long width, long long topk, int dtype_x, int format_w1, int format_w3, int format_w2,
          int format_shared_w1, int format_shared_w3, int format_shared_w2>
__device__ __forceinline__ void moe_experts(Rows rows, Statics statics, Errors errors, Scratch x, Scratch ids,
                                            Scratch weights, WeightList w1, WeightList w3, WeightList w2,
                                            Weight shared_w1, Weight shared_w3, Weight shared_w2, Real limit,
                                            Scratch out, Scratch work, Int experts) {
#ifndef DSV41_CONTRACT_SCAN
  // The shared expert: all three of its weights or none (format −1: absent).
  constexpr bool kShared = format_shared_w1 >= 0;
  static_assert(hidden >= 1 && width >= 0 && topk >= 1, "moe_experts constants out of range");
  static_assert(kShared == (format_shared_w3 >= 0) && kShared == (format_shared_w2 >= 0),
                "the shared expert needs w1, w3 and w2");
  static_assert(moe_experts_detail::static_shared_bytes(hidden, width, topk + kShared) <= 46 * 1024,
                "the row and one expert's activation must fit static shared memory");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an act buffer");
  using namespace moe_experts_detail;
  constexpr int D = static_cast<int>(hidden), F = static_cast<int>(width), K = static_cast<int>(topk);
  constexpr int KK = K + (kShared ? 1 : 0);  // the grouped path's choices a row (the shared expert last)
  __shared__ Shared<D, F, KK> sm;
  float* xs = sm.row.xs;
  float* act = sm.row.act;

  if constexpr (F > 0) {
    if (rows <= moe_grouped::kMoeRows) {
      if (moe_grouped::run<dtype_x, format_w1, format_w3, format_w2, format_shared_w1, format_shared_w3,
                           format_shared_w2, D, F, KK>(
              sm.grouped, rows, statics, errors, x, static_cast<const int*>(ids), static_cast<const float*>(weights),
              w1, w3, w2, shared_w1, shared_w3, shared_w2, limit, static_cast<float*>(out), experts))
        return;
    } else {
      if constexpr (!kShared && moe_prefill::takes(dtype_x, format_w1, format_w3, format_w2, D, F))
        if (moe_prefill::run<dtype_x, format_w1, format_w3, format_w2, D, F, K>(
                rows, statics, errors, x, static_cast<const int*>(ids), static_cast<const float*>(weights), w1, w3,
                w2, Weight{}, Weight{}, Weight{}, limit, static_cast<float*>(out), work, experts))
          return;
    }
  }
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {  // a block a row
    float* outr = static_cast<float*>(out) + r * D;
    for (int d = threadIdx.x; d < D; d += blockDim.x) outr[d] = 0.0f;  // the sum starts at 0 (as on the CPU)
    if (row_slot(statics, r) < 0) continue;
    const int* idr = static_cast<const int*>(ids) + r * K;
    const float* wr = static_cast<const float*>(weights) + r * K;
    if constexpr (F == 0) {  // no expert columns on this rank: out stays 0, the ids are still checked
      for (int k = threadIdx.x; k < K; k += blockDim.x)
        if (idr[k] < 0 || idr[k] >= experts) report_error(errors, ERR_EXPERT);
    } else {
      __syncthreads();  // the previous row's last reads of xs
      for (int i = threadIdx.x; i < D; i += blockDim.x) xs[i] = load<dtype_x>(x, r * D + i);
      __syncthreads();
      for (int k = 0; k < K; ++k) {
        const int e = idr[k];
        if (e < 0 || e >= experts) {
          if (threadIdx.x == 0) report_error(errors, ERR_EXPERT);
          continue;
        }
        add_expert<dtype_x, format_w1, format_w3, format_w2, D, F>(xs, w1[e], w3[e], w2[e], wr[k], limit, act, outr);
      }
      // weight 1: 1·silu is silu exactly, so the bits are those of the CPU's unweighted form.
      if constexpr (kShared)
        add_expert<dtype_x, format_shared_w1, format_shared_w3, format_shared_w2, D, F>(
            xs, shared_w1, shared_w3, shared_w2, 1.0f, limit, act, outr);
    }
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
