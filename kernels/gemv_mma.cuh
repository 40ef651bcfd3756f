// kernels/gemv_mma.cuh — the tensor-core product core of the decode GEMV (geometry in kernels/gemv.cuh;
// its pipelined block body in kernels/gemv_stream.cuh) for bf16 activations: mma.sync m16n8k16 with the
// weight tile as the wide operand (16 output columns as M) and the few rows as the narrow one (N = 8, two
// tiles for 16 rows), "swap-AB". Weights are decoded in
// registers into exact bf16 (BF16 as stored; e4m3 / e2m1 codes times their UE8M0 scale, a power of two,
// in one or two exact bf16 multiplies), so the products are exact and accumulate in fp32. Also the
// product core of the grouped experts (kernels/moe_grouped.cuh).
//
// Each lane loads 16 contiguous bytes of two weight rows (columns g and g + 8 of the group, g = lane / 4)
// per K block of 4·E elements, and the same elements of x for rows g and g + 8; the MMA's K order is
// permuted consistently on both operands (lane t of a quad holds logical k 2t, 2t+1, 2t+8, 2t+9 of a step
// as its elements 4s .. 4s+3; FP4 pairs elements 4 apart), which leaves the sum unchanged and keeps every
// load 16 bytes wide. e2m1 codes become bf16 the same way (code·2^-126 by moving bits, then the scale).
#pragma once

#include "gemv.cuh"

namespace dsv41k {
namespace gemv_detail {

// Whether the tensor-core body takes (dtype_x, format_w): bf16 x (exact in the MMA) and a format decoded
// to exact bf16 in registers. f32 x takes the CUDA-core body.
__device__ constexpr bool mma_takes(int dtype_x, int format_w) {
  return dtype_x == DT_BF16 &&
         (format_w == WF_BF16 || format_w == WF_FP8_TILE32 || format_w == WF_FP8_ROW32 || format_w == WF_FP4_ROW32);
}

#ifndef DSV41_CONTRACT_SCAN

__device__ __forceinline__ unsigned bf16x2_mul(unsigned a, unsigned b) {
  unsigned d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// UE8M0 byte s as a bf16x2 multiplier of codes decoded as code·2^-bias: 2^(s-127+bias) in one multiply
// while that is a normal bf16, else two (2^bias, then 2^(s-127)); 255 is NaN.
struct Bf16Scale {
  unsigned first, second;  // second == 0: one multiply
};
__device__ __forceinline__ Bf16Scale bf16_scale(unsigned s, unsigned bias) {
  if (s + bias <= 254u) return {((s + bias) << 7) * 0x10001u, 0u};
  const unsigned b = s == 255u ? 0x7FC0u : s << 7;
  return {((bias + 127u) << 7) * 0x10001u, b * 0x10001u};
}
__device__ __forceinline__ unsigned scaled(unsigned b, Bf16Scale sc) {
  b = bf16x2_mul(b, sc.first);
  return sc.second ? bf16x2_mul(b, sc.second) : b;
}

// Words of a chunk times the scale: the first multiply on every word, the second (a scale above
// 2^7 for e4m3, rare in a model) behind one test a chunk, not a select a word: the integer pipe that
// a select would take is the decode's limit (docs/perf.md, branch fp8).
template <int N>
__device__ __forceinline__ void scale_words(unsigned* w, Bf16Scale sc) {
#pragma unroll
  for (int i = 0; i < N; ++i) w[i] = bf16x2_mul(w[i], sc.first);
  if (sc.second) {
#pragma unroll
    for (int i = 0; i < N; ++i) w[i] = bf16x2_mul(w[i], sc.second);
  }
}

// 16 e4m3 codes (one 16-byte chunk) as 8 bf16x2 words, element 2i in the low half of word i, times the scale.
__device__ __forceinline__ void fp8_to_bf16(uint4 raw, Bf16Scale sc, unsigned* out) {
  const unsigned q[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // codes 2h and 2h + 1 of q[i], each in both bytes of its half: the high byte's bit 7 is the sign
      // in place, the low byte shifted up by 4 bits puts exponent and mantissa where the bf16 of
      // code·2^-120 has them (e4m3 subnormals included). A left shift may run as a multiply, off the
      // integer pipe; a permute, the shift and one three-input logic op a pair.
      const unsigned v = __byte_perm(q[i], 0u, h == 0 ? 0x1100u : 0x3322u);
      out[2 * i + h] = (v & 0x80008000u) | ((v << 4) & 0x07F007F0u);
    }
  }
  scale_words<8>(out, sc);
}
// 32 e2m1 codes (one 16-byte chunk) as 16 bf16x2 words of code·2^-126 times the scale. Word 4i + k holds
// elements 8i + k (low half) and 8i + k + 4 (high half): nibbles 4 apart share one shift; x is paired
// the same way (fp4_pair_x), so the MMA's sum is unchanged. (Shifts straight from q and scale_words
// measured slower here at 4-8 rows and in the experts: docs/perf.md, branch fp8; two byte-permute
// lookups a word with x's own pairing measured 4-13% slower in FP4 linear and mixed in the experts:
// branch fp4lut.)
__device__ __forceinline__ void fp4_to_bf16(uint4 raw, Bf16Scale sc, unsigned* out) {
  const unsigned q[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const unsigned v = q[i] >> (4 * k);  // nibbles k and k + 4 at bits 0-3 and 16-19
      out[4 * i + k] = scaled(((v & 0x00070007u) << 6) | ((v & 0x00080008u) << 12), sc);
    }
}
// x words (element 2j in the low half of word j) re-paired as fp4_to_bf16 pairs its elements.
__device__ __forceinline__ void fp4_pair_x(const unsigned* xw, unsigned* out) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int k = 0; k < 4; ++k)
      out[4 * i + k] = __byte_perm(xw[4 * i + k / 2], xw[4 * i + 2 + k / 2], (k & 1) ? 0x7632u : 0x5410u);
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
  } else if constexpr (FMT == WF_FP4_ROW32) {
    fp4_to_bf16(raw, bf16_scale(w.scales[scale_index<FMT>(row, c * 32, n)], 126u), words);
  } else {
    fp8_to_bf16(raw, bf16_scale(w.scales[scale_index<FMT>(row, c * 16, n)], 120u), words);
  }
}

// One K block of a warp's MMA tile: the lane's chunk `chunk` of weight rows c0 and c1 (raw bytes ra, rb;
// zeros when not valid) decoded and multiplied with the same chunk of inputs xr0 (tile 0) and xr1 (tile 1,
// above 8 rows; -1: no input) into the accumulators d. kL2: read x through L2 only.
template <int FMT, bool kL2>
__device__ __forceinline__ void mma_block(const unsigned short* xs, long long xr0, long long xr1, int nrows, Weight w,
                                          long long n, long long c0, long long c1, long long chunk, bool valid,
                                          uint4 ra, uint4 rb, float (*d)[4]) {
  constexpr int E = chunk_elems(FMT), W = E / 2;
  unsigned wa[W], wb[W];
  if (valid) {
    weight_words<FMT>(w, c0, n, chunk, ra, wa);
    weight_words<FMT>(w, c1, n, chunk, rb, wb);
  } else {
#pragma unroll
    for (int j = 0; j < W; ++j) wa[j] = wb[j] = 0u;
  }
#pragma unroll
  for (int tile = 0; tile < 2; ++tile) {
    if (tile == 1 && nrows <= 8) break;
    const long long xr = tile == 0 ? xr0 : xr1;
    unsigned xw[W];
#pragma unroll
    for (int j = 0; j < W / 4; ++j) {
      uint4 v = make_uint4(0, 0, 0, 0);
      if (valid && xr >= 0) {
        const uint4* p = reinterpret_cast<const uint4*>(xs + xr + chunk * E) + j;
        v = kL2 ? __ldcg(p) : *p;
      }
      xw[4 * j] = v.x, xw[4 * j + 1] = v.y, xw[4 * j + 2] = v.z, xw[4 * j + 3] = v.w;
    }
    if constexpr (FMT == WF_FP4_ROW32) {
      unsigned xp[W];
      fp4_pair_x(xw, xp);
#pragma unroll
      for (int j = 0; j < W; ++j) xw[j] = xp[j];
    }
#pragma unroll
    for (int s = 0; s < W / 2; ++s)
      mma_bf16(d[tile], wa[2 * s], wb[2 * s], wa[2 * s + 1], wb[2 * s + 1], xw[2 * s], xw[2 * s + 1]);
  }
}

// The warp's accumulators into mine[column·kGemvRows + input]: d[tile] holds (column g, inputs 2t, 2t+1)
// and (column g + 8, the same inputs) of the tile.
__device__ __forceinline__ void mma_store(const float (*d)[4], float* mine) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int tile = 0; tile < 2; ++tile) {
    const int r = tile * 8 + 2 * t;
    mine[g * kGemvRows + r] = d[tile][0];
    mine[g * kGemvRows + r + 1] = d[tile][1];
    mine[(g + 8) * kGemvRows + r] = d[tile][2];
    mine[(g + 8) * kGemvRows + r + 1] = d[tile][3];
  }
}

// One warp's MMA partials: 16 weight rows gcol .. gcol + 15 (clamped below `columns`) against up to 16
// inputs (input i is the bf16 run xs + xrow(i), for i < nrows; zeros after) over K slice `slice` of
// `split` (lanes' chunks beyond the row's n / E read as zeros), into mine[column·kGemvRows + input].
// kL2: read x through L2 only (another block wrote it in this launch). U: K blocks a lane keeps in flight
// (the experts' default; the products pass their own: kernels/gemv_stream.cuh kProductBatch).
template <int FMT, bool kL2, int U = (FMT == WF_FP4_ROW32 ? 2 : 4), class XRow>
__device__ __forceinline__ void mma_tile(const unsigned short* xs, XRow xrow, int nrows, Weight w, long long n,
                                         long long gcol, long long columns, int slice, int split, float* mine) {
  constexpr int E = chunk_elems(FMT);  // elements of a lane's chunk
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  float d[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
  const long long c0 = gcol + g < columns ? gcol + g : columns - 1,
                  c1 = gcol + g + 8 < columns ? gcol + g + 8 : columns - 1;
  const long long xr0 = g < nrows ? xrow(g) : -1, xr1 = g + 8 < nrows ? xrow(g + 8) : -1;
  const long long chunks = n / E, blocks = (chunks + 3) / 4;  // K blocks of 4 chunks, one a lane
  for (long long kb = slice; kb < blocks; kb += static_cast<long long>(split) * U) {
    uint4 ra[U], rb[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long chunk = (kb + u * split) * 4 + t;
      ra[u] = rb[u] = make_uint4(0, 0, 0, 0);
      if (kb + u * split < blocks && chunk < chunks) {
        ra[u] = load_chunk<FMT>(w, c0, n, chunk);
        rb[u] = load_chunk<FMT>(w, c1, n, chunk);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long k = kb + u * split, chunk = k * 4 + t;
      if (k >= blocks) break;
      mma_block<FMT, kL2>(xs, xr0, xr1, nrows, w, n, c0, c1, chunk, chunk < chunks, ra[u], rb[u], d);
    }
  }
  mma_store(d, mine);
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace gemv_detail
}  // namespace dsv41k
