// kernels/sparse_attention.cuh — attention of one row's heads over its window rows and its selected
// compressed rows, with a per-head sink (docs/ops.md "sparse_attention"), flash-decoding style: the
// heads of a row share one key row (= value row), so a block takes a group of heads and reads each
// key once for all of them, and at decode a row's keys are split over blocks whose partial results
// (running max, sum, accumulator) one block combines.
//
// Phases of more than 16 rows (their variants have many_rows = 1: common/kernel_contract.h) with bf16
// activations, ring and cache run the tensor-core path of kernels/sparse_attention_prefill.cuh instead
// (its own grid and shared memory); what follows is the CUDA-core path of every other call.
//
// Launch (common/kernel_launch_attention.cpp): grid (R, ⌈H/G⌉, S), 256 threads a block; G (heads a
// block, at most kMaxGroup) and S (splits of the keys) come from the launch, the kernel reads them
// from gridDim (G = ⌈H / gridDim.y⌉). Dynamic shared memory: 4·(kTile·(Dp + 4) + G·Dp) bytes (a tile
// of keys and the group's queries as fp32, Dp = Dh rounded up to 8); static about 10 KiB.
// Key slots: the window's Wn slots (oldest position first), then the K listed entries; split s takes
// slots [s·P, s·P + P) (P = ⌈(Wn + K)/S⌉ rounded up to kTile), skipping positions before 0, unlisted
// (−1) and out-of-range entries (these report ERR_SELECTION). Each tile of kTile slots: the keys are
// fetched with kBatch loads a thread in flight, then dequantized into shared memory (a packed group's
// scale decoded once per 8 values, a this-step row's FP8 rounding from its group's amax found once by
// 4 lanes); the logits q·k·scale (lane i key i, each warp an eighth of the columns for every head, the
// parts summed in warp order); an online softmax by one warp a head; then o += p·k with a thread
// owning 2 dimensions of every head of the group.
// S = 1 (prefill, or few keys): the block divides by the denominator (with e^{sink−m}) and stores.
// S > 1: partials go to this module's __device__ arrays (kMaxPartials·(Dh + 2) floats, beside the
// memory ledger) and the last block of the (row, group) to finish (a counter, reset by that block)
// combines them in split order, so the result does not depend on which block finishes last: a warp a
// head finds the splits' weights (a lane a split), then every thread sums its outputs' partials with
// several outputs' and splits' loads in flight at once.
//
// RoPE (docs/ops.md "sparse_attention"): q arrives before its rope; the last rope_dim dims of every head
// are rotated by +θ in shared memory before the first logits, and the output's by −θ after its rounding,
// as it is stored (a thread holds output pairs). The cos/sin table is the row's (kernels/rope.cuh's bits).
//
// Numerics: not the CPU's bits (fp32 sums in another order, fused multiply-adds, expf); within the op
// test's tolerances. A DT_PACKED ring and cache (the official cache format, kernels/cache_rows.cuh):
// ring rows are FP8 and cache rows FP4, dequantized where read; this step's rows, read from kv, are
// rounded through the ring's FP8 format, as the ring will hold them (the CPU rounds them the same way).
#pragma once

#include "rope.cuh"
#include "sparse_attention_prefill.cuh"
#include "sparse_attention_rows.cuh"

namespace dsv41k {
namespace sparse_attention_detail {
constexpr int kThreads = 256;
constexpr int kTile = 32;           // key slots a tile (a lane each in the softmax)
constexpr int kMaxGroup = 8;        // heads a block (a warp each in the softmax)
constexpr int kMaxSplits = 32;      // blocks a (row, group) at most (release world 4, r1: 20, a tile each)
constexpr int kMaxPartials = 4096;  // R·H·S of a split launch at most: sizes the partial arrays
static_assert(kMaxSplits <= 32, "the combine takes a split a lane");
__device__ constexpr long long padded_dim(long long dh) { return (dh + 7) / 8 * 8; }
__device__ constexpr long long dynamic_shared_bytes(long long dh, long long group) {
  return 4 * (kTile * (padded_dim(dh) + 4) + group * padded_dim(dh));
}

#ifndef DSV41_CONTRACT_SCAN
using namespace sparse_attention_rows;

// Split launches' partial results, (r·H + h)·S + s: the accumulator, and (max, sum).
template <long long Dh>
__device__ float g_acc[kMaxPartials * Dh];
__device__ float2 g_max_sum[kMaxPartials];
__device__ unsigned g_finished[kMaxPartials];  // per (row, group): blocks done (zero at load)

// The raw bits of eight key values u·8 .. u·8 + 7 of one key row, fetched before any is decoded so
// that a thread's loads of a tile are all in flight at once: act values (bf16 pairs, or fp32 / any
// value when Dh is not a multiple of 8), or a packed row's codes and its group's scale byte.
template <int Dh, int DT>
struct KeyBits {
  static constexpr int kWords = DT == DT_F32 || Dh % 8 != 0 ? 8 : 4;
  unsigned w[kWords];
  unsigned scale;
};

__device__ __forceinline__ unsigned bytes4(const unsigned char* b) {
  return b[0] | b[1] << 8 | b[2] << 16 | static_cast<unsigned>(b[3]) << 24;
}

template <int Dh, int DT, bool kPacked>
__device__ __forceinline__ void fetch_eight(const char* kr, int kind, int u, KeyBits<Dh, DT>& k) {
#pragma unroll
  for (int j = 0; j < KeyBits<Dh, DT>::kWords; ++j) k.w[j] = 0u;
  k.scale = 0u;
  if (kind == KEY_NONE) return;
  const unsigned char* b = reinterpret_cast<const unsigned char*>(kr);
  if constexpr (kPacked) {
    if (kind == KEY_CACHE) {  // FP4 codes, an E4M3 scale per 16
      k.scale = b[Dh / 2 + u / 2];
      constexpr bool kAligned = cache_rows::row_bytes<CACHE_COMPRESSED>(Dh) % 4 == 0;
      k.w[0] = kAligned ? *reinterpret_cast<const unsigned*>(b + 4 * u) : bytes4(b + 4 * u);
      return;
    }
    if (kind == KEY_RING) {  // FP8 codes, a UE8M0 scale per 32 (rows of Dh + Dh/32 bytes: not always 8-aligned)
      k.scale = b[Dh + u / 4];
      if constexpr (cache_rows::row_bytes<CACHE_WINDOW>(Dh) % 8 == 0) {
        const uint2 c = *reinterpret_cast<const uint2*>(b + 8 * u);
        k.w[0] = c.x, k.w[1] = c.y;
      } else {
        k.w[0] = bytes4(b + 8 * u), k.w[1] = bytes4(b + 8 * u + 4);
      }
      return;
    }
  }
  if constexpr (Dh % 8 == 0) {  // an act row: 16-byte loads
    const uint4* p = reinterpret_cast<const uint4*>(kr + 8 * u * (DT == DT_F32 ? 4 : 2));
    const uint4 a = p[0];
    k.w[0] = a.x, k.w[1] = a.y, k.w[2] = a.z, k.w[3] = a.w;
    if constexpr (DT == DT_F32) {
      const uint4 c = p[1];
      k.w[4] = c.x, k.w[5] = c.y, k.w[6] = c.z, k.w[7] = c.w;
    }
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) k.w[j] = 8 * u + j < Dh ? __float_as_uint(load<DT>(kr, 8 * u + j)) : 0u;
  }
}

// The eight values of fetch_eight's bits (zeros for no key). Every lane of the warp calls it: the FP8
// rounding of a this-step row (packed ring) shares its group's amax by shuffles among the 4 lanes that
// hold the group's 32 values.
template <int Dh, int DT, bool kPacked>
__device__ __forceinline__ void decode_eight(const KeyBits<Dh, DT>& k, int kind, float* v) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    if constexpr (DT == DT_F32 || Dh % 8 != 0)
      v[j] = __uint_as_float(k.w[j]);
    else
      v[j] = bf16_bits_to_float(static_cast<unsigned short>(j & 1 ? k.w[j / 2] >> 16 : k.w[j / 2] & 0xFFFFu));
  }
  if constexpr (kPacked) {
    if (kind == KEY_CACHE) {
      const float scale = cache_rows::scale_value<CACHE_COMPRESSED>(k.scale);
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = __fmul_rn(e2m1_to_float((k.w[0] >> (4 * j)) & 15u), scale);
    } else if (kind == KEY_RING) {
      const float scale = e8m0_to_float(k.scale);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        v[j] = __fmul_rn(e4m3_to_float((k.w[0] >> (8 * j)) & 0xFFu), scale);
        v[j + 4] = __fmul_rn(e4m3_to_float((k.w[1] >> (8 * j)) & 0xFFu), scale);
      }
    }
    float amax = 0.0f;
    if (kind == KEY_KV)
#pragma unroll
      for (int j = 0; j < 8; ++j) amax = fmaxf(amax, fabsf(v[j]));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    if (kind == KEY_KV) {  // as cache_rows::window_rounded, the group's scale found once
      const float scale = e8m0_to_float(cache_rows::scale_byte<CACHE_WINDOW>(amax));
#pragma unroll
      for (int j = 0; j < 8; ++j)
        v[j] = __fmul_rn(e4m3_to_float(cache_rows::float_to_e4m3(__fdiv_rn(v[j], scale))), scale);
    }
  }
}

// This thread's accumulator values (dimensions 2·(tid + c·kThreads) and the next, of heads g < gc),
// each handed to put(head, dimension, value).
template <int Dh, int P, class Put>
__device__ __forceinline__ void each_acc(const float (&acc)[kMaxGroup][P][2], int gc, Put put) {
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g)
    if (g < gc)
#pragma unroll
      for (int c = 0; c < P; ++c) {
        const int d = 2 * (static_cast<int>(threadIdx.x) + c * kThreads);
        if (d < Dh) put(g, d, acc[g][c][0]);
        if (d + 1 < Dh) put(g, d + 1, acc[g][c][1]);
      }
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace sparse_attention_detail

namespace entry {

template <long long heads, long long head_dim, long long window, long long topk, long long rope_dim,
          long long many_rows, int dtype_q, int dtype_kv, int dtype_ring, int dtype_cache, int format_sink,
          int dtype_out>
__device__ __forceinline__ void sparse_attention(Rows rows, Statics statics, Errors errors, Scratch q, Scratch kv,
                                                 State ring, Int ring_rows, State cache, Int cache_rows,
                                                 Scratch selected, Weight sink, Real scale, Scratch out, Real theta,
                                                 Real yarn_factor, Int yarn_original, Real beta_fast,
                                                 Real beta_slow) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(heads >= 1 && heads <= 65535, "heads out of range");
  static_assert(head_dim >= 1 && head_dim <= 2048,
                "head_dim out of range (registers: 2 dims of 8 heads a thread a pass)");
  static_assert(window >= 1 && topk >= 0 && window + topk <= (1ll << 30), "window >= 1, topk >= 0");
  static_assert(dtype_kv == DT_F32 || dtype_kv == DT_BF16, "kv is an act buffer");
  static_assert(dtype_q == dtype_kv, "q is an act buffer (the query before its rope)");
  constexpr bool kPacked = dtype_ring == DT_PACKED;
  static_assert((kPacked || dtype_ring == dtype_kv) && dtype_out == dtype_kv, "one call's activations share a dtype");
  static_assert(topk > 0 ? dtype_cache == (kPacked ? DT_PACKED : dtype_kv) : dtype_cache == -1,
                "cache present iff topk > 0, in the ring's format");
  static_assert(!kPacked || head_dim % 32 == 0, "packed rows are whole groups of 32");
  static_assert(head_dim % 2 == 0, "head_dim even: the output is stored in pairs (the inverse rope's)");
  static_assert(rope_dim >= 0 && rope_dim <= head_dim && rope_dim % 2 == 0 && rope_dim <= 64,
                "rope_dim even, within the head, and its table one warp's work");
  using namespace sparse_attention_detail;
  const rope_detail::RopeArgs rope_args{theta, yarn_factor, yarn_original, beta_fast, beta_slow};
  constexpr int H = static_cast<int>(heads), Dh = static_cast<int>(head_dim), Wn = static_cast<int>(window),
                K = static_cast<int>(topk);
  // Prefill phases' variants (many_rows: common/kernel_contract.h) take the tensor-core path where it takes
  // the shape; the CUDA-core path below is then a discarded branch, so neither its registers nor its
  // __device__ partials (g_acc, about 8 MB at Dh 512) come with them, and the other way round.
  if constexpr (many_rows && sparse_attention_prefill::takes(dtype_kv, dtype_ring, head_dim)) {
    return sparse_attention_prefill::attend<H, Dh, Wn, K, static_cast<int>(rope_dim), dtype_q, format_sink>(
        rows, statics, errors, q, kv, ring, ring_rows, cache, cache_rows, selected, sink, scale, out, rope_args);
  } else {
    constexpr int Dp = static_cast<int>(padded_dim(Dh)), kRS = Dp + 4, kUnits = Dp / 8;
    constexpr int kPairs = (Dp / 2 + kThreads - 1) / kThreads, kWarps = kThreads / 32;
    // Key loads a thread has in flight while filling a tile: all of a tile's at Dh 512 for bf16 rows (one
    // round trip); 4 for f32 and packed rows, whose bits and decoding take more registers (8 made them
    // 175-237 registers: one block an SM, and spills in f32).
    constexpr int kBatch = dtype_kv == DT_BF16 && !kPacked ? 8 : 4;
    constexpr long long kRowBytes = static_cast<long long>(Dh) * (dtype_kv == DT_BF16 ? 2 : 4);
    constexpr long long kRingRowBytes = kPacked ? cache_rows::row_bytes<CACHE_WINDOW>(Dh) : kRowBytes;
    constexpr long long kCacheRowBytes = kPacked ? cache_rows::row_bytes<CACHE_COMPRESSED>(Dh) : kRowBytes;
    const float kNegInf = -__int_as_float(0x7f800000);
    extern __shared__ float4 dynamic_shared[];
    float* keys = reinterpret_cast<float*>(dynamic_shared);      // [kTile][kRS]
    float* qs = keys + kTile * kRS;                              // [G][Dp]
    __shared__ __align__(16) float p_tile[kTile][kMaxGroup];     // e^{l − m} of the tile
    __shared__ float part_sum[kThreads / 32][kMaxGroup][kTile];  // the warps' parts of the logits
    __shared__ float run_max[kMaxGroup], run_sum[kMaxGroup], rescale[kMaxGroup];
    __shared__ float weights[kMaxGroup][kMaxSplits];
    __shared__ const char* key_row[kTile];
    __shared__ int key_kind[kTile];
    __shared__ int last_block;
    constexpr int RP = static_cast<int>(rope_dim / 2);
    __shared__ float rope_cs[RP > 0 ? RP : 1], rope_sn[RP > 0 ? RP : 1];  // the row's table (+θ)

    const long long r = blockIdx.x;
    const int G = (H + static_cast<int>(gridDim.y) - 1) / static_cast<int>(gridDim.y);
    const int h0 = static_cast<int>(blockIdx.y) * G, gc = H - h0 < G ? H - h0 : G;
    const int S = static_cast<int>(gridDim.z), s = static_cast<int>(blockIdx.z);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    if (r >= rows || gc <= 0) return;
    auto zero_out = [&] {
      if (s != 0) return;
      for (int i = tid; i < gc * Dh; i += kThreads) store<dtype_out>(out, (r * H + h0) * Dh + i, 0.0f);
    };
    // A launch the launcher never makes:
    if (G > kMaxGroup || S > kMaxSplits || (S > 1 && rows * H * S > kMaxPartials)) {
      if (tid == 0 && s == 0) report_error(errors, ERR_CAPACITY);
      zero_out();
      return;
    }
    RowKeys rk;
    const int row_state = row_keys<Wn>(statics, r, kv, ring, ring_rows, cache, cache_rows, rk);
    if (row_state != ROW_ATTEND) {
      if (row_state != ROW_INACTIVE && tid == 0 && s == 0) report_error(errors, row_state);
      return zero_out();
    }
    // The row's rope table (+θ: q's rope; −θ: the output's) is an fp64 chain: the last warp computes it
    // while the first finds the first tile's keys (their loads overlap it), and q is rotated in shared
    // memory after the barrier that publishes both (`roped`: block-uniform). Computing it after the
    // key loads were issued instead held those loads' registers across the chain: 181 registers.
    if (tid >= kThreads - 32 && tid - (kThreads - 32) < RP)
      rope_detail::table_entry(rope_args, rope_dim, tid - (kThreads - 32), row_position(statics, r), rope_cs, rope_sn);
    bool roped = false;
    // Output pair (d, d + 1) of head h0 + g: b(v), then the inverse rope (−θ) on the last rope_dim dims.
    auto put = [&](int g, int d, float v0, float v1) {
      float a = round_as<dtype_out>(v0), b = round_as<dtype_out>(v1);
      if (d >= Dh - static_cast<int>(rope_dim)) {
        const int i = (d - (Dh - static_cast<int>(rope_dim))) >> 1;
        rope_detail::rotate_pair(a, b, rope_cs[i], -rope_sn[i], a, b);  // e, f by value
      }
      store<dtype_out>(out, (r * H + h0 + g) * Dh + d, a);
      store<dtype_out>(out, (r * H + h0 + g) * Dh + d + 1, b);
    };

    for (int i = tid; i < gc * Dp; i += kThreads) {
      const int d = i % Dp;
      qs[i] = d < Dh ? load<dtype_q>(q, (r * H + h0 + i / Dp) * Dh + d) : 0.0f;
    }
    if (tid < kMaxGroup) run_max[tid] = kNegInf, run_sum[tid] = 0.0f;
    float acc[kMaxGroup][kPairs][2];
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g)
#pragma unroll
      for (int c = 0; c < kPairs; ++c) acc[g][c][0] = acc[g][c][1] = 0.0f;

    constexpr int kSlots = Wn + K;
    const int per = ((kSlots + S - 1) / S + kTile - 1) / kTile * kTile;
    const int lo = s * per, hi = lo + per < kSlots ? lo + per : kSlots;
    for (int base = lo; base < hi; base += kTile) {
      // Which key each slot of the tile is.
      bool live = false;
      if (tid < kTile) {
        const int j = base + tid;
        const char* kr = nullptr;
        const int kind = j < hi ? key_at<Wn, K, kRowBytes, kRingRowBytes, kCacheRowBytes>(rk, r, j, selected, errors,
                                                                                          blockIdx.y == 0, kr)
                                : KEY_NONE;
        key_row[tid] = kr;
        key_kind[tid] = kind;
        live = kind != KEY_NONE;
      }
      if (!__syncthreads_or(live)) continue;
      if (!roped) {  // q's rope, in place (pair i of every head of the group); read after the next barrier
        constexpr int O = Dh - static_cast<int>(rope_dim);
        for (int u = tid; u < gc * RP; u += kThreads) {
          float* e = qs + (u / RP) * Dp + O + 2 * (u % RP);
          rope_detail::rotate_pair(e[0], e[1], rope_cs[u % RP], rope_sn[u % RP], e[0], e[1]);  // e, f by value
        }
        roped = true;
      }
      // The tile's keys as fp32 rows: kBatch loads a thread in flight, then their decoding.
      for (int b0 = 0; b0 < kTile * kUnits; b0 += kBatch * kThreads) {  // kTile·kUnits is a multiple of 32
        KeyBits<Dh, dtype_kv> bits[kBatch];
#pragma unroll
        for (int k = 0; k < kBatch; ++k) {
          const int it = b0 + k * kThreads + tid;
          if (it < kTile * kUnits)
            fetch_eight<Dh, dtype_kv, kPacked>(key_row[it / kUnits], key_kind[it / kUnits], it % kUnits, bits[k]);
        }
#pragma unroll
        for (int k = 0; k < kBatch; ++k) {
          const int it = b0 + k * kThreads + tid;
          if (it >= kTile * kUnits) continue;  // warp-uniform
          float v[8];
          decode_eight<Dh, dtype_kv, kPacked>(bits[k], key_kind[it / kUnits], v);
          float4* dst = reinterpret_cast<float4*>(keys + (it / kUnits) * kRS + 8 * (it % kUnits));
          dst[0] = make_float4(v[0], v[1], v[2], v[3]);
          dst[1] = make_float4(v[4], v[5], v[6], v[7]);
        }
      }
      __syncthreads();
      // Logits: warp w sums the float4 columns ≡ w (mod 8) of key `lane` (rows kRS apart: no bank
      // conflicts) against every head of the group (a broadcast); the warps' parts meet in `part_sum`.
      {
        float part[kMaxGroup];
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g) part[g] = 0.0f;
        const float4* kk = reinterpret_cast<const float4*>(keys + lane * kRS);
        for (int c = warp; c < Dp / 4; c += kWarps) {
          const float4 b = kk[c];
#pragma unroll
          for (int g = 0; g < kMaxGroup; ++g)
            if (g < gc) {
              const float4 a = reinterpret_cast<const float4*>(qs + g * Dp)[c];
              part[g] = fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, fmaf(a.w, b.w, part[g]))));
            }
        }
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g)
          if (g < gc) part_sum[warp][g][lane] = part[g];
      }
      __syncthreads();
      // Online softmax: warp g keeps head g's running max and sum, lane i key i of the tile.
      if (warp < gc) {
        float dot = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) dot += part_sum[w][warp][lane];
        const float l = key_kind[lane] == KEY_NONE ? kNegInf : dot * scale, m_old = run_max[warp];
        const float m_new = fmaxf(m_old, warp_max(l));
        const float e = m_new == kNegInf ? 0.0f : expf(l - m_new);
        const float c = m_old == kNegInf ? 0.0f : expf(m_old - m_new);
        const float sum = warp_sum(e);
        p_tile[lane][warp] = e;
        if (lane == 0) run_max[warp] = m_new, run_sum[warp] = fmaf(run_sum[warp], c, sum), rescale[warp] = c;
      }
      __syncthreads();
      // o += e·k, a thread owning dimensions 2·(tid + c·kThreads) and the next of every head.
#pragma unroll
      for (int g = 0; g < kMaxGroup; ++g)
        if (g < gc)
#pragma unroll
          for (int c = 0; c < kPairs; ++c) acc[g][c][0] *= rescale[g], acc[g][c][1] *= rescale[g];
      for (int i = 0; i < kTile; ++i) {
        const float4 e0 = reinterpret_cast<const float4*>(p_tile[i])[0],
                     e1 = reinterpret_cast<const float4*>(p_tile[i])[1];
        const float e[kMaxGroup] = {e0.x, e0.y, e0.z, e0.w, e1.x, e1.y, e1.z, e1.w};
#pragma unroll
        for (int c = 0; c < kPairs; ++c) {
          const int d2 = tid + c * kThreads;
          if (2 * d2 >= Dp) continue;
          const float2 k2 = reinterpret_cast<const float2*>(keys + i * kRS)[d2];
#pragma unroll
          for (int g = 0; g < kMaxGroup; ++g)
            if (g < gc) acc[g][c][0] = fmaf(e[g], k2.x, acc[g][c][0]), acc[g][c][1] = fmaf(e[g], k2.y, acc[g][c][1]);
        }
      }
      __syncthreads();  // the next tile overwrites keys and p_tile
    }

    if (S == 1) {  // the block holds every key: add the sink and divide
      if (tid < gc) {
        const float sk = weight_at<format_sink>(sink, h0 + tid), m = run_max[tid], top = fmaxf(m, sk);
        const float wm = m == kNegInf ? 0.0f : expf(m - top);
        weights[tid][0] = wm / (fmaf(run_sum[tid], wm, expf(sk - top)));
      }
      __syncthreads();
#pragma unroll
      for (int g = 0; g < kMaxGroup; ++g)
        if (g < gc)
#pragma unroll
          for (int c = 0; c < kPairs; ++c) {
            const int d = 2 * (tid + c * kThreads);
            if (d < Dh) put(g, d, acc[g][c][0] * weights[g][0], acc[g][c][1] * weights[g][0]);
          }
      return;
    }

    // Split: publish this block's partials; the last block of the (row, group) combines them.
    float* part = g_acc<head_dim>;
    auto index = [&](int g, int split) { return (r * H + h0 + g) * S + split; };
    each_acc<Dh>(acc, gc, [&](int g, int d, float v) { part[index(g, s) * Dh + d] = v; });
    if (tid < gc) g_max_sum[index(tid, s)] = make_float2(run_max[tid], run_sum[tid]);
    __threadfence();
    __syncthreads();
    const long long counter = r * gridDim.y + blockIdx.y;
    if (tid == 0) last_block = atomicAdd(&g_finished[counter], 1u) == static_cast<unsigned>(S - 1);
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    if (warp < gc) {  // each split's weight e^{m_s − top} / denominator: warp g, lane k split k
      const float sk = weight_at<format_sink>(sink, h0 + warp);
      const float2 ms = lane < S ? __ldcg(&g_max_sum[index(warp, lane)]) : make_float2(kNegInf, 0.0f);
      const float top = fmaxf(sk, warp_max(ms.x));
      const float w = ms.x == kNegInf ? 0.0f : expf(ms.x - top);
      float* sums = part_sum[0][warp];  // the logits' scratch is free after the last tile
      if (lane < S) weights[warp][lane] = w, sums[lane] = ms.y;
      __syncwarp();
      if (lane == 0) {  // the denominator in split order
        float denominator = expf(sk - top);
        for (int k = 0; k < S; ++k) denominator = fmaf(sums[k], weights[warp][k], denominator);
        rescale[warp] = denominator;
      }
      __syncwarp();
      if (lane < S) weights[warp][lane] = w / rescale[warp];
    }
    if (tid == 0) g_finished[counter] = 0u;  // for the next launch
    __syncthreads();
    // kCombine output pairs a thread at once (a pair: the inverse rope's), kSplitsAtOnce splits' partials
    // of all of them loaded before they are summed (in split order): a thread's loads are in flight
    // together, not one at a time.
    constexpr int kCombine = 2, kSplitsAtOnce = 8;
    const int pairs = gc * Dh / 2;
    for (int i0 = tid; i0 < pairs; i0 += kCombine * kThreads) {
      float o[kCombine][2];
#pragma unroll
      for (int c = 0; c < kCombine; ++c) o[c][0] = o[c][1] = 0.0f;
      for (int k0 = 0; k0 < S; k0 += kSplitsAtOnce) {
        float v[kSplitsAtOnce][kCombine][2];
#pragma unroll
        for (int k = 0; k < kSplitsAtOnce; ++k)
#pragma unroll
          for (int c = 0; c < kCombine; ++c) {
            const int e = 2 * (i0 + c * kThreads);
            const bool in = e < gc * Dh && k0 + k < S;
            const float* src = part + index(e / Dh, k0 + k) * Dh + e % Dh;
            v[k][c][0] = in ? __ldcg(src) : 0.0f;
            v[k][c][1] = in ? __ldcg(src + 1) : 0.0f;
          }
#pragma unroll
        for (int k = 0; k < kSplitsAtOnce; ++k)
#pragma unroll
          for (int c = 0; c < kCombine; ++c) {
            const int e = 2 * (i0 + c * kThreads);
            if (e < gc * Dh && k0 + k < S) {
              o[c][0] = fmaf(v[k][c][0], weights[e / Dh][k0 + k], o[c][0]);
              o[c][1] = fmaf(v[k][c][1], weights[e / Dh][k0 + k], o[c][1]);
            }
          }
      }
#pragma unroll
      for (int c = 0; c < kCombine; ++c) {
        const int e = 2 * (i0 + c * kThreads);
        if (e < gc * Dh) put(e / Dh, e % Dh, o[c][0], o[c][1]);
      }
    }
  }
#endif
}

}  // namespace entry
}  // namespace dsv41k
