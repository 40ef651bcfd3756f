// kernels/hc_collapse_norm.cuh — collapse then RMSNorm (docs/ops.md "hc_collapse_norm"): for an active
// row, h = b(Σ_s pre[s]·x[s]) (fp32 sum over the streams in order, rounded when out is BF16, pre =
// mix columns [0, S)), out = b(h·(mean(h²) + eps)^−½·norm); inactive rows get zeros.
//
// Launch (common/kernel_launch_hc.cpp): block 512 threads, grid (R, G): G = 16 blocks per row at decode
// (R ≤ 16), else one block per row (also the head's norm). The body takes any G. Every block forms the
// whole row's sum of squares itself (the same operations in every block, so the same bits), then writes
// out only for its slice of the columns, forming h again (the same fp32 operations, so the same bits)
// instead of keeping the row in shared memory. So a split row needs no handoff between blocks (no table,
// no counter, no serial rescale of the row by one block): the row's inputs are read once from memory and
// G − 1 more times from L2. The served (BF16) variants sum the squares in a fast order, not the CPU's
// (within the op tests' tolerances):
// with D a multiple of 8 and S ≤ 16 (kVecStreams), thread t the 8-column vectors v ≡ t (mod 512), every
// stream's 16-byte loads of kVecUnroll vectors in flight together with the row's pre (read by every
// thread: no shared-memory round trip before the loads), else thread t the columns d ≡ t (mod 512), kUnroll
// at a time; then the block-wide sum. Each block loads its slice's norm weights before the row's loads (their
// latency hides under the row's). The check-mode (F32) variants, the oracle mode, sum them
// in exactly the CPU's order (runtime/cpu/ops_common.cpp rms_norm: one f32 sum from column 0 up, no
// fused multiply-add), a chunk of T columns at a time staged in shared memory and added by thread 0,
// so their output has the CPU's bits: a packed cache code downstream (the official caches quantize
// check mode's values) cannot flip on this op's rounding. A run's bits repeat. No dynamic shared memory.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace hc_collapse_norm_detail {
constexpr int kThreads = 512;
constexpr int kUnroll = 8;       // columns a thread has in flight while it sums the squares (scalar path)
constexpr int kVecUnroll = 2;    // 8-column vectors a thread has in flight, every stream's (vector path)
constexpr int kVecStreams = 16;  // the vector path holds the row's pre in registers up to this many streams

// b(Σ_s pre[s]·x[s, d]) as runtime/cpu/ops_hc.cpp forms it (no fused multiply-add).
template <long long hidden, long long streams, int dtype_x, int dtype_out>
__device__ __forceinline__ float collapse(const void* x, long long row_off, const float* pre, long long d) {
  float h = 0.0f;
#pragma unroll
  for (long long s = 0; s < streams; ++s) h = __fadd_rn(h, __fmul_rn(pre[s], load<dtype_x>(x, row_off + s * hidden + d)));
  return round_as<dtype_out>(h);
}

// Σ h² of the row by the block's threads in the vector path's order (the same in every block), for BF16 x
// with D % 8 == 0: thread t takes the vectors of 8 columns v ≡ t (mod kThreads), kVecUnroll at a time with
// every stream's loads issued before any add. Returns the thread's part.
template <long long hidden, long long streams>
__device__ __forceinline__ float vector_sumsq(const void* x, long long row_off, const float* pre) {
  constexpr long long S = streams, D = hidden, Dv = D / 8;
  const uint4* xv = reinterpret_cast<const uint4*>(static_cast<const unsigned short*>(x) + row_off);
  float sq = 0.0f;
  for (long long v0 = threadIdx.x; v0 < Dv; v0 += static_cast<long long>(kThreads) * kVecUnroll) {
    uint4 q[kVecUnroll][S];
#pragma unroll
    for (int u = 0; u < kVecUnroll; ++u) {
      const long long v = v0 + static_cast<long long>(u) * kThreads;
#pragma unroll
      for (long long s = 0; s < S; ++s)
        if (v < Dv) q[u][s] = xv[s * Dv + v];
    }
#pragma unroll
    for (int u = 0; u < kVecUnroll; ++u) {
      if (v0 + static_cast<long long>(u) * kThreads >= Dv) continue;
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        float h = 0.0f;  // collapse() of column 8v + e: the same operations
#pragma unroll
        for (long long s = 0; s < S; ++s) {
          const unsigned word = (&q[u][s].x)[e / 2];
          const float xs = __uint_as_float(e % 2 == 0 ? word << 16 : word & 0xFFFF0000u);
          h = __fadd_rn(h, __fmul_rn(pre[s], xs));
        }
        h = bf16_round(h);
        sq += h * h;
      }
    }
  }
  return sq;
}

// Slice g of G of row blockIdx.x (the entry: blockIdx.y of gridDim.y).
template <long long hidden, long long streams, int dtype_x, int format_norm, int dtype_out>
__device__ __forceinline__ void collapse_blocks(Rows rows, Statics statics, Scratch x, Scratch mix, Weight norm,
                                                Real eps, Scratch out, int g, int G) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(hidden >= 1 && hidden <= (1 << 24), "hidden out of range");
  static_assert(streams >= 1 && streams <= 64, "streams out of range");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an activation (BF16, or F32 in check mode)");
  static_assert(dtype_out == DT_F32 || dtype_out == DT_BF16, "out is an activation (BF16, or F32 in check mode)");
  constexpr long long S = streams, M = (2 + S) * S, D = hidden;
  constexpr int T = kThreads;
  __shared__ float red[32];
  __shared__ float pre[S];
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int tid = threadIdx.x;
  // This block's columns [lo, hi).
  const long long per = (D + G - 1) / G;
  const long long lo = g * per < D ? g * per : D, hi = lo + per < D ? lo + per : D;
  if (row_slot(statics, r) < 0) {
    for (long long d = lo + tid; d < hi; d += T) store<dtype_out>(out, r * D + d, 0.0f);
    return;
  }
  const float* mix_row = static_cast<const float*>(mix) + r * M;
  // The first column of this block's slice: its norm weight is loaded now, its latency under the row's.
  const long long d0 = lo + tid;
  const float norm0 = d0 < hi ? weight_at<format_norm>(norm, d0) : 0.0f;
  const long long row_off = r * S * D;
  float sum;
  constexpr bool kVectorPath = dtype_x == DT_BF16 && dtype_out == DT_BF16 && D % 8 == 0 && S <= kVecStreams;
  if constexpr (kVectorPath) {
    float p[S];  // every thread reads the row's pre itself (one L1 line), beside the row's loads
#pragma unroll
    for (long long s = 0; s < S; ++s) p[s] = mix_row[s];
    if (tid < S) pre[tid] = mix_row[tid];  // for the slice's pass below (the block sum's barriers order it)
    sum = block_sum(vector_sumsq<hidden, streams>(x, row_off, p), red);
  } else {
    for (int s = tid; s < S; s += T) pre[s] = mix_row[s];
    __syncthreads();
    if constexpr (dtype_out == DT_F32) {
      __shared__ float staged[T];
      float seq = 0.0f;  // thread 0's running sum, in the CPU's order
      for (long long c = 0; c < D; c += T) {
        if (c + tid < D) staged[tid] = collapse<hidden, streams, dtype_x, dtype_out>(x, row_off, pre, c + tid);
        __syncthreads();
        if (tid == 0) {
          const int n = D - c < T ? static_cast<int>(D - c) : T;
          for (int i = 0; i < n; ++i) seq = __fadd_rn(seq, __fmul_rn(staged[i], staged[i]));
        }
        __syncthreads();
      }
      if (tid == 0) red[0] = seq;
      __syncthreads();
      sum = red[0];
    } else {
      float sq = 0.0f;
#pragma unroll(kUnroll)
      for (long long d = tid; d < D; d += T) {
        const float h = collapse<hidden, streams, dtype_x, dtype_out>(x, row_off, pre, d);
        sq += h * h;
      }
      sum = block_sum(sq, red);
    }
  }
  const float inv = 1.0f / sqrtf(__fdiv_rn(sum, static_cast<float>(D)) + eps);
  for (long long d = d0; d < hi; d += T) {
    const float h = collapse<hidden, streams, dtype_x, dtype_out>(x, row_off, pre, d);
    const float w = d == d0 ? norm0 : weight_at<format_norm>(norm, d);
    store<dtype_out>(out, r * D + d, __fmul_rn(__fmul_rn(h, inv), w));
  }
#endif
}
}  // namespace hc_collapse_norm_detail

namespace entry {

template <long long hidden, long long streams, int dtype_x, int format_norm, int dtype_out>
__device__ __forceinline__ void hc_collapse_norm(Rows rows, Statics statics, Scratch x, Scratch mix, Weight norm,
                                                 Real eps, Scratch out) {
#ifndef DSV41_CONTRACT_SCAN
  hc_collapse_norm_detail::collapse_blocks<hidden, streams, dtype_x, format_norm, dtype_out>(
      rows, statics, x, mix, norm, eps, out, static_cast<int>(blockIdx.y), static_cast<int>(gridDim.y));
#endif
}

}  // namespace entry
}  // namespace dsv41k
