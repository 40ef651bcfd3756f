// kernels/rmsnorm_rope.cuh — RMSNorm of a row, then RoPE of its last rope_dim dims, in one launch
// (docs/ops.md "rmsnorm_rope": the window row kv of docs/model.md §6). For an active row at position p,
//   n = b(x·(mean(x²) + eps)^−½·w)   (fp32, b only when `out` is BF16: the rmsnorm op's store),
//   out = b(rope(n, p))              (kernels/rope.cuh's rotation of one head of `width` dims),
// the formula of rmsnorm into `out` followed by an in-place rope of `out` (the CPU op's bits are exactly
// theirs; this kernel's block sum is in another order than rmsnorm.cuh's); inactive rows get zeros. `out` is not `x`.
//
// Launch (common/kernel_launch_rows.cpp): block 256 threads, grid (R): one block per row. A thread
// holds whole pairs (kPairs of them) of x and w in registers, loaded before anything waits; threads
// 0 .. rope_dim/2 − 1 then compute the row's cos/sin table (fp64, rope_detail) into static shared
// memory while the loads are in flight, and the block sum's barriers publish it. No dynamic shared
// memory. A negative position of an active row reports ERR_STATICS (the row is still written).
#pragma once

#include "kernel_abi.cuh"
#include "rmsnorm.cuh"
#include "rope.cuh"

namespace dsv41k {
namespace rmsnorm_rope_detail {
constexpr int kThreads = 256;
}

namespace entry {

template <long long width, long long rope_dim, int dtype_x, int format_w, int dtype_out>
__device__ __forceinline__ void rmsnorm_rope(Rows rows, Statics statics, Scratch x, Weight w, Real eps, Scratch out,
                                             Real theta, Real yarn_factor, Int yarn_original, Real beta_fast,
                                             Real beta_slow, Errors errors) {
  static_assert(width >= 2 && width <= 8192 && width % 2 == 0, "width must be even, at most 8192 (pairs in registers)");
  static_assert(rope_dim >= 0 && rope_dim <= width && rope_dim % 2 == 0, "rope_dim must be even and fit the row");
  static_assert(rope_dim / 2 <= rmsnorm_rope_detail::kThreads, "rope_dim too large for one pass of the block");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is F32 or BF16");
  static_assert(dtype_out == DT_F32 || dtype_out == DT_BF16, "out is an activation (BF16, or F32 in check mode)");
  constexpr int T = rmsnorm_rope_detail::kThreads;
  constexpr long long P = rope_dim / 2, O = width - rope_dim;
  constexpr int kPairs = static_cast<int>((width / 2 + T - 1) / T);
  __shared__ float red[32];
  __shared__ float cs[P > 0 ? P : 1], sn[P > 0 ? P : 1];
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int tid = threadIdx.x;
  const long long off = r * width;
  if (rmsnorm_detail::zero_inactive_row<dtype_out>(statics, r, out, width)) return;
  float a[kPairs], b[kPairs], wa[kPairs], wb[kPairs];
  float sq = 0.0f;
#pragma unroll
  for (int j = 0; j < kPairs; ++j) {
    const long long e = 2 * (tid + static_cast<long long>(j) * T);
    a[j] = b[j] = wa[j] = wb[j] = 0.0f;
    if (e < width) {
      a[j] = load<dtype_x>(x, off + e);
      b[j] = load<dtype_x>(x, off + e + 1);
      wa[j] = weight_at<format_w>(w, e);
      wb[j] = weight_at<format_w>(w, e + 1);
    }
  }
  const long long position = row_position(statics, r);
  if (position < 0 && tid == 0) report_error(errors, ERR_STATICS);
  if (tid < P)
    rope_detail::table_entry({theta, yarn_factor, yarn_original, beta_fast, beta_slow}, rope_dim, tid, position, cs, sn);
  // Each thread sums its pairs' squares: not rmsnorm.cuh's order, so not its bits (an fp32 sum's order is
  // free; the CPU op's bits are rmsnorm + rope exactly).
#pragma unroll
  for (int j = 0; j < kPairs; ++j) sq += a[j] * a[j] + b[j] * b[j];
  const float sum = block_sum(sq, red);  // its barriers also publish cs/sn
  const float inv = 1.0f / sqrtf(__fdiv_rn(sum, static_cast<float>(width)) + eps);
#pragma unroll
  for (int j = 0; j < kPairs; ++j) {
    const long long e = 2 * (tid + static_cast<long long>(j) * T);
    if (e >= width) continue;
    const float n0 = round_as<dtype_out>(__fmul_rn(__fmul_rn(a[j], inv), wa[j]));
    const float n1 = round_as<dtype_out>(__fmul_rn(__fmul_rn(b[j], inv), wb[j]));
    float o0 = n0, o1 = n1;
    if (e >= O) {
      const long long i = (e - O) >> 1;
      rope_detail::rotate_pair(n0, n1, cs[i], sn[i], o0, o1);
    }
    store<dtype_out>(out, off + e, o0);
    store<dtype_out>(out, off + e + 1, o1);
  }
}

}  // namespace entry
}  // namespace dsv41k
