// kernels/markov_pick.cuh — the greedy pick of one step of DSpark's Markov head (docs/ops.md "DSpark"):
// for the row at index `step` of each drafting sequence's run, picks[r] = the id of its largest logit
// (the lower id on ties, NaN never wins: runtime/generate.h greedy_token), which the next step's
// markov_logits reads. Other rows are left as they are.
//
// Launch (common/kernel_launch_draft.cpp): block 1024 threads, grid (R): one block per row; each thread
// keeps the best of its strided ids, then warps and the block reduce with the same rule. A row whose
// statics do not make it part of a run reports ERR_STATICS.
#pragma once

#include "kernel_abi.cuh"
#include "markov_logits.cuh"

namespace dsv41k {
namespace markov_pick_detail {
constexpr int kThreads = 1024;

#ifndef DSV41_CONTRACT_SCAN
// a beats b when its value is larger, or equal with a lower id, or b's is NaN and a's is not: the pick is
// the lowest id of the largest non-NaN value (id 0 when every value is NaN), as the CPU's scan gives.
__device__ __forceinline__ bool beats(float va, int ia, float vb, int ib) {
  if (va != va) return false;
  if (vb != vb) return true;
  return va > vb || (va == vb && ia < ib);
}
__device__ __forceinline__ void warp_best(float& v, int& i) {
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (beats(ov, oi, v, i)) v = ov, i = oi;
  }
}
#endif
}  // namespace markov_pick_detail

namespace entry {

template <int dtype_logits, int dtype_picks>
__device__ __forceinline__ void markov_pick(Rows rows, Statics statics, Errors errors, Scratch logits, Int step,
                                            Int vocab, Scratch picks) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(dtype_logits == DT_F32 && dtype_picks == DT_I32, "logits are F32, picks token ids");
  using namespace markov_pick_detail;
  static_assert(kThreads == 32 * 32, "warp 0 reduces one value per warp");
  __shared__ float best_v[32];
  __shared__ int best_i[32];
  const long long r = blockIdx.x;
  if (r >= rows || row_slot(statics, r) < 0) return;
  const long long index = markov_logits_detail::run_index(statics, r);
  if (index != step) {
    if (index < 0 && threadIdx.x == 0) report_error(errors, ERR_STATICS);
    return;
  }
  const float* row = static_cast<const float*>(logits) + r * vocab;
  float bv = __int_as_float(0x7fc00000);  // NaN: beaten by any value
  int bi = 0;
  for (long long v = threadIdx.x; v < vocab; v += kThreads)
    if (beats(row[v], static_cast<int>(v), bv, bi)) bv = row[v], bi = static_cast<int>(v);
  warp_best(bv, bi);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) best_v[warp] = bv, best_i[warp] = bi;
  __syncthreads();
  if (warp == 0) {
    bv = best_v[lane], bi = best_i[lane];
    warp_best(bv, bi);
    if (lane == 0) static_cast<int*>(picks)[r] = bi;
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
