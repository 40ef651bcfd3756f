// kernels/markov_logits.cuh — one step of DSpark's Markov head (docs/ops.md "DSpark"): for the row at
// index `step` of each drafting sequence's run, out[r] = base[r] + head · embed[prev], where prev is the
// bonus token (step 0) or picks[r − 1], the previous row's pick that markov_pick wrote. Rows at other
// steps are left as they are; inactive rows get zeros. Mirrors runtime/cpu/ops_draft.cpp: each Markov
// term is the CPU's eight-way dot (runtime/cpu/ops_common.cpp dot, lanes summed in its order, the tail
// last), so out has the CPU's bits.
//
// Launch (common/kernel_launch_draft.cpp): block 256 threads, grid (ceil(vocab / 256), R): thread t of
// block (c, r) owns vocabulary row c·256 + t of phase row r and computes its dot alone, in the CPU's lane
// order (BF16 rows: 16-byte loads), so the whole device reads the Markov head at once. A row whose
// statics do not make it part of a run reports ERR_STATICS, a prev outside the vocabulary ERR_TOKEN,
// tables shorter than the vocabulary ERR_CAPACITY; the row's columns are then zeros.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace markov_logits_detail {
constexpr int kThreads = 256;

#ifndef DSV41_CONTRACT_SCAN
// Row r's index in its run (rows first(r) .. r, all active and naming first(r)), or -1.
__device__ __forceinline__ long long run_index(Statics statics, long long r) {
  const long long f = row_first(statics, r);
  if (f < 0 || f > r) return -1;
  for (long long q = f; q <= r; ++q)
    if (row_slot(statics, q) < 0 || row_first(statics, q) != f) return -1;
  return r - f;
}

// Elements i .. i + 7 of head row v (i a multiple of 8): one 16-byte load for BF16 rows of a multiple of 8
// (device tensors are 256-aligned), else weight_vec4 twice; the same values as weight_at.
template <int FMT, long long rank>
__device__ __forceinline__ void head_row8(Weight w, long long v, long long i, float* out) {
  if constexpr (FMT == WF_BF16 && rank % 8 == 0) {
    const uint4 q = __ldg(reinterpret_cast<const uint4*>(static_cast<const unsigned short*>(w.data) + v * rank + i));
    const unsigned words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {  // little-endian: the lower address is the low half
      out[2 * k] = __uint_as_float(words[k] << 16);
      out[2 * k + 1] = __uint_as_float(words[k] & 0xFFFF0000u);
    }
  } else {
    weight_vec4<FMT, rank % 4 == 0>(w, v, i, rank, out);
    weight_vec4<FMT, rank % 4 == 0>(w, v, i + 4, rank, out + 4);
  }
}
#endif
}  // namespace markov_logits_detail

namespace entry {

template <long long rank, int format_embed, int format_head, int dtype_picks>
__device__ __forceinline__ void markov_logits(Rows rows, Statics statics, Errors errors, Scratch base, Weight embed,
                                              Int embed_rows, Weight head, Int head_rows, Scratch picks, Int step,
                                              Int vocab, Scratch out) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(rank >= 1 && rank <= 8192, "rank out of range (the embedding row lives in static shared memory)");
  static_assert(dtype_picks == DT_I32, "picks are token ids");
  using namespace markov_logits_detail;
  constexpr long long R8 = rank & ~7ll;
  __shared__ float e[rank];
  const long long r = blockIdx.y;
  const long long v = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (r >= rows) return;
  float* out_f = static_cast<float*>(out);
  const bool first_block = blockIdx.x == 0 && threadIdx.x == 0;
  if (row_slot(statics, r) < 0) {
    if (v < vocab) out_f[r * vocab + v] = 0.0f;
    return;
  }
  const long long index = run_index(statics, r);
  if (index != step) {
    if (index < 0) {
      if (first_block) report_error(errors, ERR_STATICS);
      if (v < vocab) out_f[r * vocab + v] = 0.0f;
    }
    return;  // another step's row
  }
  const int prev = index == 0 ? row_token(statics, r) : static_cast<const int*>(picks)[r - 1];
  if (prev < 0 || prev >= vocab || embed_rows < vocab || head_rows < vocab) {
    if (first_block) report_error(errors, prev < 0 || prev >= vocab ? ERR_TOKEN : ERR_CAPACITY);
    if (v < vocab) out_f[r * vocab + v] = 0.0f;
    return;
  }
  for (long long i = threadIdx.x; i < rank; i += kThreads) e[i] = weight_at<format_embed>(embed, prev, i, rank);
  __syncthreads();
  if (v >= vocab) return;
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll 4
  for (long long i = 0; i < R8; i += 8) {
    float w[8];
    head_row8<format_head, rank>(head, v, i, w);
#pragma unroll
    for (int k = 0; k < 8; ++k) s[k] = __fadd_rn(s[k], __fmul_rn(w[k], e[i + k]));
  }
  float tail = 0.0f;
  for (long long i = R8; i < rank; ++i)
    tail = __fadd_rn(tail, __fmul_rn(weight_at<format_head>(head, v, i, rank), e[i]));
  const float dot = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(s[0], s[1]), __fadd_rn(s[2], s[3])),
                                        __fadd_rn(__fadd_rn(s[4], s[5]), __fadd_rn(s[6], s[7]))),
                              tail);
  out_f[r * vocab + v] = __fadd_rn(static_cast<const float*>(base)[r * vocab + v], dot);
#endif
}

}  // namespace entry
}  // namespace dsv41k
