// kernels/compress.cuh — the compressor (docs/ops.md "compress"): the tail of raw rows, gated pooling of
// each closed group, RMSNorm, the compressed cache entry and the index key, roped at the group's first
// position. Mirrors runtime/cpu/ops_compress.cpp (same sums in the same order, no fused multiply-adds).
//
// Launch (common/kernel_launch_attention.cpp): blocks of 256 threads, grid (min(R, kCompressBlocks), 1, 1),
// no dynamic shared memory. Block b takes the rows b, b + grid, ... that close a group (every row when
// ratio is 1) and makes its entry: a group's rows of this step are read from raw and gate (the rows
// of one sequence are consecutive), its earlier rows from the tail, which nothing has written yet in
// this launch; the last block to finish then writes the tail: per sequence, the rows no later row of
// the step overwrites (the CPU writes every row in row order; these are the ones left standing). So
// every value is the one the CPU's row-order walk reads. A row's vector work is spread over its
// block: thread t owns dims t, t+256, ... of the latent, the index key's outputs are computed by 8-lane
// groups (one group per output, lane k holding the CPU dot's partial sum k), and the RMSNorm sums run
// on thread 0 in the CPU's order. Static shared memory: 4·(Dh + Di + 32) + 8·rope_dim/2 bytes.
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
constexpr int kCompressBlocks = 2048;  // the grid's most blocks (common/kernel_launch_attention.cpp: the same)

#ifndef DSV41_CONTRACT_SCAN

// Blocks of the launch that have made their entries (zero when the module loads and after each launch;
// launches of a module are stream-ordered).
__device__ unsigned g_blocks_done;

// Whether row r's tail row stays as r writes it: no later row of its sequence in this step lands on
// the same tail row (a sequence's rows are consecutive with consecutive positions).
__device__ __forceinline__ bool tail_row_kept(Statics statics, Rows rows, long long r, long long tail_rows) {
  const long long later = r + tail_rows;
  return later >= rows || row_slot(statics, later) != row_slot(statics, r) ||
         row_first(statics, later) != row_first(statics, r);
}

// Raw row r (value, then gate) into row p mod tail_rows of the slot's tail, by one warp: 16-byte
// pieces, eight loads in flight a lane, where the rows allow.
template <int DH>
__device__ __forceinline__ void write_tail_row(float* t, const float* rawf, const float* gatef, long long r,
                                               long long p, long long tail_rows) {
  float* dst = t + (p % tail_rows) * 2 * DH;
  const float* u = rawf + r * DH;
  const float* g = gatef + r * DH;
  const int lane = threadIdx.x & 31;
  const unsigned long long misaligned = (reinterpret_cast<unsigned long long>(dst) |
                                         reinterpret_cast<unsigned long long>(u) |
                                         reinterpret_cast<unsigned long long>(g)) & 15;
  if (DH % 4 != 0 || misaligned) {
    for (int d = lane; d < DH; d += 32) dst[d] = u[d], dst[DH + d] = g[d];
    return;
  }
  constexpr int V = DH / 4, U = 4;  // float4 pieces of a row; pieces a lane holds at once
  const float4* u4 = reinterpret_cast<const float4*>(u);
  const float4* g4 = reinterpret_cast<const float4*>(g);
  float4* d4 = reinterpret_cast<float4*>(dst);
  for (int base = 0; base < V; base += 32 * U) {
    float4 a[U], b[U];
#pragma unroll
    for (int i = 0; i < U; ++i) {
      const int v = base + lane + 32 * i;
      if (v < V) a[i] = u4[v], b[i] = g4[v];
    }
#pragma unroll
    for (int i = 0; i < U; ++i) {
      const int v = base + lane + 32 * i;
      if (v < V) d4[v] = a[i], d4[V + v] = b[i];
    }
  }
}

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

  bool have_freqs = false;  // made by the block's first entry (most blocks of a prefill make none)

  const float* rawf = static_cast<const float*>(raw);
  const float* gatef = static_cast<const float*>(gate);
  const int lane = threadIdx.x & 31, k8 = lane & 7;
  const int group = threadIdx.x >> 3, groups = blockDim.x >> 3;
  const long long capacity = cache_rows < index_cache_rows ? cache_rows : index_cache_rows;

  // A row whose statics cannot be served (reported by the block that owns it).
  auto refused = [&](int slot, long long p) {
    return p < 0 || !slot_in(slot, cache) || !slot_in(slot, index_cache) || !slot_in(slot, tail);
  };
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const int slot = row_slot(statics, r);
    if (slot < 0) continue;
    const long long p = row_position(statics, r);
    if (refused(slot, p)) {
      if (threadIdx.x == 0) report_error(errors, ERR_STATICS);
      continue;
    }
    long long j;
    if constexpr (ratio == 1) {
      for (int d = threadIdx.x; d < Dh; d += blockDim.x) latent[d] = rawf[r * Dh + d];
      j = p;
    } else {
      if (p % ratio != ratio - 1) continue;
      // The group closing at p is the rows of positions p - ratio + 1 .. p: those of this step (from
      // p_first on) in raw and gate, row r - (p - q); earlier ones in the tail, position q at tail row q
      // mod tail_rows (tail_rows = ratio unless drafting made the tail longer, so a rewind into the
      // open group finds its rows).
      const float* t = reinterpret_cast<const float*>(slot_base(tail, slot));
      const long long p_first = row_position(statics, row_first(statics, r)), q0 = p - (ratio - 1);
      auto value_row = [&](long long k) {
        const long long q = q0 + k;
        return q >= p_first ? rawf + (r - (p - q)) * Dh : t + (q % tail_rows) * 2 * Dh;
      };
      auto gate_row = [&](long long k) {
        const long long q = q0 + k;
        return q >= p_first ? gatef + (r - (p - q)) * Dh : t + (q % tail_rows) * 2 * Dh + Dh;
      };
      for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
        float top = -__int_as_float(0x7f800000);
        for (long long k = 0; k < ratio; ++k) {
          const float g = gate_row(k)[d];
          top = top < g ? g : top;  // std::max(top, g)
        }
        float total = 0.0f, acc = 0.0f;
        for (long long k = 0; k < ratio; ++k) {
          const float e = static_cast<float>(exp(static_cast<double>(__fsub_rn(gate_row(k)[d], top))));
          total = __fadd_rn(total, e);
          acc = __fadd_rn(acc, __fmul_rn(e, value_row(k)[d]));
        }
        latent[d] = __fdiv_rn(acc, total);
      }
      j = p / ratio;
    }
    if (!have_freqs) {  // (rms_norm's barriers order these stores before their first reads)
      for (int i = threadIdx.x; i < kPairs; i += blockDim.x)
        freqs[i] = rope_frequency(i, rope_dim, theta, yarn_factor, yarn_original, beta_fast, beta_slow);
      have_freqs = true;
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
  if constexpr (ratio > 1) {
    // The last block out writes the tail: every block's reads of the earlier rows are done by then.
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      last = atomicAdd(&g_blocks_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    // A thread checks a row, its warp then writes the rows its lanes kept, one after another.
    for (long long base = 0; base < rows; base += blockDim.x) {
      const long long r = base + threadIdx.x;
      int slot = -1;
      long long p = 0;
      bool keep = false;
      if (r < rows) {
        slot = row_slot(statics, r);
        p = row_position(statics, r);
        keep = slot >= 0 && !refused(slot, p) && tail_row_kept(statics, rows, r, tail_rows);
      }
      for (unsigned mask = __ballot_sync(0xFFFFFFFFu, keep); mask; mask &= mask - 1) {
        const int l = __ffs(mask) - 1;
        const int s = __shfl_sync(0xFFFFFFFFu, slot, l);
        const long long q = __shfl_sync(0xFFFFFFFFu, p, l);
        write_tail_row<Dh>(reinterpret_cast<float*>(slot_base(tail, s)), rawf, gatef, r - lane + l, q, tail_rows);
      }
    }
    if (threadIdx.x == 0) g_blocks_done = 0;
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
