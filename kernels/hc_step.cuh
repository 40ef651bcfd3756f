// kernels/hc_step.cuh — one sublayer's hyper-connection front in one launch (docs/ops.md "hc_step"): for an
// active row, next = hc_post(x, sub, prev), mix = hc_mix(next), out = hc_collapse_norm(next, prev), each
// as its own kernel computes it (kernels/hc_post.cuh, hc_mix.cuh, hc_collapse_norm.cuh), in one pass over
// the streams: the three read the same streams, and the collapse uses the previous sublayer's pre (prev),
// not this one's. Inactive rows get zeros in next, mix and out.
//
// Launch (common/kernel_launch_hc.cpp): block 256 threads, grid (R, G): at decode (R ≤ kStepRows) G
// blocks a row (kStepSplits at most), each owning a slice of the hidden columns d; else one block a row.
// The block's threads form two column groups (kGroups): thread t takes the columns d ≡ t mod kHalf of its
// block's slice and half of the M fn columns, so about 2·D threads a row each keep kCols·S fn loads in
// flight together (one round trip to memory for the whole fn at one row). Both groups form the S new
// stream values at d (hc_post's operations, rounded as next's dtype: the same bits in both); group 0
// stores them to next, sums their squares, collapses them with prev's pre (h, rounded as out's dtype,
// stored unnormalised to out: exact, it is out's dtype) and sums h². The block's M + 2 sums (warp sums,
// then the owning group's warps in order) go to the module's table; the row's last block
// (kernels/last_block.cuh) adds the slices in slice order (a run's bits repeat; they depend on G, fixed
// per phase); then its warp 0 finishes the mix (hc_mix.cuh finish_row: the Sinkhorn passes are serial)
// while its other warps rescale the row's out by the rmsnorm (reading it back through L2). The
// check-mode (F32) variants sum h² in the CPU's order (one f32 sum from column 0 up, as
// hc_collapse_norm's do): the last block stages the row's h in chunks and thread 0 adds them, so out
// has the CPU's bits. No dynamic shared memory.
#pragma once

#include "hc_collapse_norm.cuh"
#include "hc_mix.cuh"

namespace dsv41k {
namespace hc_step_detail {
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kGroups = 2;                       // column groups: a block's threads split the M fn columns
constexpr int kHalf = kThreads / kGroups;        // threads a group
constexpr int kGroupWarps = kHalf / 32;
// hc_mix's bounds: phases of at most kMixRows rows split a row over at most kMixSplits blocks (G, which
// common/kernel_launch_hc.cpp picks), and the last block gathers through shared memory up to kGatherBytes.
using hc_mix_detail::kGatherBytes;
constexpr int kStepRows = hc_mix_detail::kMixRows, kStepSplits = hc_mix_detail::kMixSplits;

#ifndef DSV41_CONTRACT_SCAN
// A split launch's sums, [row][block][the M fn column sums, Σ next², Σ h²], and each row's finished blocks.
template <long long M>
__device__ float g_parts[kStepRows * kStepSplits * (M + 2)];
__device__ unsigned g_done[kStepRows];

// Element i of a float buffer written by other blocks of this launch: through L2, never a stale L1 line.
template <int DT>
__device__ __forceinline__ float load_cg(const void* p, long long i) {
  if constexpr (DT == DT_F32) return __ldcg(static_cast<const float*>(p) + i);
  else return bf16_bits_to_float(__ldcg(static_cast<const unsigned short*>(p) + i));
}
#endif
}  // namespace hc_step_detail

namespace entry {

template <long long hidden, long long streams, long long sinkhorn_iters, int dtype_x, int dtype_sub, int dtype_next,
          int dtype_out, int format_fn, int format_base, int format_scale, int format_norm>
__device__ __forceinline__ void hc_step(Rows rows, Statics statics, Scratch x, Scratch sub, Scratch prev, Weight fn,
                                        Weight base, Weight scale, Weight norm, Real eps, Real hc_eps, Scratch next,
                                        Scratch mix, Scratch out) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(hidden >= 1 && hidden <= (1 << 24), "hidden out of range");
  static_assert(streams >= 1 && streams <= 8, "streams out of range for this kernel (1 .. 8: M sums a thread)");
  static_assert(sinkhorn_iters >= 1 && sinkhorn_iters <= (1 << 16), "sinkhorn_iters out of range");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an activation (BF16, or F32 in check mode)");
  static_assert(dtype_sub == dtype_x && dtype_next == dtype_x && dtype_out == dtype_x,
                "the activations of one op share a dtype");
  using namespace hc_step_detail;
  constexpr long long S = streams, M = (2 + S) * S, D = hidden, W = S * D;
  constexpr int T = kThreads;
  __shared__ float pm[M];  // prev's row: pre | post | comb
  constexpr int kCols = static_cast<int>((M + kGroups - 1) / kGroups);  // fn columns a thread
  __shared__ float part[kWarps * (kCols + 2)];
  __shared__ float sums[M + 2];
  __shared__ float result[M];
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int G = static_cast<int>(gridDim.y), g = static_cast<int>(blockIdx.y);
  if (G > 1 && (rows > kStepRows || G > kStepSplits)) return;  // a grid the table cannot hold (never launched)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // This block's columns [lo, hi).
  const long long per = (D + G - 1) / G;
  const long long lo = g * per < D ? g * per : D, hi = lo + per < D ? lo + per : D;
  float* mo = static_cast<float*>(mix) + r * M;
  if (row_slot(statics, r) < 0) {
    for (long long d = lo + tid; d < hi; d += T) {
      for (long long j = 0; j < S; ++j) store<dtype_next>(next, r * W + j * D + d, 0.0f);
      store<dtype_out>(out, r * D + d, 0.0f);
    }
    if (g == 0)
      for (int i = tid; i < M; i += T) mo[i] = 0.0f;
    return;
  }
  for (int k = tid; k < M; k += T) pm[k] = static_cast<const float*>(prev)[r * M + k];
  __syncthreads();
  const float* pre = pm;
  const float* post = pm + S;
  const float* comb = pm + 2 * S;
  // Thread t takes column group t / kHalf (kCols of the M fn columns) of its block's columns d ≡ t mod kHalf:
  // both groups form the same new streams at d (the same operations, so the same bits); group 0 also
  // stores them, collapses them and sums the squares. A thread's kCols·S fn loads go out first, together.
  const int grp = tid / kHalf, dl = tid % kHalf;
  const long long c0 = static_cast<long long>(grp) * kCols;
  float acc[kCols + 2];  // its columns' fn sums, then Σ next², Σ h² (group 0)
#pragma unroll
  for (int k = 0; k < kCols + 2; ++k) acc[k] = 0.0f;
  for (long long d = lo + dl; d < hi; d += kHalf) {
    float w[kCols][S];
#pragma unroll
    for (int k = 0; k < kCols; ++k)
#pragma unroll
      for (long long j = 0; j < S; ++j) w[k][j] = c0 + k < M ? weight_at<format_fn>(fn, c0 + k, j * D + d, W) : 0.0f;
    float xi[S], xn[S];
#pragma unroll
    for (long long i = 0; i < S; ++i) xi[i] = load<dtype_x>(x, r * W + i * D + d);
    const float a = load<dtype_sub>(sub, r * D + d);
#pragma unroll
    for (long long j = 0; j < S; ++j) {  // hc_post.cuh's operations, then its store's rounding
      float v = __fmul_rn(post[j], a);
#pragma unroll
      for (long long i = 0; i < S; ++i) v = __fadd_rn(v, __fmul_rn(comb[i * S + j], xi[i]));
      xn[j] = round_as<dtype_next>(v);
    }
#pragma unroll
    for (int k = 0; k < kCols; ++k)
#pragma unroll
      for (long long j = 0; j < S; ++j) acc[k] += xn[j] * w[k][j];
    if (grp == 0) {
      float h = 0.0f;  // hc_collapse_norm.cuh's collapse
#pragma unroll
      for (long long j = 0; j < S; ++j) {
        store<dtype_next>(next, r * W + j * D + d, xn[j]);
        acc[kCols] += xn[j] * xn[j];
        h = __fadd_rn(h, __fmul_rn(pre[j], xn[j]));
      }
      h = round_as<dtype_out>(h);
      store<dtype_out>(out, r * D + d, h);
      acc[kCols + 1] += h * h;
    }
  }
#pragma unroll
  for (int k = 0; k < kCols + 2; ++k) {
    const float v = warp_sum(acc[k]);
    if (lane == 0) part[warp * (kCols + 2) + k] = v;
  }
  __syncthreads();
  // Sum k of the block: fn column k from its group's warps, Σ next² and Σ h² from group 0's, in warp order.
  float* table = g_parts<M> + static_cast<long long>(r) * kStepSplits * (M + 2);
  for (int k = tid; k < M + 2; k += T) {
    const int owner = k < M ? k / kCols : 0, slot = k < M ? k % kCols : kCols + (k - static_cast<int>(M));
    float t = 0.0f;
    for (int w = owner * kGroupWarps; w < (owner + 1) * kGroupWarps; ++w) t += part[w * (kCols + 2) + slot];
    if (G > 1) table[g * (M + 2) + k] = t;
    else sums[k] = t;
  }
  if (G > 1) {
    if (!last_block_of_row(&g_done[r], static_cast<unsigned>(G))) return;
    // The row's last block adds every block's sums, in block order.
    if constexpr (kStepSplits * (M + 2) * 4 <= kGatherBytes) {
      __shared__ float gathered[kStepSplits * (M + 2)];
      for (int i = tid; i < G * (M + 2); i += T) gathered[i] = __ldcg(table + i);
      __syncthreads();
      for (int k = tid; k < M + 2; k += T) {
        float t = 0.0f;
        for (int s = 0; s < G; ++s) t += gathered[s * (M + 2) + k];
        sums[k] = t;
      }
    } else {
      for (int k = tid; k < M + 2; k += T) {
        float t = 0.0f;
        for (int s = 0; s < G; ++s) t += __ldcg(table + s * (M + 2) + k);
        sums[k] = t;
      }
    }
  }
  __syncthreads();
  // The collapse's rmsnorm over the whole row's out (its h, written by every block of the row), and the
  // mix's finish: served (BF16), warp 0 finishes the mix while the other warps rescale out; check mode
  // (F32) first sums h² in the CPU's order with every thread, then rescales, then finishes the mix.
  auto rescale = [&](float sumsq, int first, int stride) {
    const float inv = 1.0f / sqrtf(__fdiv_rn(sumsq, static_cast<float>(D)) + eps);
#pragma unroll 4
    for (long long d = first; d < D; d += stride) {
      const float h = load_cg<dtype_out>(out, r * D + d);
      store<dtype_out>(out, r * D + d, __fmul_rn(__fmul_rn(h, inv), weight_at<format_norm>(norm, d)));
    }
  };
  auto finish_mix = [&] {
    hc_mix_detail::finish_row<S, format_base, format_scale>(sums, sums[M], W, base, scale, sinkhorn_iters, eps,
                                                            hc_eps, result, mo, lane);
  };
  if constexpr (dtype_out == DT_F32) {
    const float sumsq =
        hc_collapse_norm_detail::cpu_order_sumsq<T>(D, tid, [&](long long d) { return load_cg<dtype_out>(out, r * D + d); });
    rescale(sumsq, tid, T);
    if (warp == 0) finish_mix();
  } else {
    if (warp == 0) finish_mix();
    else rescale(sums[M + 1], tid - 32, T - 32);
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
