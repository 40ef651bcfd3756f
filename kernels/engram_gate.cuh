// kernels/engram_gate.cuh — Engram's gate on every stream (docs/ops.md "engram_gate"), in place:
// x[r, i] ← b(h + g_i·value) with g_i from the normalised dot of h·(q⊙k) and the stream's key.
//
// Launch (common/kernel_launch_engram.cpp): block 256 threads, grid (R, streams): block (r, i) owns
// stream i of row r; three block sums (h², key², the weighted dot), then every thread updates its
// columns. Inactive rows are left as they are (their streams are zeros already).
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace engram_gate_detail {
constexpr int kThreads = 256;
}

namespace entry {

template <long long hidden, long long streams, int dtype_x, int format_q_weight, int format_k_weight, int dtype_out>
__device__ __forceinline__ void engram_gate(Rows rows, Statics statics, Scratch x, Scratch kv, Weight q_weight,
                                            Weight k_weight, Real eps, Scratch out) {
  static_assert(hidden >= 1 && hidden <= (1 << 20), "hidden out of range");
  static_assert(streams >= 1 && streams <= 64, "streams out of range");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an activation");
  static_assert(dtype_out == dtype_x, "the gate updates the streams in place");
  static_assert(format_q_weight == WF_BF16 || format_q_weight == WF_F32, "q_weight is BF16 or F32");
  static_assert(format_k_weight == WF_BF16 || format_k_weight == WF_F32, "k_weight is BF16 or F32");
  constexpr int T = engram_gate_detail::kThreads;
  __shared__ float scratch[32];
  const long long r = blockIdx.x, i = blockIdx.y;
  if (r >= rows || i >= streams) return;
  if (row_slot(statics, r) < 0) return;  // an inactive row is left as it is, as the CPU op does
  const long long xb = (r * streams + i) * hidden;
  const float* row_kv = static_cast<const float*>(kv) + r * (streams + 1) * hidden;
  const float* key = row_kv + i * hidden;
  const float* value = row_kv + streams * hidden;
  float hh = 0.0f, kk = 0.0f, dot = 0.0f;
  for (long long d = threadIdx.x; d < hidden; d += T) {
    const float h = load<dtype_x>(x, xb + d), k = key[d];
    const float w = weight_at<format_q_weight>(q_weight, i * hidden + d) * weight_at<format_k_weight>(k_weight, i * hidden + d);
    hh += h * h;
    kk += k * k;
    dot += h * w * k;
  }
  hh = block_sum(hh, scratch);
  kk = block_sum(kk, scratch);
  dot = block_sum(dot, scratch);
  const float n = static_cast<float>(hidden);
  dot *= rsqrtf(hh / n + eps) * rsqrtf(kk / n + eps) * rsqrtf(n);
  const float sign = dot > 0.0f ? 1.0f : (dot < 0.0f ? -1.0f : 0.0f);
  const float g = 1.0f / (1.0f + expf(-sign * sqrtf(fmaxf(fabsf(dot), 1e-6f))));
  __syncthreads();  // every thread has read its h before any is overwritten (out may be x)
  for (long long d = threadIdx.x; d < hidden; d += T) store<dtype_out>(out, xb + d, load<dtype_x>(x, xb + d) + g * value[d]);
}

}  // namespace entry
}  // namespace dsv41k
