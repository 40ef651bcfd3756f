// kernels/compress.cuh — the compressor (docs/ops.md "compress"): the tail of raw rows, gated pooling of
// each closed group, RMSNorm, the compressed cache entry and the index key, roped at the group's first
// position. Mirrors runtime/cpu/ops_compress.cpp (same sums in the same order, no fused multiply-adds).
//
// Launch (common/kernel_launch_attention.cpp): ONE block of 256 threads, grid (1, 1, 1), no dynamic
// shared memory. The block walks the rows in row order (a row may close a group opened by earlier rows
// of the step); each row's vector work is spread over the block: thread t owns dims t, t+256, ... of
// the latent, the index key's outputs are computed by 8-lane groups (one group per output, lane k
// holding the CPU dot's partial sum k), and the RMSNorm sums run on thread 0 in the CPU's order.
// Static shared memory: 4·(Dh + Di + 32) + 8·rope_dim/2 bytes.
//
// DT_PACKED caches (the official format, kernels/cache_rows.cuh): the index key is made first, then
// the latent is roped in place; each row is rounded to bf16 (the served rounding: packed caches have
// no check mode of their own) and packed a thread per group (FP4 with E4M3 scales per 16 for the
// compressed row, FP4 with UE8M0 scales per 32 for the index key).
#pragma once

#include "cache_rows.cuh"
#include "kernel_abi.cuh"

namespace dsv41k {
namespace compress_detail {
constexpr int kThreads = 256;

#ifndef DSV41_CONTRACT_SCAN

// In place: v = b?(v·(mean(v²) + eps)^−½·w) as runtime/cpu rms_norm (sequential sum on thread 0).
template <bool kRound, int FMT>
__device__ __forceinline__ void rms_norm(float* v, Weight w, int n, float eps, float* inv_slot) {
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum = __fadd_rn(sum, __fmul_rn(v[i], v[i]));
    *inv_slot = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(sum, static_cast<float>(n)), eps)));
  }
  __syncthreads();
  const float inv = *inv_slot;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float o = __fmul_rn(__fmul_rn(v[i], inv), weight_at<FMT>(w, i));
    v[i] = kRound ? bf16_round(o) : o;
  }
  __syncthreads();
}

// freq_i of docs/ops.md "RoPE arguments" (runtime/cpu/rope_math.cpp rope_frequencies), fp64.
__device__ __forceinline__ double rope_frequency(long long i, long long rope_dim, float theta_f, float yarn_factor_f,
                                                 long long yarn_original, float beta_fast_f, float beta_slow_f) {
  const double theta = theta_f, factor = yarn_factor_f;
  double freq = pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(rope_dim));
  if (!(factor > 1.0 && yarn_original > 0)) return freq;
  const double dim = static_cast<double>(rope_dim), original = static_cast<double>(yarn_original);
  const double pi = 3.141592653589793238462643383279502884;
  const double two_log_base = 2.0 * log(theta);
  const double corr_fast = dim * log(original / (2.0 * pi * static_cast<double>(beta_fast_f))) / two_log_base;
  const double corr_slow = dim * log(original / (2.0 * pi * static_cast<double>(beta_slow_f))) / two_log_base;
  const double lo = fmax(floor(corr_fast), 0.0);
  double hi = fmin(ceil(corr_slow), dim - 1.0);
  if (hi == lo) hi = __dadd_rn(lo, 0.001);
  double t = __ddiv_rn(__dsub_rn(static_cast<double>(i), lo), __dsub_rn(hi, lo));
  t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
  return __dadd_rn(__dmul_rn(freq, __dsub_rn(1.0, t)), __dmul_rn(__ddiv_rn(freq, factor), t));
}

// dst[0 .. width) = v rotated at `position` on its last 2·pairs dims (GPT-J pairs), stored as DT.
template <int DT>
__device__ __forceinline__ void store_roped(void* dst, const float* v, int width, int pairs, const double* freqs,
                                            long long position) {
  const int offset = width - 2 * pairs;
  for (int d = threadIdx.x; d < offset; d += blockDim.x) store<DT>(dst, d, v[d]);
  for (int i = threadIdx.x; i < pairs; i += blockDim.x) {
    const double angle = static_cast<double>(position) * freqs[i];
    const float cs = static_cast<float>(cos(angle)), sn = static_cast<float>(sin(angle));
    const float e = v[offset + 2 * i], f = v[offset + 2 * i + 1];
    store<DT>(dst, offset + 2 * i, __fsub_rn(__fmul_rn(e, cs), __fmul_rn(f, sn)));
    store<DT>(dst, offset + 2 * i + 1, __fadd_rn(__fmul_rn(f, cs), __fmul_rn(e, sn)));
  }
}
// In place: v rotated at `position` on its last 2·pairs dims, every value then rounded to bf16 (the
// store of a bf16 row, kept in fp32 for packing). Thread t owns pair t and dims t of the rest.
__device__ __forceinline__ void rope_in_place(float* v, int width, int pairs, const double* freqs, long long position) {
  const int offset = width - 2 * pairs;
  for (int d = threadIdx.x; d < offset; d += blockDim.x) v[d] = bf16_round(v[d]);
  for (int i = threadIdx.x; i < pairs; i += blockDim.x) {
    const double angle = static_cast<double>(position) * freqs[i];
    const float cs = static_cast<float>(cos(angle)), sn = static_cast<float>(sin(angle));
    const float e = v[offset + 2 * i], f = v[offset + 2 * i + 1];
    v[offset + 2 * i] = bf16_round(__fsub_rn(__fmul_rn(e, cs), __fmul_rn(f, sn)));
    v[offset + 2 * i + 1] = bf16_round(__fadd_rn(__fmul_rn(f, cs), __fmul_rn(e, sn)));
  }
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace compress_detail

namespace entry {

template <long long ratio, long long head_dim, long long index_head_dim, long long rope_dim, int dtype_cache,
          int dtype_index_cache, int format_norm, int format_wk, int format_k_norm>
__device__ __forceinline__ void compress(Rows rows, Statics statics, Errors errors, Scratch raw, Scratch gate,
                                         Weight norm, Weight wk, Weight k_norm, Real eps, Real theta,
                                         Real yarn_factor, Int yarn_original, Real beta_fast, Real beta_slow,
                                         State tail, Int tail_rows, State cache, Int cache_rows,
                                         State index_cache, Int index_cache_rows) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(ratio >= 1 && ratio <= (1 << 16), "ratio out of range");
  static_assert(head_dim >= 1 && head_dim <= 8192, "head_dim out of range (static shared memory)");
  static_assert(index_head_dim >= 1 && index_head_dim <= 2048, "index_head_dim out of range");
  static_assert(rope_dim >= 0 && rope_dim % 2 == 0 && rope_dim <= head_dim && rope_dim <= index_head_dim,
                "rope_dim must be even and fit both head dims");
  constexpr bool kPacked = dtype_cache == DT_PACKED;
  static_assert(dtype_cache == DT_F32 || dtype_cache == DT_BF16 || kPacked, "cache is an act buffer or packed");
  static_assert(kPacked ? dtype_index_cache == DT_PACKED : (dtype_index_cache == DT_F32 || dtype_index_cache == DT_BF16),
                "index_cache is an act buffer, or packed with the cache");
  static_assert(!kPacked || (head_dim % 16 == 0 && index_head_dim % 32 == 0), "packed rows are whole scale groups");
  // The rounding of RMSNorm outputs: bf16 activations, and always for packed caches (runtime/cpu/ops_compress.cpp).
  constexpr bool kRoundCache = kPacked || dtype_cache == DT_BF16, kRoundKey = kPacked || dtype_index_cache == DT_BF16;
  using namespace compress_detail;
  constexpr int Dh = static_cast<int>(head_dim), Di = static_cast<int>(index_head_dim);
  constexpr int kPairs = static_cast<int>(rope_dim / 2);
  __shared__ float latent[Dh];
  __shared__ float key[Di];
  __shared__ double freqs[kPairs > 0 ? kPairs : 1];
  __shared__ float inv_slot;

  for (int i = threadIdx.x; i < kPairs; i += blockDim.x)
    freqs[i] = rope_frequency(i, rope_dim, theta, yarn_factor, yarn_original, beta_fast, beta_slow);
  __syncthreads();

  const float* rawf = static_cast<const float*>(raw);
  const float* gatef = static_cast<const float*>(gate);
  const int lane = threadIdx.x & 31, k8 = lane & 7;
  const int group = threadIdx.x >> 3, groups = blockDim.x >> 3;
  const long long capacity = cache_rows < index_cache_rows ? cache_rows : index_cache_rows;

  for (long long r = 0; r < rows; ++r) {
    const int slot = row_slot(statics, r);
    if (slot < 0) continue;
    const long long p = row_position(statics, r);
    if (p < 0 || !slot_in(slot, cache) || !slot_in(slot, index_cache) || !slot_in(slot, tail)) {
      if (threadIdx.x == 0) report_error(errors, ERR_STATICS);
      continue;
    }
    long long j;
    if constexpr (ratio == 1) {
      for (int d = threadIdx.x; d < Dh; d += blockDim.x) latent[d] = rawf[r * Dh + d];
      j = p;
    } else {
      float* t = reinterpret_cast<float*>(slot_base(tail, slot));
      // Position q's raw row is tail row q mod tail_rows (tail_rows = ratio unless drafting made the
      // tail longer, so a rewind into the open group finds its rows): the group closing at p is the
      // rows of positions p - ratio + 1 .. p.
      const long long pm = p % ratio, first_row = (p - (ratio - 1)) % tail_rows, row = p % tail_rows;
      // Thread d writes and later reads its own dims of the tail: no barrier needed between.
      for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
        t[row * 2 * Dh + d] = rawf[r * Dh + d];
        t[row * 2 * Dh + Dh + d] = gatef[r * Dh + d];
      }
      if (pm != ratio - 1) continue;
      for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
        float top = -__int_as_float(0x7f800000);
        for (long long k = 0; k < ratio; ++k) {
          const float g = t[((first_row + k) % tail_rows) * 2 * Dh + Dh + d];
          top = top < g ? g : top;  // std::max(top, g)
        }
        float total = 0.0f, acc = 0.0f;
        for (long long k = 0; k < ratio; ++k) {
          const float* tk = t + ((first_row + k) % tail_rows) * 2 * Dh;
          const float e = static_cast<float>(exp(static_cast<double>(__fsub_rn(tk[Dh + d], top))));
          total = __fadd_rn(total, e);
          acc = __fadd_rn(acc, __fmul_rn(e, tk[d]));
        }
        latent[d] = __fdiv_rn(acc, total);
      }
      j = p / ratio;
    }
    // The latent is an RMSNorm output: rounded when the cache holds bf16 (docs/ops.md).
    rms_norm<kRoundCache, format_norm>(latent, norm, Dh, eps, &inv_slot);
    if (j >= capacity) {
      if (threadIdx.x == 0) report_error(errors, ERR_CAPACITY);
      continue;
    }
    const long long first = j * ratio;
    if constexpr (!kPacked) {
      char* cache_row = slot_base(cache, slot) + j * Dh * (dtype_cache == DT_BF16 ? 2 : 4);
      store_roped<dtype_cache>(cache_row, latent, Dh, kPairs, freqs, first);
    }

    // key = wk·latent (Di dots of Dh), one 8-lane group per output.
    for (int base = 0; base < Di; base += groups) {
      const int o = base + group;
      const bool valid = o < Di;
      const long long wrow = valid ? o : 0;
      const float v = group8_dot([&](long long i) { return weight_at<format_wk>(wk, wrow, i, Dh); },
                                 [&](long long i) { return latent[i]; }, valid ? Dh : 0, k8);
      if (valid && k8 == 0) key[o] = v;
    }
    rms_norm<kRoundKey, format_k_norm>(key, k_norm, Di, eps, &inv_slot);
    if constexpr (kPacked) {
      // Rope both rows in place (a thread rotates the pairs it owns), round to bf16, then pack them.
      rope_in_place(key, Di, kPairs, freqs, first);
      rope_in_place(latent, Dh, kPairs, freqs, first);
      __syncthreads();
      cache_rows::pack_row<CACHE_INDEX_KEY>([&](long long i) { return key[i]; }, Di,
                                           slot_base(index_cache, slot) + j * cache_rows::row_bytes<CACHE_INDEX_KEY>(Di));
      cache_rows::pack_row<CACHE_COMPRESSED>([&](long long i) { return latent[i]; }, Dh,
                                            slot_base(cache, slot) + j * cache_rows::row_bytes<CACHE_COMPRESSED>(Dh));
    } else {
      char* index_row = slot_base(index_cache, slot) + j * Di * (dtype_index_cache == DT_BF16 ? 2 : 4);
      store_roped<dtype_index_cache>(index_row, key, Di, kPairs, freqs, first);
    }
    __syncthreads();  // latent and key are rewritten by the next row
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
