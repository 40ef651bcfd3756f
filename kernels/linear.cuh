// kernels/linear.cuh — out = x·wᵀ for every active row (docs/ops.md "linear"); inactive rows get zeros.
//
// Launch (common/kernel_launch_products.cpp): the streaming GEMV of kernels/gemv.cuh — block 256
// threads, grid (ceil(R / kGemvRows), ceil(out_features / columns per block), K parts), the split-K
// factor a function of out_features alone; K parts > 1 for small grids at 16 rows or fewer
// (kernels/gemv_kparts.cuh). out_features only sizes the grid: it is a run-time parameter, and
// the head's vocabulary rows (different on each rank) share one variant. Shapes the streaming path
// does not take (f32 weights, rows not of whole 16-byte chunks) run the warp-per-column loop below
// over the same grid. Phases above kGemvRows rows (their variants: many_rows = 1) with bf16 x,
// BF16/FP8/FP4 weights and K of whole 32-column steps (tiled_takes) run the tiled tensor-core GEMM of
// kernels/gemm_tile.cuh instead: grid
// (ceil(R / BM), ceil(out_features / 128)) with BM = gemm_tile::tile_rows(format_w) (128 for BF16
// weights, else 64), common/kernel_launch_ops.h's kWideGemmSmemBytes or kGemmSmemBytes of dynamic shared
// memory (the most gemm_tile::smem_bytes needs at those rows).
#pragma once

#include "gemm_tile.cuh"
#include "gemv_kparts.cuh"
#include "gemv_stream.cuh"

namespace dsv41k {
namespace linear_detail {
constexpr int kRowsPerWarp = 4;

// Whether a product compiles the tiled path above kGemvRows rows: bf16 x, a format the tile loader
// decodes, K (n) of whole kBK steps, and every 128-column tile reading one x range (one_x_range: linear
// always; grouped_linear when its groups are whole 128-column tiles or there is one group).
// common/kernel_launch_products.cpp decides the same.
__device__ constexpr bool tiled_takes(int dtype_x, int format_w, long long n, bool one_x_range) {
  return dtype_x == DT_BF16 && gemm_tile::tile_takes(format_w) && n % gemm_tile::kBK == 0 && one_x_range;
}

#ifndef DSV41_CONTRACT_SCAN
// One warp: out[r, col] = Σ_i x[r, x0 + i]·w[wrow, i] for i < n and rows row0 .. row0+kRowsPerWarp−1
// (w of n columns in format_w, dequantized in registers; x rows x_width apart, out rows out_width
// apart); inactive rows get 0. Shared with grouped_linear.
template <int dtype_x, int format_w, int dtype_out>
__device__ __forceinline__ void warp_rows_dot(Rows rows, Statics statics, Scratch x, long long x_width, long long x0,
                                              Weight w, long long wrow, long long n, Scratch out, long long out_width,
                                              long long col, long long row0) {
  constexpr int R4 = kRowsPerWarp;
  const int lane = threadIdx.x & 31;
  float acc[R4];
  bool active[R4];
#pragma unroll
  for (int k = 0; k < R4; ++k) {
    acc[k] = 0.0f;
    active[k] = row0 + k < rows && row_slot(statics, row0 + k) >= 0;
  }
  // FP8 weights: each lane decodes V consecutive codes from one load and one scale (measured faster
  // on the H200, docs/perf.md); the other formats measured faster one element a lane per step.
  constexpr int V = kFp8Vector;
  bool done = false;
  if constexpr (format_w == WF_FP8_TILE32 || format_w == WF_FP8_ROW32) {
    if (n % V == 0) {
      done = true;
      for (long long i = static_cast<long long>(lane) * V; i < n; i += 32 * V) {
        float wv[V];
        fp8_weight_vec<format_w>(w, wrow, i, n, wv);
#pragma unroll
        for (int k = 0; k < R4; ++k)
          if (active[k]) {
            const long long xi = (row0 + k) * x_width + x0 + i;
#pragma unroll
            for (int j = 0; j < V; ++j) acc[k] += wv[j] * load<dtype_x>(x, xi + j);
          }
      }
    }
  }
  if (!done) {
    for (long long i = lane; i < n; i += 32) {
      const float wv = weight_at<format_w>(w, wrow, i, n);
#pragma unroll
      for (int k = 0; k < R4; ++k)
        if (active[k]) acc[k] += wv * load<dtype_x>(x, (row0 + k) * x_width + x0 + i);
    }
  }
#pragma unroll
  for (int k = 0; k < R4; ++k) {
    const float sum = warp_sum(acc[k]);
    if (lane == 0 && row0 + k < rows) store<dtype_out>(out, (row0 + k) * out_width + col, active[k] ? sum : 0.0f);
  }
}

// The block of the gemv grid (kernels/gemv.cuh) by warp_rows_dot: warp w takes columns w, w + 8, ...
// of the block's columns and the tile's rows kRowsPerWarp at a time. For shapes the streaming path
// does not take.
template <int dtype_x, int format_w, int dtype_out, class X0>
__device__ __forceinline__ void fallback_block(Rows rows, Statics statics, Scratch x, long long x_width, X0 x0_of,
                                               Weight w, long long n, Scratch out, long long out_width,
                                               long long columns, int split) {
  using namespace gemv_detail;
  const int per_block = gemv_columns_per_block(split), warp = threadIdx.x >> 5;
  for (int cb = warp; cb < per_block; cb += kGemvWarps) {
    const long long col = static_cast<long long>(blockIdx.y) * per_block + cb;
    if (col >= columns) break;
    for (int r = 0; r < kGemvRows; r += kRowsPerWarp) {
      const long long row0 = static_cast<long long>(blockIdx.x) * kGemvRows + r;
      if (row0 >= rows) break;
      warp_rows_dot<dtype_x, format_w, dtype_out>(rows, statics, x, x_width, x0_of(col), w, col, n, out, out_width,
                                                  col, row0);
    }
  }
}

// One block of the tiled grid (rows BM·blockIdx.x.., columns 128·blockIdx.y..): the tensor-core tile in
// K steps of BK (gemm_tile::tile_k of n) where x is 16-byte aligned (rows of whole chunks: n % 32 == 0
// already), else warp_rows_dot over the same rows and columns.
template <int dtype_x, int format_w, int dtype_out, int BK, class X0>
__device__ __forceinline__ void tiled_block(Rows rows, Statics statics, Scratch x, long long x_width, X0 x0_of,
                                            Weight w, long long n, Scratch out, long long out_width,
                                            long long columns) {
  using gemm_tile::BRow;
  constexpr int BM = gemm_tile::tile_rows(format_w), BN = gemm_tile::kBN;
  extern __shared__ __align__(16) unsigned char dyn_smem[];
  const long long row0 = static_cast<long long>(blockIdx.x) * BM, col0 = static_cast<long long>(blockIdx.y) * BN;
  if (row0 >= rows || col0 >= columns) return;
  const long long x0 = x0_of(col0);
  const unsigned short* xs = static_cast<const unsigned short*>(x);
  if ((reinterpret_cast<unsigned long long>(x) & 15) == 0 && x_width % 8 == 0 && x0 % 8 == 0) {
    const int a_rows = rows - row0 < BM ? static_cast<int>(rows - row0) : BM;
    const int b_rows = columns - col0 < BN ? static_cast<int>(columns - col0) : BN;
    gemm_tile::gemm<format_w, BM, BK>(
        reinterpret_cast<unsigned short*>(dyn_smem), a_rows,
        [&](int i) { return xs + (row0 + i) * x_width + x0; }, b_rows, [&](int j) { return BRow{w, col0 + j}; }, n,
        [&](int i, int j, float v0, float v1) {
          const long long r = row0 + i, c = col0 + j;
          if (r >= rows) return;
          const bool active = row_slot(statics, r) >= 0;
          if (c < columns) store<dtype_out>(out, r * out_width + c, active ? v0 : 0.0f);
          if (c + 1 < columns) store<dtype_out>(out, r * out_width + c + 1, active ? v1 : 0.0f);
        });
    return;
  }
  for (int cb = threadIdx.x >> 5; cb < BN && col0 + cb < columns; cb += gemv_detail::kGemvWarps)
    for (long long r = row0; r < row0 + BM && r < rows; r += kRowsPerWarp)
      warp_rows_dot<dtype_x, format_w, dtype_out>(rows, statics, x, x_width, x0_of(col0 + cb), w, col0 + cb, n, out,
                                                  out_width, col0 + cb, r);
}

// One block of a product over the gemv grid: the tensor-core body where it takes the shape (bf16 x,
// BF16/FP8/FP4 weights, every 16-column group reading one x range: kGroupX) but for BF16 weights at
// kGemvFewRows rows or fewer and wide matrices (split at most kGemvFewRowsSplit: the head), which stream
// faster on CUDA cores; else the CUDA-core body (compiled for the tensor-core variants only with BF16
// weights: NVRTC time), else (f32 weights, rows not of whole 16-byte chunks, unaligned buffers) the
// warp-per-column loop.
template <int dtype_x, int format_w, int dtype_out, bool kGroupX, class X0>
__device__ __forceinline__ void gemv_product_block(Rows rows, Statics statics, Scratch x, long long x_width, X0 x0_of,
                                                   Weight w, long long n, Scratch out, long long out_width,
                                                   long long columns) {
  using namespace gemv_detail;
  __shared__ float red[kGemvReduceFloats];
  const int split = gemv_split(columns), kparts = gemv_kparts(split);
  if (static_cast<long long>(blockIdx.x) * kGemvRows >= rows || blockIdx.z >= kparts) return;
  if (!gemv_applies<dtype_x, format_w>(x, w.data, x_width, x0_of(0), n)) {
    if (blockIdx.z == 0)  // K parts are for the streaming bodies: block z = 0 takes all of K here
      fallback_block<dtype_x, format_w, dtype_out>(rows, statics, x, x_width, x0_of, w, n, out, out_width, columns,
                                                   split);
    return;
  }
  // This warp's K slice: blocks z share the column block's K (kernels/gemv_kparts.cuh).
  const int kslice = static_cast<int>(blockIdx.z) * split + (threadIdx.x >> 5) % split, kslices = split * kparts;
  if constexpr (mma_takes(dtype_x, format_w) && kGroupX) {
    bool few = false;
    if constexpr (format_w == WF_BF16) {
      few = rows <= kGemvFewRows && split <= kGemvFewRowsSplit;
      if (few)
        gemv_block<dtype_x, format_w, kGemvFewRows, 4>(rows, statics, x, x_width, x0_of, w, n, columns, split, kslice,
                                                       kslices, red);
    }
    if (!few) gemv_mma_block<format_w>(rows, x, x_width, x0_of, w, n, columns, split, kslice, kslices, red);
  } else {
    gemv_block<dtype_x, format_w, kGemvRows, 2>(rows, statics, x, x_width, x0_of, w, n, columns, split, kslice, kslices,
                                                red);
  }
  if (kparts > 1)
    gemv_store_parts<dtype_out>(rows, statics, out, out_width, columns, split, kparts, red);
  else
    gemv_store<dtype_out>(rows, statics, out, out_width, columns, split, red);
}

// One block of a product: kTiled (tiled_takes, in the variants of phases above kGemvRows rows: many_rows,
// common/kernel_contract.h) runs tiled_block over the tiled grid, in K steps of kTileK (gemm_tile::tile_k);
// else gemv_product_block over the gemv grid. The other branch is discarded, so neither its registers
// nor its module tables (gemv_kparts.cuh's g_kpart_*) come with the variant.
template <int dtype_x, int format_w, int dtype_out, bool kGroupX, bool kTiled, int kTileK, class X0>
__device__ __forceinline__ void product_block(Rows rows, Statics statics, Scratch x, long long x_width, X0 x0_of,
                                              Weight w, long long n, Scratch out, long long out_width,
                                              long long columns) {
  if constexpr (kTiled)
    tiled_block<dtype_x, format_w, dtype_out, kTileK>(rows, statics, x, x_width, x0_of, w, n, out, out_width, columns);
  else
    gemv_product_block<dtype_x, format_w, dtype_out, kGroupX>(rows, statics, x, x_width, x0_of, w, n, out, out_width,
                                                              columns);
}
#endif
}  // namespace linear_detail

namespace entry {

template <long long in_features, long long many_rows, int dtype_x, int format_w, int dtype_out>
__device__ __forceinline__ void linear(Rows rows, Statics statics, Scratch x, Weight w, Scratch out,
                                       Int out_features) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(in_features > 0 && in_features <= (1 << 20), "in_features out of range");
  linear_detail::product_block<dtype_x, format_w, dtype_out, true,
                               many_rows && linear_detail::tiled_takes(dtype_x, format_w, in_features, true),
                               gemm_tile::tile_k(format_w, in_features)>(
      rows, statics, x, in_features, [](long long) { return 0ll; }, w, in_features, out, out_features, out_features);
#endif
}

}  // namespace entry
}  // namespace dsv41k
