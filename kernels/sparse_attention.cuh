// kernels/sparse_attention.cuh — attention of one row's heads over its window rows and its selected
// compressed rows, with a per-head sink (docs/ops.md "sparse_attention"). Mirrors
// runtime/cpu/ops_attention.cpp: logits are the CPU's eight-way dots times scale, the max includes the
// sink, the denominator starts at e^{sink−m} and adds the e_j in key order, and o[d] = Σ_j e_j·k_j[d]
// in key order divided once by the denominator.
//
// Launch (common/kernel_launch_attention.cpp): grid (R, heads, 1), one block of 256 threads per
// (row, head); no dynamic shared memory. Static shared memory: 4·Dh (the query) + 12·(Wn + K) (logits
// and key row pointers) + 256 bytes. Logits: one 8-lane group per key (lane k holds partial sum k);
// output: thread t owns dims t, t+256, ... and walks the keys in order.
//
// A DT_PACKED ring and cache (the official cache format, kernels/cache_rows.cuh): ring rows are FP8
// and cache rows FP4, dequantized where read; this step's rows, read from kv, are rounded through the
// ring's FP8 format where read, as the ring will hold them (the CPU rounds them the same way).
#pragma once

#include "cache_rows.cuh"
#include "kernel_abi.cuh"

namespace dsv41k {
namespace sparse_attention_detail {
constexpr int kThreads = 256;
__device__ constexpr long long static_shared_bytes(long long dh, long long window, long long topk) {
  return 4 * dh + 12 * (window + topk) + 256;
}

#ifndef DSV41_CONTRACT_SCAN

// e^v rounded to fp32 from fp64 (closest to the CPU's expf).
__device__ __forceinline__ float exp_f(float v) { return static_cast<float>(exp(static_cast<double>(v))); }
#endif  // DSV41_CONTRACT_SCAN
}  // namespace sparse_attention_detail

namespace entry {

template <long long heads, long long head_dim, long long window, long long topk, int dtype_kv, int dtype_ring,
          int dtype_cache, int format_sink, int dtype_out>
__device__ __forceinline__ void sparse_attention(Rows rows, Statics statics, Errors errors, Scratch q, Scratch kv,
                                                 State ring, Int ring_rows, State cache, Int cache_rows,
                                                 Scratch selected,
                                                 Weight sink, Real scale, Scratch out) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(heads >= 1 && heads <= 65535, "heads out of range (grid y)");
  static_assert(head_dim >= 1 && head_dim <= (1 << 20), "head_dim out of range");
  static_assert(window >= 1 && topk >= 0, "window >= 1, topk >= 0");
  static_assert(sparse_attention_detail::static_shared_bytes(head_dim, window, topk) <= 46 * 1024,
                "query, logits and key pointers must fit static shared memory");
  static_assert(dtype_kv == DT_F32 || dtype_kv == DT_BF16, "kv is an act buffer");
  constexpr bool kPacked = dtype_ring == DT_PACKED;
  static_assert((kPacked || dtype_ring == dtype_kv) && dtype_out == dtype_kv, "one call's activations share a dtype");
  static_assert(topk > 0 ? dtype_cache == (kPacked ? DT_PACKED : dtype_kv) : dtype_cache == -1,
                "cache present iff topk > 0, in the ring's format");
  static_assert(!kPacked || head_dim % 32 == 0, "packed rows are whole groups of 32");
  using namespace sparse_attention_detail;
  constexpr int Dh = static_cast<int>(head_dim), Wn = static_cast<int>(window), K = static_cast<int>(topk);
  constexpr long long kRowBytes = static_cast<long long>(Dh) * (dtype_kv == DT_BF16 ? 2 : 4);
  constexpr long long kRingRowBytes = kPacked ? cache_rows::row_bytes<CACHE_WINDOW>(Dh) : kRowBytes;
  constexpr long long kCacheRowBytes = kPacked ? cache_rows::row_bytes<CACHE_COMPRESSED>(Dh) : kRowBytes;
  __shared__ float qh[Dh];
  __shared__ float logit[Wn + K];
  __shared__ const char* key_row[Wn + K];
  __shared__ float red[32];
  __shared__ int selected_count;

  const long long r = blockIdx.x;
  const int h = blockIdx.y;
  if (r >= rows) return;
  const long long out0 = (r * heads + h) * Dh;
  const int slot = row_slot(statics, r);
  if (slot < 0) {
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) store<dtype_out>(out, out0 + d, 0.0f);
    return;
  }
  const long long p = row_position(statics, r), f = row_first(statics, r);
  const bool consistent = p >= 0 && f >= 0 && f <= r && row_slot(statics, f) == slot &&
                          p - row_position(statics, f) == r - f && slot_in(slot, ring) && slot_in(slot, cache);
  if (!consistent || ring_rows < Wn) {
    if (threadIdx.x == 0) report_error(errors, consistent ? ERR_CAPACITY : ERR_STATICS);
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) store<dtype_out>(out, out0 + d, 0.0f);
    return;
  }
  const long long p0 = row_position(statics, f);

  // Keys: the window positions oldest first, then the listed selected entries.
  const long long nw = p + 1 < Wn ? p + 1 : Wn, t0 = p - nw + 1;
  const char* kvb = static_cast<const char*>(kv);
  const char* ringb = slot_base(ring, slot);
  for (int j = threadIdx.x; j < nw; j += blockDim.x) {
    const long long t = t0 + j;
    key_row[j] = t >= p0 ? kvb + (f + (t - p0)) * kRowBytes : ringb + (t % ring_rows) * kRingRowBytes;
  }
  for (int d = threadIdx.x; d < Dh; d += blockDim.x) qh[d] = static_cast<const float*>(q)[out0 + d];
  if constexpr (K > 0) {
    if (threadIdx.x < 32) {  // warp 0 compacts the listed entries in order
      const int lane = threadIdx.x;
      const int* sel = static_cast<const int*>(selected) + r * K;
      const char* cacheb = slot_base(cache, slot);
      int count = 0;
      for (int base = 0; base < K; base += 32) {
        const int c = base + lane;
        const int s = c < K ? sel[c] : -1;
        const bool bad = s != -1 && (s < 0 || s >= cache_rows);
        if (bad) report_error(errors, ERR_SELECTION);
        const bool use = s != -1 && !bad;
        const unsigned ballot = __ballot_sync(0xffffffffu, use);
        if (use) key_row[nw + count + __popc(ballot & ((1u << lane) - 1u))] = cacheb + s * kCacheRowBytes;
        count += __popc(ballot);
      }
      if (lane == 0) selected_count = count;
    }
  } else {
    if (threadIdx.x == 0) selected_count = 0;
  }
  __syncthreads();
  const int count = static_cast<int>(nw) + selected_count;
  // Key j's value i: keys js .. nw - 1 are this step's rows (from kv), those before them ring rows.
  const long long js = p0 > t0 ? p0 - t0 : 0;
  auto key_at = [&](int j, const char* kr, long long i) -> float {
    if constexpr (kPacked) {
      if (j >= nw) return cache_rows::value<CACHE_COMPRESSED>(kr, i, Dh);
      if (j >= js) return cache_rows::window_rounded<dtype_kv>(kr, i);
      return cache_rows::value<CACHE_WINDOW>(kr, i, Dh);
    } else {
      (void)j;
      return load<dtype_kv>(kr, i);
    }
  };

  // Logits l_j = (q·k_j)·scale.
  const int lane = threadIdx.x & 31, k8 = lane & 7, group = threadIdx.x >> 3, groups = blockDim.x >> 3;
  for (int base = 0; base < count; base += groups) {
    const int j = base + group;
    const bool valid = j < count;
    const int jv = valid ? j : 0;
    const char* kr = key_row[jv];
    const float v = group8_dot([&](long long i) { return qh[i]; },
                               [&](long long i) { return key_at(jv, kr, i); }, valid ? Dh : 0, k8);
    if (valid && k8 == 0) logit[j] = __fmul_rn(v, scale);
  }
  __syncthreads();
  (void)lane;
  const float sink_h = weight_at<format_sink>(sink, h);
  float top = threadIdx.x == 0 ? sink_h : -__int_as_float(0x7f800000);
  for (int j = threadIdx.x; j < count; j += blockDim.x) top = top < logit[j] ? logit[j] : top;
  top = block_max(top, red);
  __syncthreads();
  for (int j = threadIdx.x; j < count; j += blockDim.x) logit[j] = exp_f(__fsub_rn(logit[j], top));
  __syncthreads();

  constexpr int kPer = (Dh + kThreads - 1) / kThreads;
  float o[kPer];
#pragma unroll
  for (int c = 0; c < kPer; ++c) o[c] = 0.0f;
  float denominator = exp_f(__fsub_rn(sink_h, top));  // the sink counts in the denominator only
  for (int j = 0; j < count; ++j) {
    const float e = logit[j];
    denominator = __fadd_rn(denominator, e);
    const char* kr = key_row[j];
#pragma unroll
    for (int c = 0; c < kPer; ++c) {
      const int d = threadIdx.x + c * kThreads;
      if (d < Dh) o[c] = __fadd_rn(o[c], __fmul_rn(e, key_at(j, kr, d)));
    }
  }
#pragma unroll
  for (int c = 0; c < kPer; ++c) {
    const int d = threadIdx.x + c * kThreads;
    if (d < Dh) store<dtype_out>(out, out0 + d, __fdiv_rn(o[c], denominator));
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
