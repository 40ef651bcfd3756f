// kernels/gemv_fp8.cuh — the decode GEMV's body for e4m3 weights at kFp8Rows rows or fewer: the stored
// codes go into mma.sync m16n8k32 e4m3 as they are (no decode in registers), against x staged once per
// block in shared memory as two e4m3 terms an element (hi + lo, scaled per 32-element group). Each MMA
// covers one 32-wide K group, so the weight's UE8M0 scale and x's group scale are applied once per group to
// the MMA's fp32 result: per 16 weight bytes a lane issues two 8-byte loads, one shared load, one MMA and
// a few fp32 operations, where the bf16 body (kernels/gemv_mma.cuh) decodes every code (docs/perf.md, dfp8).
//
// Exactness: x·2^e (e puts the group's largest magnitude in [128, 256)) is split into hi = e4m3(x·2^e)
// and lo = e4m3(x·2^e − hi); a bf16 value has 8 significant bits and each term 4, so hi + lo is x·2^e
// exactly for elements within 2^9 of the group's largest; smaller ones lose at most 2^-10 (2^-17 of the
// largest). Products of e4m3 codes are exact; the MMA sums 32 of them, the rest is fp32 (within the f32
// tolerance of tests/gpu/gpu_op_compare.h). An infinite x saturates to ±448 (the CPU keeps the infinity).
//
// Geometry (kernels/gemv.cuh): a warp's 16 columns over K slice `slice` of `split`, 32-wide K groups
// interleaved over the slices. Lane (g = lane / 4, t = lane % 4) loads bytes 8t .. 8t + 7 of each group of
// weight rows g and g + 8 (the A fragment: a0/a2 of row g, a1/a3 of row g + 8) and the same bytes of x's
// column g of the MMA (N: row 4m + g / 2, term g % 2) from the stage, so every MMA's K order is the
// same permutation on both operands. Its results: columns g and g + 8 of the group, row 4m + t.
#pragma once

#include "gemv.cuh"

namespace dsv41k {
namespace gemv_detail {

constexpr int kFp8Rows = 8;          // rows the body serves: N = 8 holds 4 rows x 2 terms, two MMAs for 8
constexpr long long kFp8MaxK = 12288;  // K whose stage fits the shared memory (two MMAs: 204 KiB)

// Whether (dtype_x, format_w, K) takes this body at kFp8Rows rows or fewer; common/kernel_launch_products.cpp
// decides the same and gives the block fp8_stage_bytes of dynamic shared memory.
__device__ constexpr bool fp8_mma_format(int dtype_x, int format_w) {
  return dtype_x == DT_BF16 && (format_w == WF_FP8_TILE32 || format_w == WF_FP8_ROW32);
}
__device__ constexpr bool fp8_mma_takes(int dtype_x, int format_w, long long n) {
  return fp8_mma_format(dtype_x, format_w) && n % 32 == 0 && n <= kFp8MaxK;
}
// The stage for m MMAs (rows ≤ 4m): e4m3 codes [group][8m columns][32 bytes], then fp32 [group][4m rows].
__device__ constexpr long long fp8_stage_bytes(long long n, long long rows) {
  return (rows <= 4 ? 1 : 2) * (8 * n + n / 2);
}

#ifndef DSV41_CONTRACT_SCAN

// Two fp32 values as e4m3 codes (round to nearest, saturating): `low` in bits 0-7, `high` in bits 8-15.
__device__ __forceinline__ unsigned e4m3_pair(float high, float low) {
  unsigned short d;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(high), "f"(low));
  return d;
}
// An e4m3 code's value (exact; the NaN codes never come out of e4m3_pair for finite input).
__device__ __forceinline__ float e4m3_value(unsigned code) {
  return __uint_as_float(((code & 0x80u) << 24) | ((code & 0x7Fu) << 20)) * 0x1p120f;
}

// Stages x rows 0 .. nrows − 1 (row i is the bf16 run xs + xrow(i), n long) for M MMAs: each 32-element
// group of a row is scaled by the power of two that puts its largest magnitude in [128, 256) (one quad of
// threads a group, 8 elements a thread) and split into hi and lo codes (stage columns 2r and 2r + 1); the
// inverse power goes to the group's scale. Rows at or past nrows are not written (the MMA reads zeros
// for them instead). Every thread of the block calls it.
template <int M, class XRow>
__device__ __forceinline__ void fp8_stage(unsigned char* stage, const unsigned short* xs, XRow xrow, int nrows,
                                          long long n) {
  float* scales = reinterpret_cast<float*>(stage + 8 * M * n);
  const long long items = n / 8 * nrows;  // quads × 4; whole quads, so a quad is never split by the bound
  for (long long i0 = 0; i0 < items; i0 += blockDim.x) {
    const long long i = i0 + threadIdx.x;
    const bool valid = i < items;
    const int q = static_cast<int>(i & 3);
    const long long rest = i >> 2, j = rest / nrows;
    const int r = static_cast<int>(rest - j * nrows);
    uint4 v = make_uint4(0, 0, 0, 0);
    if (valid) v = *reinterpret_cast<const uint4*>(xs + xrow(r) + 32 * j + 8 * q);
    const unsigned u[4] = {v.x, v.y, v.z, v.w};
    unsigned m = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) m = max(m, max(u[k] & 0x7FFFu, (u[k] >> 16) & 0x7FFFu));
    m = max(m, __shfl_xor_sync(0xffffffffu, m, 1));
    m = max(m, __shfl_xor_sync(0xffffffffu, m, 2));
    // 2^ex brings the largest to [128, 256); bf16 subnormals and zeros stop at 2^126 (exact either way).
    const int ex = m == 0 ? 0 : min(126, 7 - (static_cast<int>(m >> 7) - 127));
    const float up = __int_as_float((ex + 127) << 23);
    unsigned hi[2] = {0, 0}, lo[2] = {0, 0};
#pragma unroll
    for (int p = 0; p < 4; ++p) {  // elements 2p and 2p + 1
      const float a = __fmul_rn(__uint_as_float(u[p] << 16), up), b = __fmul_rn(__uint_as_float(u[p] & 0xFFFF0000u), up);
      const unsigned h = e4m3_pair(b, a);
      const unsigned l = e4m3_pair(__fsub_rn(b, e4m3_value(h >> 8)), __fsub_rn(a, e4m3_value(h & 0xFFu)));
      hi[p >> 1] |= h << (16 * (p & 1));
      lo[p >> 1] |= l << (16 * (p & 1));
    }
    if (!valid) continue;
    unsigned char* group = stage + j * (256 * M) + 8 * q;
    *reinterpret_cast<uint2*>(group + (2 * r) * 32) = make_uint2(hi[0], hi[1]);
    *reinterpret_cast<uint2*>(group + (2 * r + 1) * 32) = make_uint2(lo[0], lo[1]);
    if (q == 0) scales[j * (4 * M) + r] = __int_as_float((127 - ex) << 23);
  }
}

__device__ __forceinline__ void mma_e4m3(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                         unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(0.0f));
}

__device__ __forceinline__ uint2 load_fp8_share(const unsigned char* p) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}

// A warp's weight bytes for U groups (j0, j0 + split, ...; zeros past the row).
template <int U>
struct Fp8Batch {
  uint2 a[U], b[U];
};
template <int U>
__device__ __forceinline__ void fp8_load(const unsigned char* wa, const unsigned char* wb, long long j0, int split,
                                         long long groups, bool live, Fp8Batch<U>& s) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const long long j = j0 + static_cast<long long>(u) * split;
    s.a[u] = s.b[u] = make_uint2(0, 0);
    if (live && j < groups) {
      s.a[u] = load_fp8_share(wa + 32 * j);
      s.b[u] = load_fp8_share(wb + 32 * j);
    }
  }
}

// The MMAs of one batch into acc[m][0] (column g, row 4m + t) and acc[m][1] (column g + 8).
template <int FMT, int M, int U>
__device__ __forceinline__ void fp8_apply(const Fp8Batch<U>& s, const unsigned char* stage, const float* xscale,
                                          const unsigned char* sa, const unsigned char* sb, long long j0, int split,
                                          long long groups, const bool* xlive, float (*acc)[2]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const long long j = j0 + static_cast<long long>(u) * split;
    if (j >= groups) break;
    // FP8_TILE32: rows g and g + 8 lie in one 32-row tile (a live column's partner is live too).
    const float s0 = e8m0_to_float(sa[j]), s1 = FMT == WF_FP8_TILE32 ? s0 : e8m0_to_float(sb[j]);
#pragma unroll
    for (int m = 0; m < M; ++m) {
      uint2 x = make_uint2(0, 0);
      if (xlive[m]) x = *reinterpret_cast<const uint2*>(stage + j * (256 * M) + (8 * m + g) * 32 + 8 * t);
      float d[4];
      mma_e4m3(d, s.a[u].x, s.b[u].x, s.a[u].y, s.b[u].y, x.x, x.y);
      const float sx = xscale[j * (4 * M) + 4 * m + t];
      acc[m][0] = __fmaf_rn(__fmul_rn(__fadd_rn(d[0], d[1]), sx), s0, acc[m][0]);
      acc[m][1] = __fmaf_rn(__fmul_rn(__fadd_rn(d[2], d[3]), sx), s1, acc[m][1]);
    }
  }
}

// The block body: stage x, then each warp's 16 columns over its K slice into red[(warp·16 + column)·kGemvRows
// + row] (gemv_store sums the slices). Every thread of the block calls it; dyn_smem holds
// fp8_stage_bytes(n, nrows) bytes. The first batch's weight loads are issued before the stage is built.
template <int FMT, int M, class X0>
__device__ __forceinline__ void fp8_block(Rows rows, Scratch x, long long x_width, X0 x0_of, Weight w, long long n,
                                          long long columns, int split, float* red) {
  constexpr int U = 8;  // groups a batch: two batches in flight, 16 bytes a group a lane
  extern __shared__ __align__(16) unsigned char dyn_smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int group = warp / split, slice = warp % split;
  const long long row0 = static_cast<long long>(blockIdx.x) * kGemvRows;
  const long long block_col = static_cast<long long>(blockIdx.y) * gemv_columns_per_block(split);
  const long long gcol = block_col + group * kGemvGroup;
  const int nrows = static_cast<int>(rows - row0 < kFp8Rows ? rows - row0 : kFp8Rows);
  const bool live = gcol < columns;
  const long long c0 = gcol + g < columns ? gcol + g : columns - 1, c1 = gcol + g + 8 < columns ? gcol + g + 8 : columns - 1;
  const unsigned char* wd = static_cast<const unsigned char*>(w.data);
  const unsigned char *wa = wd + c0 * n + 8 * t, *wb = wd + c1 * n + 8 * t;
  const long long groups = n / 32, step = static_cast<long long>(split) * U;
  const unsigned char *sa, *sb;
  if constexpr (FMT == WF_FP8_TILE32) {
    sa = sb = w.scales + scale_index<FMT>(c0, 0, n);
  } else {
    sa = w.scales + scale_index<FMT>(c0, 0, n);
    sb = w.scales + scale_index<FMT>(c1, 0, n);
  }
  Fp8Batch<U> A, B;
  long long j0 = slice;
  fp8_load<U>(wa, wb, j0, split, groups, live, A);

  const long long x0 = x0_of(block_col);
  fp8_stage<M>(dyn_smem, static_cast<const unsigned short*>(x), [&](int i) { return (row0 + i) * x_width + x0; },
               nrows, n);
  __syncthreads();

  float* mine = red + warp * kGemvGroup * kGemvRows;
  if (!live) {  // the block's last group may lie past the matrix: nothing to add
    for (int i = lane; i < kGemvGroup * kGemvRows; i += 32) mine[i] = 0.0f;
    return;
  }
  const float* xscale = reinterpret_cast<const float*>(dyn_smem + 8 * M * n);
  bool xlive[M];
#pragma unroll
  for (int m = 0; m < M; ++m) xlive[m] = 4 * m + g / 2 < nrows;
  float acc[M][2];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m][0] = acc[m][1] = 0.0f;
  // Two batches alternate: the next one's loads are in flight while this one's MMAs run.
  while (j0 < groups) {
    fp8_load<U>(wa, wb, j0 + step, split, groups, true, B);
    fp8_apply<FMT, M, U>(A, dyn_smem, xscale, sa, sb, j0, split, groups, xlive, acc);
    j0 += step;
    if (j0 >= groups) break;
    fp8_load<U>(wa, wb, j0 + step, split, groups, true, A);
    fp8_apply<FMT, M, U>(B, dyn_smem, xscale, sa, sb, j0, split, groups, xlive, acc);
    j0 += step;
  }
#pragma unroll
  for (int m = 0; m < M; ++m) {
    mine[g * kGemvRows + 4 * m + t] = acc[m][0];
    mine[(g + 8) * kGemvRows + 4 * m + t] = acc[m][1];
  }
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace gemv_detail
}  // namespace dsv41k
