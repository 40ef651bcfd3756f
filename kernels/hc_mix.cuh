// kernels/hc_mix.cuh — HCmix of docs/model.md §5 (docs/ops.md "hc_mix"): for an active row,
// ρ = (mean(x²) + eps)^−½ over its S·D values, m = ρ·(x·fnᵀ) (M = (2+S)·S columns),
// pre = sigmoid(scale₀·m + base) + hc_eps, post = 2·sigmoid(scale₁·m + base),
// C = scale₂·m + base followed by the Sinkhorn passes; out F32 [R, M]. Inactive rows get zeros.
//
// Launch (common/kernel_launch_hc.cpp): block 512 threads = 16 warps, grid (R, G): G = kMixSplits blocks
// per row at decode (R ≤ kMixRows), each summing a slice of the row's S·D inputs (whole vectors of
// four), else one block per row. A block walks its inputs in passes of up to kCols columns of fn
// (threads strided over the inputs four at a time, one vector load of fn per column), reduces each
// column warp-wise then across warps in a fixed order; a split row's blocks hand their sums to the
// module's table and the row's last block (a counter per row, reset by that block) gathers the table
// into shared memory in one round trip and adds the slices in order, so a run's bits repeat. ρ, the
// activations (a lane a column) and the Sinkhorn passes on the S×S comb (a lane an element while
// S·S ≤ 32, else a lane a row or column) run in warp 0, in the exact order and rounding points of
// runtime/cpu/ops_hc.cpp. No dynamic shared memory.
#pragma once

#include "last_block.cuh"

namespace dsv41k {
namespace hc_mix_detail {
constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kMixRows = 16;    // phases of at most this many rows split a row over blocks
constexpr int kMixSplits = 16;  // blocks per split row

#ifndef DSV41_CONTRACT_SCAN
// A split launch's sums, [row][split][the M column sums, then Σx²], and each row's finished blocks.
template <long long M>
__device__ float g_sums[kMixRows * kMixSplits * (M + 1)];
__device__ unsigned g_finished[kMixRows];
#endif

__device__ __forceinline__ float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

// The Sinkhorn passes of docs/model.md §5 on an S×S comb in shared memory, in place, by the lanes of
// one warp: lane i normalises row i, lane j column j (runtime/cpu/ops_hc.cpp's sinkhorn does the rows,
// then the columns, one after another; each row's and each column's operations are the same here, in
// the same order, so the bits are too). Every lane of the warp calls it.
template <long long S>
__device__ __forceinline__ void sinkhorn(float* c, long long iters, float eps, int lane) {
  static_assert(S <= 32, "a lane per row");
  __syncwarp();  // the comb was written by other lanes
  if (lane < S) {  // row softmax, then + eps
    float* row = c + lane * S;
    float top = row[0];
    for (long long j = 1; j < S; ++j) top = row[j] > top ? row[j] : top;  // std::max_element: first maximum
    float total = 0.0f;
    for (long long j = 0; j < S; ++j) total = __fadd_rn(total, (row[j] = expf(__fsub_rn(row[j], top))));
    for (long long j = 0; j < S; ++j) row[j] = __fadd_rn(__fdiv_rn(row[j], total), eps);
  }
  auto columns = [&] {
    __syncwarp();
    if (lane < S) {
      float total = 0.0f;
      for (long long i = 0; i < S; ++i) total = __fadd_rn(total, c[i * S + lane]);
      const float den = __fadd_rn(total, eps);
      for (long long i = 0; i < S; ++i) c[i * S + lane] = __fdiv_rn(c[i * S + lane], den);
    }
  };
  auto rows = [&] {
    __syncwarp();
    if (lane < S) {
      float total = 0.0f;
      for (long long j = 0; j < S; ++j) total = __fadd_rn(total, c[lane * S + j]);
      const float den = __fadd_rn(total, eps);
      for (long long j = 0; j < S; ++j) c[lane * S + j] = __fdiv_rn(c[lane * S + j], den);
    }
  };
  columns();
  for (long long it = 1; it < iters; ++it) {
    rows();
    columns();
  }
  __syncwarp();
}

// The same passes with the comb in registers, for S·S ≤ 32: lane i·S + j holds C[i][j] and gathers its
// row's or column's values with shuffles, adding them in the CPU's order (every lane of a row forms
// the same total, so the bits are those of sinkhorn() above) and divides its own element: no shared
// memory round trip and one division a lane per pass (the Sinkhorn's 2·iters − 1 dependent passes are
// the serial tail of the row). Every lane of the warp calls it.
template <long long S>
__device__ __forceinline__ void sinkhorn_lanes(float* c, long long iters, float eps, int lane) {
  static_assert(S * S <= 32, "a lane per element");
  constexpr unsigned kAll = 0xffffffffu;
  constexpr int N = static_cast<int>(S);
  __syncwarp();  // the comb was written by other lanes
  const int e = lane < N * N ? lane : 0;  // lanes past the comb shadow element 0 (their results unused)
  const int i = e / N, j = e % N;
  float v = c[e];
  float top = __shfl_sync(kAll, v, i * N);  // row softmax, then + eps
#pragma unroll
  for (int k = 1; k < N; ++k) {
    const float t = __shfl_sync(kAll, v, i * N + k);
    top = t > top ? t : top;  // std::max_element: the first maximum (the same value)
  }
  v = expf(__fsub_rn(v, top));
  float total = 0.0f;
#pragma unroll
  for (int k = 0; k < N; ++k) total = __fadd_rn(total, __shfl_sync(kAll, v, i * N + k));
  v = __fadd_rn(__fdiv_rn(v, total), eps);
  auto pass = [&](int first, int stride) {  // divide by the sum of the line (first, stride) + eps
    float t = 0.0f;
#pragma unroll
    for (int k = 0; k < N; ++k) t = __fadd_rn(t, __shfl_sync(kAll, v, first + k * stride));
    v = __fdiv_rn(v, __fadd_rn(t, eps));
  };
  pass(j, N);  // columns
  for (long long it = 1; it < iters; ++it) {
    pass(i * N, 1);  // rows
    pass(j, N);      // columns
  }
  if (lane < N * N) c[lane] = v;
  __syncwarp();
}
}  // namespace hc_mix_detail

namespace entry {

template <long long hidden, long long streams, long long sinkhorn_iters, int dtype_x, int format_fn, int format_base,
          int format_scale>
__device__ __forceinline__ void hc_mix(Rows rows, Statics statics, Scratch x, Weight fn, Weight base, Weight scale,
                                       Real eps, Real hc_eps, Scratch out) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(hidden >= 1 && hidden <= (1 << 24), "hidden out of range");
  static_assert(streams >= 1 && streams <= 16, "streams out of range for this kernel (1 .. 16)");
  static_assert(sinkhorn_iters >= 1 && sinkhorn_iters <= (1 << 16), "sinkhorn_iters out of range");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an activation (BF16, or F32 in check mode)");
  constexpr long long S = streams, M = (2 + S) * S, W = S * hidden;
  constexpr int kCols = M < 12 ? static_cast<int>(M) : 12;  // fn columns per pass (12 float4s in flight)
  constexpr bool kVector = W % 4 == 0;                      // fn rows start 16-byte aligned
  using namespace hc_mix_detail;
  __shared__ float red[32];
  __shared__ float part[kWarps * kCols];
  __shared__ float m[M];
  __shared__ float sumsq;
  __shared__ float result[M];  // pre, post, then the comb
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int G = static_cast<int>(gridDim.y), g = static_cast<int>(blockIdx.y);
  if (G > 1 && (rows > kMixRows || G > kMixSplits)) return;  // a grid the table cannot hold (never launched)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  float* o = static_cast<float*>(out) + r * M;
  if (row_slot(statics, r) < 0) {
    if (g == 0)
      for (int i = tid; i < M; i += kThreads) o[i] = 0.0f;
    return;
  }
  const long long xoff = r * W;
  // This block's inputs [lo, hi): whole vectors of four, so no vector straddles two blocks.
  const long long per = (W + 4ll * G - 1) / (4ll * G) * 4;
  const long long lo = g * per < W ? g * per : W, hi = lo + per < W ? lo + per : W;
  for (long long c0 = 0; c0 < M; c0 += kCols) {
    float acc[kCols];
#pragma unroll
    for (int k = 0; k < kCols; ++k) acc[k] = 0.0f;
    float sq = 0.0f;
    for (long long i0 = lo + 4ll * tid; i0 < hi; i0 += 4ll * kThreads) {
      float xv[4], w[kCols][4];
#pragma unroll
      for (int k = 0; k < kCols; ++k)  // the loads first, so they are in flight together
        if (c0 + k < M && i0 + 3 < W) weight_vec4<format_fn, kVector>(fn, c0 + k, i0, W, w[k]);
#pragma unroll
      for (int j = 0; j < 4; ++j) xv[j] = i0 + j < W ? load<dtype_x>(x, xoff + i0 + j) : 0.0f;
      if (c0 == 0) sq += xv[0] * xv[0] + xv[1] * xv[1] + xv[2] * xv[2] + xv[3] * xv[3];
#pragma unroll
      for (int k = 0; k < kCols; ++k) {
        if (c0 + k >= M) continue;
        if (i0 + 3 >= W)  // the row's last, partial vector
          for (int j = 0; j < 4; ++j) w[k][j] = i0 + j < W ? weight_at<format_fn>(fn, c0 + k, i0 + j, W) : 0.0f;
        acc[k] += xv[0] * w[k][0] + xv[1] * w[k][1] + xv[2] * w[k][2] + xv[3] * w[k][3];
      }
    }
    if (c0 == 0) {
      const float total = block_sum(sq, red);
      if (tid == 0) sumsq = total;
    }
#pragma unroll
    for (int k = 0; k < kCols; ++k) {
      const float v = warp_sum(acc[k]);
      if (lane == 0) part[warp * kCols + k] = v;
    }
    __syncthreads();
    if (tid < kCols && c0 + tid < M) {
      float t = 0.0f;
      for (int w = 0; w < kWarps; ++w) t += part[w * kCols + tid];
      m[c0 + tid] = t;
    }
    __syncthreads();
  }
  if (G > 1) {
    // Hand this slice's sums over; the row's last block adds every slice's, in slice order.
    float* table = g_sums<M> + static_cast<long long>(r) * kMixSplits * (M + 1);
    for (int i = tid; i <= M; i += kThreads) table[g * (M + 1) + i] = i < M ? m[i] : sumsq;
    if (!last_block_of_row(&g_finished[r], static_cast<unsigned>(G))) return;
    // Every slice's sums in one round trip through L2 (a thread a value), then the adds in slice order.
    __shared__ float gathered[kMixSplits * (M + 1)];
    for (int i = tid; i < G * (M + 1); i += kThreads) gathered[i] = __ldcg(table + i);
    __syncthreads();
    for (int i = tid; i <= M; i += kThreads) {
      float t = 0.0f;
      for (int s = 0; s < G; ++s) t += gathered[s * (M + 1) + i];
      if (i < M) m[i] = t;
      else sumsq = t;
    }
    __syncthreads();
  }
  // Warp 0 finishes the row: each lane the columns k ≡ lane (mod 32), then the Sinkhorn passes.
  if (tid >= 32) return;
  const float rho = 1.0f / sqrtf(__fdiv_rn(sumsq, static_cast<float>(W)) + eps);  // the same bits in every lane
  auto base_at = [&](long long i) { return weight_at<format_base>(base, i); };
  auto scale_at = [&](long long i) { return weight_at<format_scale>(scale, i); };
  for (long long k = lane; k < M; k += 32) {
    const float mk = __fmul_rn(m[k], rho);
    if (k < S) result[k] = __fadd_rn(sigmoid(__fadd_rn(__fmul_rn(scale_at(0), mk), base_at(k))), hc_eps);
    else if (k < 2 * S) result[k] = __fmul_rn(2.0f, sigmoid(__fadd_rn(__fmul_rn(scale_at(1), mk), base_at(k))));
    else result[k] = __fadd_rn(__fmul_rn(scale_at(2), mk), base_at(k));
  }
  if constexpr (S * S <= 32) sinkhorn_lanes<S>(result + 2 * S, sinkhorn_iters, hc_eps, lane);
  else sinkhorn<S>(result + 2 * S, sinkhorn_iters, hc_eps, lane);
  for (long long k = lane; k < M; k += 32) o[k] = result[k];
#endif
}

}  // namespace entry
}  // namespace dsv41k
