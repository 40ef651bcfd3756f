// kernels/markov_logits.cuh — DSpark's Markov head (docs/ops.md "DSpark"): for the rows of each drafting
// sequence in order, out[r] = base[r] + head · embed[prev], where prev is the bonus token for the
// sequence's first row and the previous row's greedy pick (the larger logit, the lower id on ties, NaN
// never wins) after that. Inactive rows get zeros. Mirrors runtime/cpu/ops_draft.cpp: each Markov term
// is the CPU's eight-way dot (runtime/cpu/ops_common.cpp dot, lanes summed in its order, the tail last),
// so out and the picks have the CPU's bits.
//
// Launch (common/kernel_launch_draft.cpp): block 1024 threads, grid (R): the block of a sequence's first
// row walks its rows one after the other (each pick feeds the next row); thread t owns vocabulary rows
// t, t+1024, ... and computes each dot alone, in the CPU's lane order. The blocks of the other rows only
// check that their row belongs to a run (else ERR_STATICS and zeros). A token outside the vocabulary
// reports ERR_TOKEN; its row and the rest of its run are written as zeros.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace markov_logits_detail {
constexpr int kThreads = 1024;

#ifndef DSV41_CONTRACT_SCAN
// The CPU's pick rule as a reduction: a beats b when its value is larger, or equal with a lower id, or
// b's is NaN and a's is not (so the pick is the lowest id of the largest non-NaN value; id 0 if all are NaN).
__device__ __forceinline__ bool beats(float va, int ia, float vb, int ib) {
  if (va != va) return false;
  if (vb != vb) return true;
  return va > vb || (va == vb && ia < ib);
}
#endif
}  // namespace markov_logits_detail

namespace entry {

template <long long rank, int format_embed, int format_head>
__device__ __forceinline__ void markov_logits(Rows rows, Statics statics, Errors errors, Scratch base, Weight embed,
                                              Int embed_rows, Weight head, Int head_rows, Int vocab, Scratch out) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(rank >= 1 && rank <= 8192, "rank out of range (the embedding row lives in static shared memory)");
  using namespace markov_logits_detail;
  constexpr int T = kThreads;
  constexpr long long R8 = rank & ~7ll;
  __shared__ float e[rank];
  __shared__ float best_v[32];
  __shared__ int best_i[32];
  __shared__ int pick;
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const float* base_f = static_cast<const float*>(base);
  float* out_f = static_cast<float*>(out);
  auto zeros = [&](long long row) {
    for (long long v = threadIdx.x; v < vocab; v += T) out_f[row * vocab + v] = 0.0f;
  };
  auto in_run = [&](long long row, long long f) { return row_slot(statics, row) >= 0 && row_first(statics, row) == f; };
  if (row_slot(statics, r) < 0) return zeros(r);
  const long long f = row_first(statics, r);
  if (f != r) {  // not a run's first row: its leader writes it, if it belongs to a run
    bool member = f >= 0 && f < r && row_first(statics, f) == f && row_slot(statics, f) >= 0;
    for (long long q = f + 1; member && q <= r; ++q) member = in_run(q, f);
    if (!member) {
      if (threadIdx.x == 0) report_error(errors, ERR_STATICS);
      zeros(r);
    }
    return;
  }
  if (embed_rows < vocab || head_rows < vocab) {  // the tables must cover the vocabulary
    if (threadIdx.x == 0) report_error(errors, ERR_CAPACITY);
    for (long long q = r; q < rows && (q == r || in_run(q, r)); ++q) zeros(q);
    return;
  }
  int prev = row_token(statics, r);  // the bonus token precedes the first draft
  for (long long q = r; q < rows && (q == r || in_run(q, r)); ++q) {
    if (prev < 0 || prev >= vocab) {
      if (threadIdx.x == 0) report_error(errors, ERR_TOKEN);
      for (; q < rows && (q == r || in_run(q, r)); ++q) zeros(q);
      return;
    }
    __syncthreads();  // e and pick of the previous row are no longer read
    for (long long i = threadIdx.x; i < rank; i += T) e[i] = weight_at<format_embed>(embed, prev, i, rank);
    __syncthreads();
    float bv = __int_as_float(0x7fc00000);
    int bi = 0;
    for (long long v = threadIdx.x; v < vocab; v += T) {
      float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (long long i = 0; i < R8; i += 8) {
        float w[8];
        weight_vec4<format_head, rank % 4 == 0>(head, v, i, rank, w);
        weight_vec4<format_head, rank % 4 == 0>(head, v, i + 4, rank, w + 4);
#pragma unroll
        for (int k = 0; k < 8; ++k) s[k] = __fadd_rn(s[k], __fmul_rn(w[k], e[i + k]));
      }
      float tail = 0.0f;
      for (long long i = R8; i < rank; ++i) tail = __fadd_rn(tail, __fmul_rn(weight_at<format_head>(head, v, i, rank), e[i]));
      const float dot = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(s[0], s[1]), __fadd_rn(s[2], s[3])),
                                            __fadd_rn(__fadd_rn(s[4], s[5]), __fadd_rn(s[6], s[7]))), tail);
      const float logit = __fadd_rn(base_f[q * vocab + v], dot);
      out_f[q * vocab + v] = logit;
      if (beats(logit, static_cast<int>(v), bv, bi)) bv = logit, bi = static_cast<int>(v);
    }
    // Block-wide pick: warps, then warp 0 over the warps' winners.
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (beats(ov, oi, bv, bi)) bv = ov, bi = oi;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) best_v[warp] = bv, best_i[warp] = bi;
    __syncthreads();
    if (warp == 0) {
      bv = best_v[lane], bi = best_i[lane];  // T / 32 = 32 warps: every lane holds one
      for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (beats(ov, oi, bv, bi)) bv = ov, bi = oi;
      }
      if (lane == 0) pick = bi;
    }
    __syncthreads();
    prev = pick;
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
