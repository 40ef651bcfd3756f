// kernels/gemv_mma.cuh — the tensor-core body of the decode GEMV (geometry in kernels/gemv.cuh) for bf16
// activations: mma.sync m16n8k16 with the weight tile as the wide operand (16 output columns as M) and
// the few rows as the narrow one (N = 8, two tiles for 16 rows), "swap-AB". Weights are decoded in
// registers into exact bf16 (BF16 as stored; e4m3 codes times their UE8M0 scale, a power of two, in one
// or two exact bf16 multiplies), so the products are exact and accumulate in fp32.
//
// Each lane loads 16 contiguous bytes of two weight rows (columns g and g + 8 of the group, g = lane / 4)
// per K block of 4·E elements, and the same elements of x for rows g and g + 8; the MMA's K order is
// permuted consistently on both operands (lane t of a quad holds logical k 2t, 2t+1, 2t+8, 2t+9 of a step
// as its elements 4s .. 4s+3), which leaves the sum unchanged and keeps every load 16 bytes wide.
#pragma once

#include "gemv.cuh"

namespace dsv41k {
namespace gemv_detail {

// Whether the tensor-core body takes (dtype_x, format_w): bf16 x (exact in the MMA) and a format decoded
// to exact bf16 cheaply. FP4 and f32 x take the CUDA-core body.
__device__ constexpr bool mma_takes(int dtype_x, int format_w) {
  return dtype_x == DT_BF16 && (format_w == WF_BF16 || format_w == WF_FP8_TILE32 || format_w == WF_FP8_ROW32);
}

#ifndef DSV41_CONTRACT_SCAN

__device__ __forceinline__ unsigned bf16x2_mul(unsigned a, unsigned b) {
  unsigned d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// UE8M0 byte s as a bf16x2 multiplier of codes decoded as code·2^-120: 2^(s-7) in one multiply while
// it is a normal bf16 (s <= 134); larger scales multiply twice (2^120, then 2^(s-127)); 255 is NaN.
struct Fp8Scale {
  unsigned first, second;  // second == 0: one multiply
};
__device__ __forceinline__ Fp8Scale fp8_scale(unsigned s) {
  if (s <= 134u) return {((s + 120u) << 7) * 0x10001u, 0u};
  const unsigned b = s == 255u ? 0x7FC0u : s << 7;
  return {0x7B80u * 0x10001u, b * 0x10001u};
}

// 16 e4m3 codes (one 16-byte chunk) as 8 bf16x2 words, element 2i in the low half of word i, times the scale.
__device__ __forceinline__ void fp8_to_bf16(uint4 raw, Fp8Scale sc, unsigned* out) {
  const unsigned q[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // codes 2h and 2h + 1 of q[i] into the high bytes of the two halves: sign in place, exponent
      // and mantissa shifted down by 4 bits give the bf16 of code·2^-120 (e4m3 subnormals included).
      const unsigned v = __byte_perm(q[i], 0u, h == 0 ? 0x1404u : 0x3424u);
      unsigned b = (v & 0x80008000u) | ((v >> 4) & 0x07F007F0u);
      b = bf16x2_mul(b, sc.first);
      if (sc.second) b = bf16x2_mul(b, sc.second);
      out[2 * i + h] = b;
    }
  }
}

__device__ __forceinline__ void mma_bf16(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                         unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The weight words (E / 2 bf16x2) of chunk c of weight row `row`.
template <int FMT>
__device__ __forceinline__ void weight_words(Weight w, long long row, long long n, long long c, uint4 raw,
                                             unsigned* words) {
  if constexpr (FMT == WF_BF16) {
    words[0] = raw.x, words[1] = raw.y, words[2] = raw.z, words[3] = raw.w;
  } else {
    const long long si = FMT == WF_FP8_TILE32 ? (row >> 5) * ((n + 31) >> 5) + ((c * 16) >> 5) : (row * n + c * 16) >> 5;
    fp8_to_bf16(raw, fp8_scale(w.scales[si]), words);
  }
}

// The tensor-core body: partials of the warp's column group and K slice into red (gemv_store sums them).
template <int format_w, class X0>
__device__ __forceinline__ void gemv_mma_block(Rows rows, Scratch x, long long x_width, X0 x0_of, Weight w,
                                               long long n, long long columns, int split, float* red) {
  constexpr int E = chunk_elems(format_w), W = E / 2;  // elements and bf16x2 words of a lane's chunk
  constexpr int U = 4;                                  // K blocks a lane keeps in flight
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int group = warp / split, slice = warp % split;
  const long long row0 = static_cast<long long>(blockIdx.x) * kGemvRows;
  const long long gcol = static_cast<long long>(blockIdx.y) * gemv_columns_per_block(split) + group * kGemvGroup;
  float d[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
  if (gcol < columns) {
    const long long c0 = gcol + g < columns ? gcol + g : columns - 1, c1 = gcol + g + 8 < columns ? gcol + g + 8 : columns - 1;
    const long long x0a = x0_of(c0);
    const bool tile1 = rows - row0 > 8;                       // the second 8-row tile has rows
    const bool has0 = row0 + g < rows, has1 = row0 + 8 + g < rows;
    const unsigned short* xs = static_cast<const unsigned short*>(x);
    const long long blocks = n / (4 * E);                     // K blocks of the row
    for (long long kb = slice; kb < blocks; kb += static_cast<long long>(split) * U) {
      uint4 ra[U], rb[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const long long k = kb + u * split;
        if (k < blocks) {
          ra[u] = load_chunk<format_w>(w, c0, n, k * 4 + t);
          rb[u] = load_chunk<format_w>(w, c1, n, k * 4 + t);
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const long long k = kb + u * split;
        if (k >= blocks) break;
        const long long chunk = k * 4 + t, e0 = chunk * E;
        unsigned wa[W], wb[W];
        weight_words<format_w>(w, c0, n, chunk, ra[u], wa);
        weight_words<format_w>(w, c1, n, chunk, rb[u], wb);
        // x of rows g and 8 + g over the same elements (zeros past the last row); the caller ensures
        // all 16 columns of the group read the same inputs (x0).
#pragma unroll
        for (int tile = 0; tile < 2; ++tile) {
          if (tile == 1 && !tile1) break;
          const bool has = tile == 0 ? has0 : has1;
          const long long xr = (row0 + tile * 8 + g) * x_width;
          unsigned xa[W];
#pragma unroll
          for (int j = 0; j < W / 4; ++j) {
            const uint4 v = has ? *reinterpret_cast<const uint4*>(xs + xr + x0a + e0 + 8 * j) : make_uint4(0, 0, 0, 0);
            xa[4 * j] = v.x, xa[4 * j + 1] = v.y, xa[4 * j + 2] = v.z, xa[4 * j + 3] = v.w;
          }
#pragma unroll
          for (int s = 0; s < W / 2; ++s) mma_bf16(d[tile], wa[2 * s], wb[2 * s], wa[2 * s + 1], wb[2 * s + 1], xa[2 * s], xa[2 * s + 1]);
        }
      }
    }
  }
  // d[tile]: (column g, rows 2t, 2t+1) and (column g + 8, the same rows) of the tile.
  float* mine = red + warp * kGemvGroup * kGemvRows;
#pragma unroll
  for (int tile = 0; tile < 2; ++tile) {
    const int r = tile * 8 + 2 * t;
    mine[g * kGemvRows + r] = d[tile][0];
    mine[g * kGemvRows + r + 1] = d[tile][1];
    mine[(g + 8) * kGemvRows + r] = d[tile][2];
    mine[(g + 8) * kGemvRows + r + 1] = d[tile][3];
  }
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace gemv_detail
}  // namespace dsv41k
