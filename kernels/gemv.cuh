// kernels/gemv.cuh — the streaming product core of linear and grouped_linear at decode sizes: each weight
// row is read once with 16-byte loads (several in flight a lane), dequantized in registers, and applied
// to every row of the block's row tile; split-K over the warps of a block when the matrix has too few
// columns to fill the GPU. The sums run in another order than the CPU's eight-way dot (fused
// multiply-adds, per-chunk scales): within the f32 tolerance of tests/gpu/gpu_op_compare.h.
//
// Block shape (common/kernel_launch_products.cpp computes the same split from the same numbers):
// 256 threads = 8 warps; a block owns gemv_columns_per_block(split) consecutive output columns (16
// per group of `split` warps) and kGemvRows rows; warp w serves column group w / split and K slice
// w % split. Grid (ceil(R / kGemvRows), ceil(columns / columns per block), K parts: kernels/gemv_kparts.cuh,
// 1 but for small grids at 16 rows or fewer). Two block bodies share the
// geometry: gemv_mma.cuh (tensor cores, bf16 x) and gemv_block below (CUDA cores, every case else).
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace gemv_detail {

constexpr int kGemvRows = 16;   // rows a block applies each loaded weight chunk to
constexpr int kGemvGroup = 16;  // columns of one warp group (the MMA's M)
constexpr int kGemvCols = 2;    // columns the CUDA-core body reads side by side (an x chunk serves both)
constexpr int kGemvWarps = 8;
constexpr int kGemvTargetBlocks = 264;  // two blocks per H200 SM: split K until the grid has this many
// At most this many rows, BF16 weights take the CUDA-core body with whole-warp loads (512 contiguous bytes
// of one weight row a load, four loads in flight a lane) instead of the MMA tiles, whose loads touch 8
// weight rows 64 bytes each: the 1.32 GB head at 1 row streamed at 91-94% of the roofline this way
// (docs/perf.md, branch fuse). With a few rows the FMAs are cheap; above that the MMA's reuse wins.
constexpr int kGemvFewRows = 4;
// ... and only where the matrix has the columns to fill the GPU with little split-K (the head): with
// split 8 a warp's K slice is a few chunks a lane and the MMA body streamed faster (wo_b 5120x8192, 1 row:
// 57% against 70% of the roofline, docs/perf.md).
constexpr int kGemvFewRowsSplit = 2;

// Warps sharing one column group (1, 2, 4 or 8): the fewest that give kGemvTargetBlocks blocks.
__device__ constexpr int gemv_split(long long columns) {
  int split = 1;
  while (split < kGemvWarps &&
         (columns * split + kGemvWarps * kGemvGroup - 1) / (kGemvWarps * kGemvGroup) < kGemvTargetBlocks)
    split *= 2;
  return split;
}
__device__ constexpr int gemv_columns_per_block(int split) { return kGemvWarps * kGemvGroup / split; }
// Shared floats a block reduces its slices in: [warp][group column][row].
constexpr int kGemvReduceFloats = kGemvWarps * kGemvGroup * kGemvRows;

// Elements of one 16-byte chunk in a stored format; 0 where the streaming path does not apply.
__device__ constexpr int chunk_elems(int fmt) {
  return fmt == WF_BF16 ? 8 : (fmt == WF_FP8_TILE32 || fmt == WF_FP8_ROW32) ? 16 : fmt == WF_FP4_ROW32 ? 32 : 0;
}

#ifndef DSV41_CONTRACT_SCAN

// Chunk c of weight row `row` (n logical columns) as raw bytes.
template <int FMT>
__device__ __forceinline__ uint4 load_chunk(Weight w, long long row, long long n, long long c) {
  const long long row_bytes = FMT == WF_BF16 ? n * 2 : FMT == WF_FP4_ROW32 ? n / 2 : n;
  const uint4* p = reinterpret_cast<const uint4*>(static_cast<const unsigned char*>(w.data) + row * row_bytes) + c;
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// The multiplier of chunk c's sum: the UE8M0 scale, times the power of two the codes were decoded without.
template <int FMT>
__device__ __forceinline__ float chunk_scale(Weight w, long long row, long long n, long long c) {
  if constexpr (FMT == WF_BF16) return 1.0f;
  else return e8m0_to_float(w.scales[scale_index<FMT>(row, c * chunk_elems(FMT), n)]);
}
// The decoded values below are code·2^-kUnscale; the chunk sum is multiplied back before the scale
// (two multiplies: a scale near 2^127 must not overflow the product of both).
template <int FMT>
__device__ __forceinline__ float chunk_unscale() {
  return FMT == WF_BF16 ? 1.0f : FMT == WF_FP4_ROW32 ? 0x1p126f : 0x1p120f;
}

// Elements 8j .. 8j + 7 of a chunk (eight at a time keeps few registers live): bf16 exactly; e4m3 as
// code·2^-120 and e2m1 as code·2^-126, by moving the code's sign, exponent and mantissa bits into an fp32
// (its subnormals then decode the formats' subnormals exactly). No conversion instructions: they run at
// a quarter of the FMA rate on the H200.
template <int FMT>
__device__ __forceinline__ void decode_group(uint4 raw, int j, float* v) {
  const unsigned q[4] = {raw.x, raw.y, raw.z, raw.w};
  if constexpr (FMT == WF_BF16) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = __uint_as_float(q[i] << 16);
      v[2 * i + 1] = __uint_as_float(q[i] & 0xFFFF0000u);
    }
  } else if constexpr (FMT == WF_FP4_ROW32) {
    const unsigned w = q[j];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const unsigned t = w >> (4 * k);
      v[k] = __uint_as_float(((t & 8u) << 28) | ((t & 7u) << 22));
    }
  } else {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const unsigned t = q[2 * j + h] >> (8 * k);
        v[4 * h + k] = __uint_as_float(((t & 0x80u) << 24) | ((t & 0x7Fu) << 20));
      }
  }
}

// E consecutive x values (16-byte aligned) as fp32.
template <int DT, int E>
__device__ __forceinline__ void load_x(Scratch x, long long i, float* v) {
  if constexpr (DT == DT_BF16) {
    const uint4* p = reinterpret_cast<const uint4*>(static_cast<const unsigned short*>(x) + i);
#pragma unroll
    for (int j = 0; j < E / 8; ++j) {
      const uint4 u = p[j];
      const unsigned q[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        v[8 * j + 2 * k] = __uint_as_float(q[k] << 16);
        v[8 * j + 2 * k + 1] = __uint_as_float(q[k] & 0xFFFF0000u);
      }
    }
  } else {
    const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(x) + i);
#pragma unroll
    for (int j = 0; j < E / 4; ++j) {
      const float4 f = p[j];
      v[4 * j] = f.x;
      v[4 * j + 1] = f.y;
      v[4 * j + 2] = f.z;
      v[4 * j + 3] = f.w;
    }
  }
}

// Whether the streaming path applies: a 16-byte chunk format, rows of whole chunks (so every chunk
// and every x run is 16-byte aligned) and 16-byte aligned buffers.
template <int dtype_x, int format_w>
__device__ __forceinline__ bool gemv_applies(const void* x, const void* w, long long x_width, long long x0,
                                             long long n) {
  constexpr int E = chunk_elems(format_w);
  if constexpr (E == 0) {
    return false;
  } else {
    return n % E == 0 && x_width % E == 0 && x0 % E == 0 && (reinterpret_cast<unsigned long long>(x) & 15) == 0 &&
           (reinterpret_cast<unsigned long long>(w) & 15) == 0;
  }
}

// Sums the slices of a block's partial products in slice order (a fixed order: the same bits every
// run) and stores them; red[(warp·kGemvGroup + column in group)·kGemvRows + row] holds warp's partials.
template <int dtype_out>
__device__ __forceinline__ void gemv_store(Rows rows, Statics statics, Scratch out, long long out_width,
                                           long long columns, int split, const float* red) {
  __syncthreads();
  const long long row0 = static_cast<long long>(blockIdx.x) * kGemvRows;
  const int per_block = gemv_columns_per_block(split);
  for (int t = threadIdx.x; t < per_block * kGemvRows; t += blockDim.x) {
    const int cb = t / kGemvRows, r = t % kGemvRows;  // column within the block, row within the tile
    const long long col = static_cast<long long>(blockIdx.y) * per_block + cb;
    if (col >= columns || row0 + r >= rows) continue;
    const int group = cb / kGemvGroup, c = cb % kGemvGroup;
    float v = 0.0f;
    for (int k = 0; k < split; ++k) v += red[((group * split + k) * kGemvGroup + c) * kGemvRows + r];
    store<dtype_out>(out, (row0 + r) * out_width + col, row_slot(statics, row0 + r) >= 0 ? v : 0.0f);
  }
}

// The CUDA-core body: the warp's column group two columns at a time, each pair over the warp's K
// slice (slice kslice of kslices: kernels/gemv_kparts.cuh splits K over blocks too); column c reads
// weight row c, whose n inputs are x[r, x0_of(c) .. + n). Partials into red.
// RB: the rows it serves (the tile's first RB; kGemvRows, or kGemvFewRows when the phase has no more);
// U: chunks a lane keeps in flight per column.
template <int dtype_x, int format_w, int RB, int U, class X0>
__device__ __forceinline__ void gemv_block(Rows rows, Statics statics, Scratch x, long long x_width, X0 x0_of, Weight w,
                                           long long n, long long columns, int split, int kslice, int kslices,
                                           float* red) {
  static_assert(RB >= 1 && RB <= kGemvRows && U >= 1, "gemv_block: rows 1..kGemvRows, U >= 1");
  constexpr int E = chunk_elems(format_w), NC = kGemvCols;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long long row0 = static_cast<long long>(blockIdx.x) * RB;
  const int group = warp / split;
  const int nr = static_cast<int>(rows - row0 < RB ? rows - row0 : RB);
  bool active[RB];
#pragma unroll
  for (int r = 0; r < RB; ++r) active[r] = r < nr && row_slot(statics, row0 + r) >= 0;
  const long long chunks = n / E;
  const long long stride = 32ll * kslices;
  for (int pair = 0; pair < kGemvGroup / NC; ++pair) {
    const long long col0 =
        static_cast<long long>(blockIdx.y) * gemv_columns_per_block(split) + group * kGemvGroup + pair * NC;
    if (col0 >= columns) break;  // the same for every lane: the warp leaves together
    long long wrow[NC], xbase[NC];
#pragma unroll
    for (int j = 0; j < NC; ++j) {
      const long long c = col0 + j < columns ? col0 + j : columns - 1;  // a missing column re-reads the last
      wrow[j] = c;
      xbase[j] = x0_of(c);
    }
    const bool same_x = xbase[NC - 1] == xbase[0];
    float acc[NC][RB];
#pragma unroll
    for (int j = 0; j < NC; ++j)
#pragma unroll
      for (int r = 0; r < RB; ++r) acc[j][r] = 0.0f;
    for (long long c0 = static_cast<long long>(kslice) * 32 + lane; c0 < chunks; c0 += stride * U) {
      uint4 raw[U][NC];
      float s[U][NC];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < NC; ++j) {
          const long long c = c0 + u * stride;
          if (c < chunks) {
            raw[u][j] = load_chunk<format_w>(w, wrow[j], n, c);
            s[u][j] = chunk_scale<format_w>(w, wrow[j], n, c);
          }
        }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const long long c = c0 + u * stride;
        if (c >= chunks) break;
        float t[NC][RB];
#pragma unroll
        for (int j = 0; j < NC; ++j)
#pragma unroll
          for (int r = 0; r < RB; ++r) t[j][r] = 0.0f;
#pragma unroll
        for (int grp = 0; grp < E / 8; ++grp) {
          float wv[NC][8];
#pragma unroll
          for (int j = 0; j < NC; ++j) decode_group<format_w>(raw[u][j], grp, wv[j]);
#pragma unroll
          for (int r = 0; r < RB; ++r) {
            if (!active[r]) continue;
            float xv[8];
            load_x<dtype_x, 8>(x, (row0 + r) * x_width + xbase[0] + c * E + 8 * grp, xv);
#pragma unroll
            for (int j = 0; j < NC; ++j) {
              if (j > 0 && !same_x) load_x<dtype_x, 8>(x, (row0 + r) * x_width + xbase[j] + c * E + 8 * grp, xv);
#pragma unroll
              for (int e = 0; e < 8; ++e) t[j][r] = __fmaf_rn(wv[j][e], xv[e], t[j][r]);
            }
          }
        }
#pragma unroll
        for (int j = 0; j < NC; ++j)
#pragma unroll
          for (int r = 0; r < RB; ++r)
            if (active[r]) acc[j][r] = __fmaf_rn(__fmul_rn(t[j][r], chunk_unscale<format_w>()), s[u][j], acc[j][r]);
      }
    }
#pragma unroll
    for (int j = 0; j < NC; ++j)
#pragma unroll
      for (int r = 0; r < RB; ++r) {
        if (r >= nr) break;
        const float v = warp_sum(acc[j][r]);
        if (lane == 0) red[(warp * kGemvGroup + pair * NC + j) * kGemvRows + r] = v;
      }
  }
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace gemv_detail
}  // namespace dsv41k
