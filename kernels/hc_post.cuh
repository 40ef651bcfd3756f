// kernels/hc_post.cuh — the hyper-connection update (docs/ops.md "hc_post"): for an active row,
// out[j, d] = b(post[j]·sub[d] + Σ_i C[i][j]·x[i, d]) with post = mix columns [S, 2S) and C[i][j] at
// mix column 2S + i·S + j, summed over i in order without fused multiply-add (as
// runtime/cpu/ops_hc.cpp); inactive rows get zeros. `out` is a different buffer from `x`.
//
// Launch (common/kernel_launch_hc.cpp): block 256 threads, grid (R, ceil(hidden / 256)). Thread t of
// block (r, c) owns column d = c·256 + t of row r: it reads x[i, d] for every stream and sub[d] once
// and writes out[j, d] for every stream j. The row's post and C sit in static shared memory.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace hc_post_detail {
constexpr int kThreads = 256;
}

namespace entry {

template <long long hidden, long long streams, int dtype_x, int dtype_sub, int dtype_out>
__device__ __forceinline__ void hc_post(Rows rows, Statics statics, Scratch x, Scratch sub, Scratch mix, Scratch out) {
  static_assert(hidden >= 1 && hidden <= (1 << 24), "hidden out of range");
  static_assert(streams >= 1 && streams <= 16, "streams out of range for this kernel (1 .. 16)");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an activation (BF16, or F32 in check mode)");
  static_assert(dtype_sub == DT_F32 || dtype_sub == DT_BF16, "sub is an activation (BF16, or F32 in check mode)");
  static_assert(dtype_out == DT_F32 || dtype_out == DT_BF16, "out is an activation (BF16, or F32 in check mode)");
  constexpr long long S = streams, M = (2 + S) * S, D = hidden;
  constexpr int T = hc_post_detail::kThreads;
  __shared__ float mr[M];
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int tid = threadIdx.x;
  const long long d = static_cast<long long>(blockIdx.y) * T + tid;
  const long long row_off = r * S * D;
  if (row_slot(statics, r) < 0) {
    if (d < D)
      for (long long j = 0; j < S; ++j) store<dtype_out>(out, row_off + j * D + d, 0.0f);
    return;
  }
  for (int k = tid; k < M; k += T) mr[k] = static_cast<const float*>(mix)[r * M + k];
  __syncthreads();
  if (d >= D) return;
  const float* post = mr + S;
  const float* comb = mr + 2 * S;
  float xi[S];
#pragma unroll
  for (long long i = 0; i < S; ++i) xi[i] = load<dtype_x>(x, row_off + i * D + d);
  const float a = load<dtype_sub>(sub, r * D + d);
#pragma unroll
  for (long long j = 0; j < S; ++j) {
    float v = __fmul_rn(post[j], a);
#pragma unroll
    for (long long i = 0; i < S; ++i) v = __fadd_rn(v, __fmul_rn(comb[i * S + j], xi[i]));
    store<dtype_out>(out, row_off + j * D + d, v);  // rounded by a BF16 store
  }
}

}  // namespace entry
}  // namespace dsv41k
