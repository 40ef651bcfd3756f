// kernels/hc_mix.cuh — HCmix of docs/model.md §5 (docs/ops.md "hc_mix"): for an active row,
// ρ = (mean(x²) + eps)^−½ over its S·D values, m = ρ·(x·fnᵀ) (M = (2+S)·S columns),
// pre = sigmoid(scale₀·m + base) + hc_eps, post = 2·sigmoid(scale₁·m + base),
// C = scale₂·m + base followed by the Sinkhorn passes; out F32 [R, M]. Inactive rows get zeros.
//
// Launch (common/kernel_launch_hc.cpp): block 512 threads = 16 warps, grid (R, G): at decode (R ≤ kMixRows)
// G = ceil(S·D / (4·kLanes)) blocks a row (at most kMixSplits<M>: 40 at the release's S·D = 20480), each
// summing a slice of the row's inputs (whole vectors of four), else one block a row. The block's warps
// form kGroups column groups of kLanes threads: a thread takes one vector of four inputs at a time and
// the group's columns of a pass (c ≡ group mod kGroups; kGroups·kGroupCols = 24 columns a pass, so the
// release's M = 24 is one pass: each thread has its 6 vector loads of fn in flight together, and fn
// makes one memory round trip), sums them per column warp-wise, then across the group's warps in a fixed
// order. A split row's blocks hand their sums to the module's table and the row's last block (a counter
// per row, reset by that block) gathers the table into shared memory in one round trip and adds the
// slices in order, so a run's bits repeat. Every block loads base and scale before its fn loads (only the
// last block uses them: their latency hides under fn's instead of following the handoff). ρ, the
// activations (a lane a column) and the Sinkhorn passes on the S×S comb (a lane an element while
// S·S ≤ 32, else a lane a row or column) run in warp 0, in the exact order and rounding points of
// runtime/cpu/ops_hc.cpp. No dynamic shared memory.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace hc_mix_detail {
constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kGroups = 4;                   // column groups a block (kWarps / kGroups warps each)
constexpr int kLanes = kThreads / kGroups;   // a group's threads: the vectors of four a block takes at a time
constexpr int kGroupCols = 6;                // columns a thread a pass: its fn loads in flight together
constexpr int kPassCols = kGroups * kGroupCols;
constexpr int kMixRows = 16;                 // phases of at most this many rows split a row over blocks
// The most blocks a split row may take: the table's slices, and the last block's gather of G·(M + 1)
// sums into static shared memory (16 KB at most). common/kernel_launch_hc.cpp caps G the same way.
template <long long M>
constexpr int kMixSplits = 4096 / (M + 1) < 64 ? static_cast<int>(4096 / (M + 1)) : 64;

#ifndef DSV41_CONTRACT_SCAN
// A split launch's sums, [row][split][the M column sums, then Σx²], and each row's finished blocks.
template <long long M>
__device__ float g_sums[kMixRows * kMixSplits<M> * (M + 1)];
__device__ unsigned g_finished[kMixRows];
#endif

// Four consecutive elements of x from element i (a multiple of 4; one aligned load when kVector).
template <int DT, bool kVector>
__device__ __forceinline__ void load4(const void* x, long long i, float* v) {
  if constexpr (kVector && DT == DT_BF16) {
    const uint2 q = *reinterpret_cast<const uint2*>(static_cast<const unsigned short*>(x) + i);
    v[0] = __uint_as_float(q.x << 16);
    v[1] = __uint_as_float(q.x & 0xFFFF0000u);
    v[2] = __uint_as_float(q.y << 16);
    v[3] = __uint_as_float(q.y & 0xFFFF0000u);
  } else if constexpr (kVector && DT == DT_F32) {
    const float4 q = *reinterpret_cast<const float4*>(static_cast<const float*>(x) + i);
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = load<DT>(x, i + j);
  }
}

#ifndef DSV41_CONTRACT_SCAN
// The split row's handoff (kernels/last_block.cuh's protocol, narrowed to the one warp that writes): warp 0
// stores the block's M sums and Σx² to its slot of the table, fences them (acquire-release at device
// scope, not the sequentially consistent __threadfence of every thread) and counts the block on the
// row's counter. Called by every thread; returns true, to every thread, in the row's last block, which
// then sees every slot (read them with __ldcg) and has reset the counter for the next launch.
template <long long M>
__device__ __forceinline__ bool hand_over(float* slot, const float* m, float sumsq, unsigned* finished,
                                          unsigned blocks) {
  __shared__ bool last;
  if (threadIdx.x < 32) {
    for (int i = threadIdx.x; i <= M; i += 32) slot[i] = i < M ? m[i] : sumsq;
    __syncwarp();
    asm volatile("fence.acq_rel.gpu;" ::: "memory");  // the warp's stores before its count
    if (threadIdx.x == 0) {
      last = atomicAdd(finished, 1u) == blocks - 1;
      if (last) {
        asm volatile("fence.acq_rel.gpu;" ::: "memory");  // the count before this block's reads
        *finished = 0u;
      }
    }
  }
  __syncthreads();
  return last;
}
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

// Block g of row blockIdx.x's G (the entry: g = blockIdx.y, G = gridDim.y).
template <long long hidden, long long streams, long long sinkhorn_iters, int dtype_x, int format_fn, int format_base,
          int format_scale>
__device__ __forceinline__ void mix_blocks(Rows rows, Statics statics, Scratch x, Weight fn, Weight base, Weight scale,
                                           Real eps, Real hc_eps, Scratch out, int g, int G) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(hidden >= 1 && hidden <= (1 << 24), "hidden out of range");
  static_assert(streams >= 1 && streams <= 16, "streams out of range for this kernel (1 .. 16)");
  static_assert(sinkhorn_iters >= 1 && sinkhorn_iters <= (1 << 16), "sinkhorn_iters out of range");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is an activation (BF16, or F32 in check mode)");
  constexpr long long S = streams, M = (2 + S) * S, W = S * hidden, V = (W + 3) / 4;  // V vectors of four
  constexpr bool kVector = W % 4 == 0;  // fn rows and x rows start 16- and 8-byte aligned
  static_assert(M <= kThreads, "a thread a column of base");
  constexpr int kSplits = kMixSplits<M>;
  __shared__ float red[kWarps];
  __shared__ float part[kWarps * kGroupCols];
  __shared__ float m[M];
  __shared__ float sumsq;
  __shared__ float sbase[M], sscale[3];
  __shared__ float result[M];  // pre, post, then the comb
  const long long r = blockIdx.x;
  if (r >= rows) return;
  if (G > 1 && (rows > kMixRows || G > kSplits)) return;  // a grid the table cannot hold (never launched)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int group = warp / (kWarps / kGroups), v0 = tid % kLanes;
  float* o = static_cast<float*>(out) + r * M;
  if (row_slot(statics, r) < 0) {
    if (g == 0)
      for (int i = tid; i < M; i += kThreads) o[i] = 0.0f;
    return;
  }
  // Issued before fn's loads; stored to shared memory after them (a store would wait for its load).
  const float base_k = tid < M ? weight_at<format_base>(base, tid) : 0.0f;
  const float scale_k = tid < 3 ? weight_at<format_scale>(scale, tid) : 0.0f;
  const long long xoff = r * W;
  // This block's vectors [lo, hi).
  const long long per = ((V + G - 1) / G + kLanes - 1) / kLanes * kLanes;  // whole turns of the group's threads
  const long long lo = g * per < V ? g * per : V, hi = lo + per < V ? lo + per : V;
  for (long long c0 = 0; c0 < M; c0 += kPassCols) {
    float acc[kGroupCols];
#pragma unroll
    for (int k = 0; k < kGroupCols; ++k) acc[k] = 0.0f;
    float sq = 0.0f;
    for (long long v = lo + v0; v < hi; v += kLanes) {
      const long long i0 = 4 * v;
      float xv[4], w[kGroupCols][4];
#pragma unroll
      for (int k = 0; k < kGroupCols; ++k) {  // the loads first, so they are in flight together
        const long long c = c0 + group + kGroups * k;
        if (c < M && i0 + 3 < W) weight_vec4<format_fn, kVector>(fn, c, i0, W, w[k]);
      }
      if (i0 + 3 < W) load4<dtype_x, kVector>(x, xoff + i0, xv);
      else
        for (int j = 0; j < 4; ++j) xv[j] = i0 + j < W ? load<dtype_x>(x, xoff + i0 + j) : 0.0f;
      if (c0 == 0 && group == 0) sq += xv[0] * xv[0] + xv[1] * xv[1] + xv[2] * xv[2] + xv[3] * xv[3];
#pragma unroll
      for (int k = 0; k < kGroupCols; ++k) {
        const long long c = c0 + group + kGroups * k;
        if (c >= M) continue;
        if (i0 + 3 >= W)  // the row's last, partial vector
          for (int j = 0; j < 4; ++j) w[k][j] = i0 + j < W ? weight_at<format_fn>(fn, c, i0 + j, W) : 0.0f;
        acc[k] += xv[0] * w[k][0] + xv[1] * w[k][1] + xv[2] * w[k][2] + xv[3] * w[k][3];
      }
    }
    if (c0 == 0) {
      if (tid < M) sbase[tid] = base_k;
      if (tid < 3) sscale[tid] = scale_k;
      if (group == 0) {
        const float s = warp_sum(sq);
        if (lane == 0) red[warp] = s;
      }
    }
#pragma unroll
    for (int k = 0; k < kGroupCols; ++k) {
      const float v = warp_sum(acc[k]);
      if (lane == 0) part[warp * kGroupCols + k] = v;
    }
    __syncthreads();
    // Column c0 + t is group t mod kGroups's column t / kGroups: its warps' sums in warp order.
    constexpr int kGroupWarps = kWarps / kGroups;
    if (tid < kPassCols && c0 + tid < M) {
      const int cg = tid % kGroups, k = tid / kGroups;
      float t = 0.0f;
      for (int w = 0; w < kGroupWarps; ++w) t += part[(cg * kGroupWarps + w) * kGroupCols + k];
      m[c0 + tid] = t;
    }
    if (c0 == 0 && tid == kPassCols) {  // group 0's warps are warps 0 .. kGroupWarps − 1
      float t = 0.0f;
      for (int w = 0; w < kGroupWarps; ++w) t += red[w];
      sumsq = t;
    }
    __syncthreads();
  }
  if (G > 1) {
    // Hand this slice's sums over; the row's last block adds every slice's, in slice order.
    float* table = g_sums<M> + static_cast<long long>(r) * kSplits * (M + 1);
    if (!hand_over<M>(table + g * (M + 1), m, sumsq, &g_finished[r], static_cast<unsigned>(G))) return;
    // Every slice's sums in one round trip through L2 (a thread a value), then the adds in slice order.
    __shared__ float gathered[kSplits * (M + 1)];
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
  for (long long k = lane; k < M; k += 32) {
    const float mk = __fmul_rn(m[k], rho);
    if (k < S) result[k] = __fadd_rn(sigmoid(__fadd_rn(__fmul_rn(sscale[0], mk), sbase[k])), hc_eps);
    else if (k < 2 * S) result[k] = __fmul_rn(2.0f, sigmoid(__fadd_rn(__fmul_rn(sscale[1], mk), sbase[k])));
    else result[k] = __fadd_rn(__fmul_rn(sscale[2], mk), sbase[k]);
  }
  if constexpr (S * S <= 32) sinkhorn_lanes<S>(result + 2 * S, sinkhorn_iters, hc_eps, lane);
  else sinkhorn<S>(result + 2 * S, sinkhorn_iters, hc_eps, lane);
  for (long long k = lane; k < M; k += 32) o[k] = result[k];
#endif
}
}  // namespace hc_mix_detail

namespace entry {

// Grid (R, G). A call of its own, apart from the collapse, so that a graph runs it on its other lane
// beside the sublayer (docs/cuda-backend.md "Two lanes in a graph").
template <long long hidden, long long streams, long long sinkhorn_iters, int dtype_x, int format_fn, int format_base,
          int format_scale>
__device__ __forceinline__ void hc_mix(Rows rows, Statics statics, Scratch x, Weight fn, Weight base, Weight scale,
                                       Real eps, Real hc_eps, Scratch out) {
#ifndef DSV41_CONTRACT_SCAN
  hc_mix_detail::mix_blocks<hidden, streams, sinkhorn_iters, dtype_x, format_fn, format_base, format_scale>(
      rows, statics, x, fn, base, scale, eps, hc_eps, out, static_cast<int>(blockIdx.y), static_cast<int>(gridDim.y));
#endif
}

}  // namespace entry
}  // namespace dsv41k
