// kernels/sparse_attention_prefill.cuh — sparse_attention of prefill-sized phases on tensor cores
// (docs/ops.md "sparse_attention"): the heads of one row share every key (one kv head), so a block takes
// a row and 16 of its heads as the 16 rows of mma.sync m16n8k16 and walks the row's key slots in tiles
// of 32 keys (two stages of cp.async copies, cp_async.cuh), flash-attention style: logits Q·Kᵀ, an online
// softmax, O += P·V (V = K).
//
// Taken (kernels/sparse_attention.cuh's entry; common/kernel_launch_attention.cpp decides the same) by
// phases of more than 16 rows (variants with many_rows = 1: common/kernel_contract.h) with bf16
// activations and bf16 ring and cache (served bf16 mode, bf16 cache format) and Dh a multiple of 16 up
// to kMaxDim. Check mode (f32) and the packed (official) caches keep the CUDA-core path. Launch: grid
// (R, ⌈H/16⌉, 1), 256 threads, shared_bytes(Dh) of dynamic shared memory (the host's copy:
// common/kernel_launch_attention.cpp prefill_shared).
//
// RoPE (rope_dim RD): q's rope pairs are rotated (+θ, fp32) as the fragments are built, and the output
// is rounded to bf16, rotated back (−θ) and stored; the row's cos/sin table comes first (the last warp).
//
// Numerics. q is bf16, its rope dims rotated in fp32: each value is split exactly into bf16 hi + bf16 lo
// (|q − hi − lo| ≤ 2⁻¹⁷|q|; lo is zero outside the rope dims), and
// the logits are two MMAs (hi·k + lo·k) with fp32 accumulation, so they are fp32 dots up to that split
// (the keys are bf16 already). Each warp sums its 16-dimension units (w, w + 8, ...); the eight parts
// are added in a fixed order (warp w + warp w+4, then the four in order): no result depends on timing.
// The softmax weights e^{l − m} (fp32, summed in fp32 for the denominator) are split the same way for
// P·V, two MMAs: a weight rounded to bf16 alone would be off by up to 2⁻⁹, an error of the order of the
// op test's absolute bound on outputs near zero. The sink and empty rows as the CUDA-core path (zeros
// when no key and the sink alone).
#pragma once

#include "cp_async.cuh"
#include "gemm_tile.cuh"
#include "rope.cuh"
#include "sparse_attention_rows.cuh"

namespace dsv41k {
namespace sparse_attention_prefill {
constexpr int kThreads = 256, kWarps = 8;
constexpr int kHeads = 16;              // heads a block: the MMA's rows
constexpr int kKeys = 32;               // keys a tile: 4 MMA columns of 8
constexpr int kEach = kKeys / 16;       // keys of a tile a softmax thread takes (16 threads a head)
constexpr int kMaxDim = 512;            // the key tile's shared memory grows with Dh
constexpr int kPartStride = kKeys + 8;  // floats a head's logit parts: float2 stores in distinct banks
constexpr int kPStride = kKeys + 8;     // bf16 a head's weights: ldmatrix rows in distinct banks
__device__ constexpr long long key_stride(long long dh) { return dh + 8; }  // bf16: ldmatrix conflict-free
__device__ constexpr bool takes(int dtype_kv, int dtype_ring, long long dh) {
  return dtype_kv == DT_BF16 && dtype_ring == DT_BF16 && dh % 16 == 0 && dh <= kMaxDim;
}
// Dynamic shared memory: two stages of key tiles, four warps' logit parts, the weights (hi, lo), two
// stages of the tiles' key rows and kinds, and per head the rescale, max and sum.
__device__ constexpr long long shared_bytes(long long dh) {
  return 2 * (2 * kKeys * key_stride(dh)) + 4 * 4 * kHeads * kPartStride + 2 * 2 * kHeads * kPStride +
         2 * (8 * kKeys + 4 * kKeys) + 4 * 3 * kHeads;
}

#ifndef DSV41_CONTRACT_SCAN
using namespace sparse_attention_rows;

// Two floats as bf16 bits, the lower column in the low half (an MMA operand register).
__device__ __forceinline__ unsigned pack_bf16(float lo_col, float hi_col) {
  return float_to_bf16_bits(lo_col) | static_cast<unsigned>(float_to_bf16_bits(hi_col)) << 16;
}

// The first tile at or after slot `from` with a key (kSlots when none): its rows and kinds (threads
// below kKeys find a slot each). Every thread calls it.
template <int Dh, int Wn, int K>
__device__ __forceinline__ int next_tile(const RowKeys& rk, long long r, int from, Scratch selected, Errors errors,
                                         const char** key_row, int* key_kind) {
  constexpr int kSlots = Wn + K;
  constexpr long long kRowBytes = 2ll * Dh;  // bf16 rows: kv, ring and cache alike
  for (int base = from; base < kSlots; base += kKeys) {
    bool live = false;
    if (threadIdx.x < kKeys) {
      const int j = base + static_cast<int>(threadIdx.x);
      const char* row = nullptr;
      const int kind =
          j < kSlots ? key_at<Wn, K, kRowBytes, kRowBytes, kRowBytes>(rk, r, j, selected, errors, blockIdx.y == 0, row)
                     : KEY_NONE;
      key_row[threadIdx.x] = row;
      key_kind[threadIdx.x] = kind;
      live = kind != KEY_NONE;
    }
    if (__syncthreads_or(live)) return base;
  }
  return kSlots;
}

// Issues a tile's 16-byte copies (one commit group); absent keys are written as zeros (their weight
// is 0, and 0·NaN would not be).
template <int Dh>
__device__ __forceinline__ void load_tile(unsigned short* tile, const char* const* key_row, const int* key_kind) {
  for (int c = threadIdx.x; c < kKeys * Dh / 8; c += kThreads) {
    const int key = c / (Dh / 8), u = c % (Dh / 8);
    unsigned short* dst = tile + key * key_stride(Dh) + 8 * u;
    if (key_kind[key] == KEY_NONE)
      *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);
    else
      cp_async16(dst, key_row[key] + 16 * u);
  }
  cp_async_commit();
}

// One block: row r, heads h0 .. h0 + gc − 1 (gc ≤ kHeads).
template <int H, int Dh, int Wn, int K, int RD, int dtype_q, int format_sink>
__device__ __forceinline__ void attend(Rows rows, Statics statics, Errors errors, Scratch q, Scratch kv, State ring,
                                       Int ring_rows, State cache, Int cache_rows, Scratch selected, Weight sink,
                                       Real scale, Scratch out, const rope_detail::RopeArgs& rope_args) {
  static_assert(kEach == 2, "a softmax thread takes a float2 of logits");
  static_assert(Dh % 16 == 0 && Dh <= kMaxDim, "Dh is whole 16-dimension units");
  // A warp's 16-dimension units: k-steps of the logits and column pairs of P·V, w, w + 8, ...
  static_assert(shared_bytes(Dh) <= 227 * 1024, "the key tiles outgrow an SM's shared memory");
  constexpr int KS = static_cast<int>(key_stride(Dh)), kUnits = Dh / 16, kMine = (kUnits + kWarps - 1) / kWarps;
  constexpr int kSlots = Wn + K;
  const float kNegInf = -__int_as_float(0x7f800000);
  extern __shared__ __align__(16) unsigned char prefill_shared[];
  unsigned short* keys = reinterpret_cast<unsigned short*>(prefill_shared);  // [2 stages][kKeys][KS]
  float* parts = reinterpret_cast<float*>(keys + 2 * kKeys * KS);            // [4][kHeads][kPartStride]
  unsigned short* ps =
      reinterpret_cast<unsigned short*>(parts + 4 * kHeads * kPartStride);            // [hi, lo][kHeads][kPStride]
  const char** key_row = reinterpret_cast<const char**>(ps + 2 * kHeads * kPStride);  // [2 stages][kKeys]
  int* key_kind = reinterpret_cast<int*>(key_row + 2 * kKeys);                        // [2 stages][kKeys]
  float* rescale = reinterpret_cast<float*>(key_kind + 2 * kKeys);
  float* head_max = rescale + kHeads;
  float* head_sum = head_max + kHeads;

  const long long r = blockIdx.x;
  const int h0 = static_cast<int>(blockIdx.y) * kHeads, gc = H - h0 < kHeads ? H - h0 : kHeads;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  if (r >= rows || gc <= 0) return;
  unsigned short* outs = static_cast<unsigned short*>(out);
  RowKeys rk;
  const int row_state = row_keys<Wn>(statics, r, kv, ring, ring_rows, cache, cache_rows, rk);
  if (row_state != ROW_ATTEND) {
    if (row_state != ROW_INACTIVE && tid == 0) report_error(errors, row_state);
    for (int i = tid; i < gc * Dh; i += kThreads) outs[(r * H + h0) * Dh + i] = 0;
    return;
  }
  // The row's rope table (+θ: q's rope as the fragments are built; −θ: the output's), by the last warp.
  __shared__ float rope_cs[RD > 0 ? RD / 2 : 1], rope_sn[RD > 0 ? RD / 2 : 1];
  if (warp == kWarps - 1 && lane < RD / 2)
    rope_detail::table_entry(rope_args, RD, lane, row_position(statics, r), rope_cs, rope_sn);
  __syncthreads();

  // This warp's k-steps (16 dimensions each: w, w + 8, ...) of the 16 heads' queries as hi/lo A fragments.
  unsigned qhi[kMine][4], qlo[kMine][4];
#pragma unroll
  for (int i = 0; i < kMine; ++i) {
    const int k0 = 16 * (warp + kWarps * i);
#pragma unroll
    for (int a = 0; a < 4; ++a) {  // a0: (g, 2t), a1: (g + 8, 2t), a2: (g, 2t + 8), a3: (g + 8, 2t + 8)
      const int head = g + 8 * (a & 1), d = k0 + 2 * t + 8 * (a >> 1);
      float2 v = make_float2(0.0f, 0.0f);
      if (head < gc && k0 < Dh) {  // q's pair (d, d + 1), rotated when it is a rope pair
        const long long at = (r * H + h0 + head) * Dh + d;
        v = make_float2(load<dtype_q>(q, at), load<dtype_q>(q, at + 1));
        if (d >= Dh - RD) {
          const int i = (d - (Dh - RD)) >> 1;
          rope_detail::rotate_pair(v.x, v.y, rope_cs[i], rope_sn[i], v.x, v.y);  // e, f by value
        }
      }
      const float hx = bf16_round(v.x), hy = bf16_round(v.y);
      qhi[i][a] = pack_bf16(hx, hy);
      qlo[i][a] = pack_bf16(v.x - hx, v.y - hy);
    }
  }
  float o[kMine][2][4];
#pragma unroll
  for (int i = 0; i < kMine; ++i)
#pragma unroll
    for (int n = 0; n < 2; ++n) o[i][n][0] = o[i][n][1] = o[i][n][2] = o[i][n][3] = 0.0f;
  // The softmax's thread: head tid / 16, keys kEach·(tid % 16) and on of a tile; its running max and sum.
  const int sh = tid >> 4, sk = kEach * (tid & 15);
  float run_max = kNegInf, run_sum = 0.0f;

  // Tiles of key slots in a two-stage pipeline: tile n + 1's rows are found and its copies issued
  // before tile n is computed. Tiles without a key are skipped.
  int stage = 0;
  int base = next_tile<Dh, Wn, K>(rk, r, 0, selected, errors, key_row, key_kind);
  if (base < kSlots) load_tile<Dh>(keys, key_row, key_kind);
  while (base < kSlots) {
    const int next = next_tile<Dh, Wn, K>(rk, r, base + kKeys, selected, errors, key_row + (stage ^ 1) * kKeys,
                                          key_kind + (stage ^ 1) * kKeys);
    if (next < kSlots) {
      load_tile<Dh>(keys + (stage ^ 1) * kKeys * KS, key_row + (stage ^ 1) * kKeys, key_kind + (stage ^ 1) * kKeys);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const unsigned short* tile = keys + stage * kKeys * KS;
    const int* kinds = key_kind + stage * kKeys;
    // Logits over this warp's dimensions: s[n] holds (head g, keys 8n + 2t, +1) and (head g + 8, the same).
    constexpr int kCols = kKeys / 8;
    float s[kCols][4];
#pragma unroll
    for (int n = 0; n < kCols; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int i = 0; i < kMine; ++i) {
      const int k0 = 16 * (warp + kWarps * i);
      if (k0 >= Dh) continue;  // warp-uniform (Dh < 128 only)
#pragma unroll
      for (int np = 0; np < kCols / 2; ++np) {  // keys 16np .. 16np + 15: two MMA columns
        unsigned b[4];
        gemm_tile::load_x4(tile + (16 * np + 8 * (lane >> 4) + (lane & 7)) * KS + k0 + 8 * ((lane >> 3) & 1), b);
        gemv_detail::mma_bf16(s[2 * np], qhi[i][0], qhi[i][1], qhi[i][2], qhi[i][3], b[0], b[1]);
        gemv_detail::mma_bf16(s[2 * np], qlo[i][0], qlo[i][1], qlo[i][2], qlo[i][3], b[0], b[1]);
        gemv_detail::mma_bf16(s[2 * np + 1], qhi[i][0], qhi[i][1], qhi[i][2], qhi[i][3], b[2], b[3]);
        gemv_detail::mma_bf16(s[2 * np + 1], qlo[i][0], qlo[i][1], qlo[i][2], qlo[i][3], b[2], b[3]);
      }
    }
    // The eight warps' parts: warps 4-7 hand theirs to warps 0-3, which add them and publish the sums.
    auto part = [&](int w, int head, int key) {
      return reinterpret_cast<float2*>(parts + (w * kHeads + head) * kPartStride + key);
    };
    if (warp >= 4)
#pragma unroll
      for (int n = 0; n < kCols; ++n) {
        *part(warp - 4, g, 8 * n + 2 * t) = make_float2(s[n][0], s[n][1]);
        *part(warp - 4, g + 8, 8 * n + 2 * t) = make_float2(s[n][2], s[n][3]);
      }
    __syncthreads();
    if (warp < 4)
#pragma unroll
      for (int n = 0; n < kCols; ++n) {
        float2* lo = part(warp, g, 8 * n + 2 * t);
        float2* hi = part(warp, g + 8, 8 * n + 2 * t);
        const float2 a = *lo, b = *hi;
        *lo = make_float2(s[n][0] + a.x, s[n][1] + a.y);
        *hi = make_float2(s[n][2] + b.x, s[n][3] + b.y);
      }
    __syncthreads();
    // Online softmax: the 16 threads of a head (half a warp) share its max and sum by shuffles.
    {
      float l[kEach];
#pragma unroll
      for (int j = 0; j < kEach; ++j) l[j] = 0.0f;
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const float2 v = *reinterpret_cast<const float2*>(parts + (w * kHeads + sh) * kPartStride + sk);
        l[0] += v.x, l[1] += v.y;
      }
      float top = kNegInf;
#pragma unroll
      for (int j = 0; j < kEach; ++j) {
        l[j] = kinds[sk + j] == KEY_NONE ? kNegInf : l[j] * scale;
        top = fmaxf(top, l[j]);
      }
#pragma unroll
      for (int m = 8; m > 0; m >>= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, m));
      const float m_new = fmaxf(run_max, top);
      const float c = run_max == kNegInf ? 0.0f : expf(run_max - m_new);
      float e[kEach], sum = 0.0f;
#pragma unroll
      for (int j = 0; j < kEach; ++j) {
        e[j] = m_new == kNegInf ? 0.0f : expf(l[j] - m_new);
        sum += e[j];
      }
#pragma unroll
      for (int m = 8; m > 0; m >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, m);
      run_sum = fmaf(run_sum, c, sum);
      run_max = m_new;
      const float hi0 = bf16_round(e[0]), hi1 = bf16_round(e[1]);
      *reinterpret_cast<unsigned*>(ps + sh * kPStride + sk) = pack_bf16(hi0, hi1);
      *reinterpret_cast<unsigned*>(ps + (kHeads + sh) * kPStride + sk) = pack_bf16(e[0] - hi0, e[1] - hi1);
      if ((tid & 15) == 0) rescale[sh] = c;
    }
    __syncthreads();
    // O = O·c + P·V over this warp's units: o[i][n] holds (head g, dims 16·(w + 8i) + 8n + 2t, +1) and
    // (head g + 8, the same).
    {
      const float c0 = rescale[g], c1 = rescale[g + 8];
#pragma unroll
      for (int i = 0; i < kMine; ++i)
#pragma unroll
        for (int n = 0; n < 2; ++n) o[i][n][0] *= c0, o[i][n][1] *= c0, o[i][n][2] *= c1, o[i][n][3] *= c1;
#pragma unroll
      for (int kk = 0; kk < kKeys; kk += 16) {
        unsigned a[4], alo[4];  // the weights' hi and lo halves
        const unsigned short* pa = ps + (8 * ((lane >> 3) & 1) + (lane & 7)) * kPStride + kk + 8 * (lane >> 4);
        gemm_tile::load_x4(pa, a);
        gemm_tile::load_x4(pa + kHeads * kPStride, alo);
#pragma unroll
        for (int i = 0; i < kMine; ++i) {
          const int d0 = 16 * (warp + kWarps * i);
          if (d0 >= Dh) continue;  // warp-uniform (Dh < 128 only)
          unsigned b[4];
          gemm_tile::load_x4_trans(tile + (kk + 8 * ((lane >> 3) & 1) + (lane & 7)) * KS + d0 + 8 * (lane >> 4), b);
          gemv_detail::mma_bf16(o[i][0], a[0], a[1], a[2], a[3], b[0], b[1]);
          gemv_detail::mma_bf16(o[i][0], alo[0], alo[1], alo[2], alo[3], b[0], b[1]);
          gemv_detail::mma_bf16(o[i][1], a[0], a[1], a[2], a[3], b[2], b[3]);
          gemv_detail::mma_bf16(o[i][1], alo[0], alo[1], alo[2], alo[3], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // the next tile's rows and copies go to this stage
    base = next;
    stage ^= 1;
  }

  // The sink and the denominator: o / (Σ e·e^{m − top} + e^{sink − top}) · e^{m − top}.
  if ((tid & 15) == 0) head_max[sh] = run_max, head_sum[sh] = run_sum;
  __syncthreads();
  float weight[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int head = g + 8 * i;
    weight[i] = 0.0f;
    if (head >= gc) continue;
    const float skv = weight_at<format_sink>(sink, h0 + head), m = head_max[head], top = fmaxf(m, skv);
    const float wm = m == kNegInf ? 0.0f : expf(m - top);
    weight[i] = wm / fmaf(head_sum[head], wm, expf(skv - top));
  }
#pragma unroll
  for (int i = 0; i < kMine; ++i) {
    const int d0 = 16 * (warp + kWarps * i);
    if (d0 >= Dh) continue;
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int head = g + 8 * half, d = d0 + 8 * n + 2 * t;
        if (head >= gc) continue;
        // b(o), then the inverse rope (−θ) on the last RD dims, stored (rounded again).
        float a = bf16_round(o[i][n][2 * half] * weight[half]), b = bf16_round(o[i][n][2 * half + 1] * weight[half]);
        if (d >= Dh - RD) {
          const int j = (d - (Dh - RD)) >> 1;
          rope_detail::rotate_pair(a, b, rope_cs[j], -rope_sn[j], a, b);
        }
        *reinterpret_cast<unsigned*>(outs + (r * H + h0 + head) * Dh + d) = pack_bf16(a, b);
      }
  }
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace sparse_attention_prefill
}  // namespace dsv41k
