// kernels/block_attention.cuh — a DSpark draft block's attention (docs/ops.md "DSpark"): row r of a
// sequence whose run of rows starts at its first row f attends, non-causally, to the context ring's
// rows of the `window` positions before p0 = position(f) (oldest first), then to every row of its run
// (f through the last consecutive row naming f, later rows included), with a per-head sink. The block's
// own rows never enter the ring (window_store does, from the target's taps).
//
// Mirrors runtime/cpu/ops_attention.cpp's attend: logits are the CPU's eight-way dots times scale, the
// max includes the sink, the denominator starts at e^{sink−m} and adds the e_j in key order, and
// o[d] = Σ_j e_j·k_j[d] in key order divided once by the denominator.
//
// Launch (common/kernel_launch_draft.cpp): grid (R, heads, 1), one block of 256 threads per (row, head);
// dynamic shared memory 12·(window + R) bytes (a logit and a key row pointer per key: at most the
// window and the phase's rows). Logits: one 8-lane group per key; output: thread t owns dims t, t+256, ...
// Inconsistent statics (a first row that does not start the row's run) report ERR_STATICS, a ring
// shorter than the window ERR_CAPACITY; the row's output is then zeros.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace block_attention_detail {
constexpr int kThreads = 256;
#ifndef DSV41_CONTRACT_SCAN
// e^v rounded to fp32 from fp64 (closest to the CPU's expf).
__device__ __forceinline__ float exp_f(float v) { return static_cast<float>(exp(static_cast<double>(v))); }
#endif
}  // namespace block_attention_detail

namespace entry {

template <long long heads, long long head_dim, long long window, int dtype_kv, int dtype_ring, int format_sink,
          int dtype_out>
__device__ __forceinline__ void block_attention(Rows rows, Statics statics, Errors errors, Scratch q, Scratch kv,
                                                State ring, Int ring_rows, Weight sink, Real scale, Scratch out) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(heads >= 1 && heads <= 65535, "heads out of range (grid y)");
  static_assert(head_dim >= 1 && head_dim <= (1 << 20), "head_dim out of range");
  static_assert(window >= 1 && window <= (1 << 20), "window out of range");
  static_assert(dtype_kv == DT_F32 || dtype_kv == DT_BF16, "kv is an activation (BF16, or F32 in check mode)");
  static_assert(dtype_ring == dtype_kv && dtype_out == dtype_kv, "one call's activations share a dtype");
  using namespace block_attention_detail;
  constexpr int T = kThreads, Dh = static_cast<int>(head_dim);
  extern __shared__ __align__(16) unsigned char dyn_block_attention[];
  __shared__ float qh[Dh];
  __shared__ float red[32];
  __shared__ long long run_last;
  const long long keys_max = window + rows;
  float* logit = reinterpret_cast<float*>(dyn_block_attention);
  const char** key_row = reinterpret_cast<const char**>(dyn_block_attention + ((4 * keys_max + 15) / 16) * 16);

  const long long r = blockIdx.x;
  const int h = blockIdx.y;
  if (r >= rows) return;
  const long long out0 = (r * heads + h) * Dh;
  const int slot = row_slot(statics, r);
  auto zeros = [&] {
    for (int d = threadIdx.x; d < Dh; d += T) store<dtype_out>(out, out0 + d, 0.0f);
  };
  if (slot < 0) return zeros();
  const long long f = row_first(statics, r);
  const bool consistent = f >= 0 && f <= r && row_slot(statics, f) == slot &&
                          row_position(statics, r) - row_position(statics, f) == r - f &&
                          row_position(statics, f) >= 0 && slot_in(slot, ring);
  if (!consistent || ring_rows < window) {
    if (threadIdx.x == 0) report_error(errors, consistent ? ERR_CAPACITY : ERR_STATICS);
    return zeros();
  }
  const long long p0 = row_position(statics, f);
  if (threadIdx.x == 0) {  // the run: later active rows naming the same first row (a handful)
    long long last = r;
    while (last + 1 < rows && row_slot(statics, last + 1) >= 0 && row_first(statics, last + 1) == f) ++last;
    run_last = last;
  }
  constexpr long long kRowBytes = head_dim * (dtype_kv == DT_BF16 ? 2 : 4);
  const long long t0 = p0 > window ? p0 - window : 0, nw = p0 - t0;
  const char* ringb = slot_base(ring, slot);
  for (long long j = threadIdx.x; j < nw; j += T) key_row[j] = ringb + ((t0 + j) % ring_rows) * kRowBytes;
  for (int d = threadIdx.x; d < Dh; d += T) qh[d] = static_cast<const float*>(q)[out0 + d];
  __syncthreads();
  const long long count = nw + (run_last - f + 1);
  for (long long j = nw + threadIdx.x; j < count; j += T)
    key_row[j] = static_cast<const char*>(kv) + (f + (j - nw)) * kRowBytes;
  __syncthreads();

  // Logits l_j = (q·k_j)·scale, one 8-lane group per key.
  const int k8 = threadIdx.x & 7, group = threadIdx.x >> 3, groups = T >> 3;
  for (long long base = 0; base < count; base += groups) {
    const long long j = base + group;
    const bool valid = j < count;
    const char* kr = key_row[valid ? j : 0];
    const float v = group8_dot([&](long long i) { return qh[i]; }, [&](long long i) { return load<dtype_kv>(kr, i); },
                               valid ? Dh : 0, k8);
    if (valid && k8 == 0) logit[j] = __fmul_rn(v, scale);
  }
  __syncthreads();
  const float sink_h = weight_at<format_sink>(sink, h);
  float top = threadIdx.x == 0 ? sink_h : -__int_as_float(0x7f800000);
  for (long long j = threadIdx.x; j < count; j += T) top = fmaxf(top, logit[j]);
  top = block_max(top, red);
  for (long long j = threadIdx.x; j < count; j += T) logit[j] = exp_f(__fsub_rn(logit[j], top));
  __syncthreads();

  constexpr int kPer = (Dh + T - 1) / T;
  float o[kPer];
#pragma unroll
  for (int c = 0; c < kPer; ++c) o[c] = 0.0f;
  float denominator = exp_f(__fsub_rn(sink_h, top));  // the sink counts in the denominator only
  for (long long j = 0; j < count; ++j) {
    const float e = logit[j];
    denominator = __fadd_rn(denominator, e);
    const char* kr = key_row[j];
#pragma unroll
    for (int c = 0; c < kPer; ++c) {
      const int d = threadIdx.x + c * T;
      if (d < Dh) o[c] = __fadd_rn(o[c], __fmul_rn(e, load<dtype_kv>(kr, d)));
    }
  }
#pragma unroll
  for (int c = 0; c < kPer; ++c) {
    const int d = threadIdx.x + c * T;
    if (d < Dh) store<dtype_out>(out, out0 + d, __fdiv_rn(o[c], denominator));
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
