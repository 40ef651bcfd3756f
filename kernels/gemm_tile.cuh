// kernels/gemm_tile.cuh — the tiled tensor-core product of prefill-sized phases: one block of 256
// threads computes a 64 x 128 tile of C = A·Bᵀ (A: up to 64 bf16 activation rows, gathered by the
// caller; B: up to 128 weight rows in their stored format) over K in steps of 32, fp32 accumulation.
// Shared by the routed experts, the shared expert (kernels/moe_prefill.cuh) and the products above
// kGemvRows rows (kernels/linear.cuh).
//
// Weights are decoded to exact bf16 while they move from registers to shared memory (BF16 as stored;
// e4m3 / e2m1 codes times their UE8M0 scale, a power of two: kernels/gemv_mma.cuh), so the MMA's
// products are exact and the sums run in fp32 in a fixed order (a row's result does not depend on
// which other rows share its tile). Two stages of shared memory (kGemmSmemBytes, dynamic) and two of
// registers: the global loads of K step s + 2 are in flight while step s runs on the tensor cores and
// step s + 1 is decoded into shared memory.
// Warps: 2 (rows) x 4 (columns), each 32 x 32 of the tile = 2 x 4 mma.sync m16n8k16.
//
// Rows past the operands (a tile's rows beyond the caller's, its columns beyond the matrix) read the
// last real row again instead of being skipped: their products land only in the tile's (i, j) that
// the caller's epilogue drops, and the loads stay unconditional at valid addresses. A load guarded
// by a null row pointer faulted on an H200 (docs/perf.md, "sefix"): in warps whose 32 rows were all
// past the end, the FP8 shared expert's first A load ran with the pointer's zero (address 0).
#pragma once

#include "gemv_mma.cuh"

namespace dsv41k {
namespace gemm_tile {

constexpr int kBM = 64, kBN = 128, kBK = 32, kThreads = 256;
constexpr int kStride = kBK + 8;  // bf16 a shared row: 80 bytes, so the fragment loads hit 32 distinct banks
constexpr int kStageHalves = (kBM + kBN) * kStride;
constexpr int kGemmSmemBytes = 2 * kStageHalves * 2;  // two stages (common/kernel_launch_*.cpp: the same)

// Whether a weight format is decoded by the tile loader (the MMA formats of gemv_mma.cuh).
__device__ constexpr bool tile_takes(int format_w) { return gemv_detail::mma_takes(DT_BF16, format_w); }

#ifndef DSV41_CONTRACT_SCAN

// A weight row of B: the matrix and the row (a real row of it: see the file comment).
struct BRow {
  Weight w;
  long long row;
};

// 8 e2m1 codes (4 bytes of a chunk, low nibble first) in natural order: word m holds elements 2m (low
// half) and 2m + 1 (high half), as code·2^-126 in bf16 times the scale (exact: kernels/gemv_mma.cuh).
__device__ __forceinline__ void fp4_natural(unsigned q, gemv_detail::Bf16Scale sc, unsigned* out) {
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const unsigned b = (q >> (8 * m)) & 0xFFu, v = (b & 0xFu) | ((b & 0xF0u) << 12);
    out[m] = gemv_detail::scaled(((v & 0x00070007u) << 6) | ((v & 0x00080008u) << 12), sc);
  }
}

// Per thread, the global pieces of one K step: A one 16-byte chunk (row tid / 4, elements 8·(tid % 4));
// B by format: BF16 two 8-element chunks, FP8 one 16-code chunk, FP4 one 32-code chunk (threads < 128).
template <int FMT>
struct Loads {
  uint4 a;
  uint4 b[2];
  unsigned scale;
};

template <int FMT>
struct Tile {
  const unsigned short* arow;  // this thread's A row (a real one, already at its first column)
  BRow brow[2];                // this thread's B rows (by format: the rows it loads; real rows)
  long long n;                 // K: the weights' logical columns
  int b_part[2];               // the chunk of a row this thread loads (in the format's chunks of the K step)

  // Every load unconditional (file comment), but FP4's: threads kBN and up have no B chunk.
  __device__ __forceinline__ void load(long long k0, Loads<FMT>& l) const {
    const int tid = threadIdx.x;
    l.a = __ldcg(reinterpret_cast<const uint4*>(arow + k0 + 8 * (tid & 3)));
    constexpr int E = gemv_detail::chunk_elems(FMT), parts = FMT == WF_BF16 ? 2 : 1;
    l.scale = 0;
    if (FMT == WF_FP4_ROW32 && tid >= kBN) return;
#pragma unroll
    for (int i = 0; i < parts; ++i)
      l.b[i] = gemv_detail::load_chunk<FMT>(brow[i].w, brow[i].row, n, k0 / E + b_part[i]);
    if constexpr (FMT != WF_BF16) {
      const long long row = brow[0].row, k = k0 + E * b_part[0];
      const long long si = FMT == WF_FP8_TILE32 ? (row >> 5) * ((n + 31) >> 5) + (k >> 5)
                           : FMT == WF_FP8_ROW32 ? (row * n + k) >> 5
                                                 : row * (n >> 5) + (k >> 5);
      l.scale = brow[0].w.scales[si];
    }
  }

  // Decodes the loads into stage `s` of shared memory.
  __device__ __forceinline__ void store(unsigned short* smem, const Loads<FMT>& l) const {
    const int tid = threadIdx.x;
    unsigned short* as = smem;
    unsigned short* bs = smem + kBM * kStride;
    *reinterpret_cast<uint4*>(as + (tid >> 2) * kStride + 8 * (tid & 3)) = l.a;
    if constexpr (FMT == WF_BF16) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int c = tid + i * kThreads;  // chunk c: row c / 4, elements 8·(c % 4)
        *reinterpret_cast<uint4*>(bs + (c >> 2) * kStride + 8 * (c & 3)) = l.b[i];
      }
    } else if constexpr (FMT == WF_FP4_ROW32) {
      if (tid < kBN) {
        unsigned w[16];
        const gemv_detail::Bf16Scale sc = gemv_detail::bf16_scale(l.scale, 126u);
        fp4_natural(l.b[0].x, sc, w);
        fp4_natural(l.b[0].y, sc, w + 4);
        fp4_natural(l.b[0].z, sc, w + 8);
        fp4_natural(l.b[0].w, sc, w + 12);
        uint4* dst = reinterpret_cast<uint4*>(bs + tid * kStride);
#pragma unroll
        for (int j = 0; j < 4; ++j) dst[j] = make_uint4(w[4 * j], w[4 * j + 1], w[4 * j + 2], w[4 * j + 3]);
      }
    } else {  // FP8: 16 codes of row tid / 2, elements 16·(tid % 2)
      unsigned w[8];
      gemv_detail::fp8_to_bf16(l.b[0], gemv_detail::bf16_scale(l.scale, 120u), w);
      uint4* dst = reinterpret_cast<uint4*>(bs + (tid >> 1) * kStride + 16 * (tid & 1));
      dst[0] = make_uint4(w[0], w[1], w[2], w[3]);
      dst[1] = make_uint4(w[4], w[5], w[6], w[7]);
    }
  }
};

// Four 8 x 8 bf16 matrices of shared memory into registers (ldmatrix): lanes 8m .. 8m + 7 name the
// rows of matrix m; each lane receives, of each matrix, row lane / 4, columns 2·(lane % 4) and next.
__device__ __forceinline__ void load_x4(const unsigned short* row, unsigned (&r)[4]) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// acc[mi][ni][4] of warp (wm, wn) += the stage's A·Bᵀ over its 32 columns of K. The fragments of
// mma m16n8k16 come by ldmatrix: A's (rows g, g + 8; columns 2t, 2t + 8) as matrices (rows 0-7 | 8-15)
// x (columns 0-7 | 8-15), B's (row g; columns 2t, 2t + 8) for two 8-row groups at once.
__device__ __forceinline__ void tile_mma(const unsigned short* smem, float (&acc)[2][4][4]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, m = lane >> 3, r = lane & 7;
  const int wm = warp >> 2, wn = warp & 3;
  const unsigned short* as = smem + (wm * 32 + (m & 1) * 8 + r) * kStride + (m >> 1) * 8;
  const unsigned short* bs = smem + (kBM + wn * 32 + (m >> 1) * 8 + r) * kStride + (m & 1) * 8;
#pragma unroll
  for (int kk = 0; kk < kBK; kk += 16) {
    unsigned a[2][4], b[4][2];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi) load_x4(as + mi * 16 * kStride + kk, a[mi]);
#pragma unroll
    for (int nj = 0; nj < 4; nj += 2) {
      unsigned q[4];
      load_x4(bs + nj * 8 * kStride + kk, q);
      b[nj][0] = q[0], b[nj][1] = q[1], b[nj + 1][0] = q[2], b[nj + 1][1] = q[3];
    }
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
        gemv_detail::mma_bf16(acc[mi][ni], a[mi][0], a[mi][1], a[mi][2], a[mi][3], b[ni][0], b[ni][1]);
  }
}

// The row a tile row reads: itself while the operand has it, else the operand's last row (the file
// comment). `rows` is in [1, tile rows].
__device__ __forceinline__ int real_row(int i, int rows) { return i < rows ? i : rows - 1; }

// One tile: C[i][j] = Σ_k A[i][k]·B[j][k] for i < 64, j < 128, k < n (n a multiple of kBK).
// The tile's operands have a_rows in [1, 64] A rows and b_rows in [1, 128] B rows; a_row(i) (i < a_rows)
// is A row i's first element (16-byte aligned, rows of whole 16-byte chunks), b_row(j) (j < b_rows)
// B row j. epi(i, j, v0, v1) receives C[i][j] and C[i][j + 1] (j even) for every (i, j) of the tile
// once, also past a_rows / b_rows, where the values are those of a repeated row: the epilogue drops
// them. Every thread of the block must call it; it synchronises the block.
template <int FMT, class ARowOf, class BRowOf, class Epi>
__device__ __forceinline__ void gemm(unsigned short* smem, int a_rows, ARowOf a_row, int b_rows, BRowOf b_row,
                                     long long n, Epi epi) {
  static_assert(tile_takes(FMT), "the tile loader decodes BF16, FP8 and FP4 weights");
  const int tid = threadIdx.x;
  Tile<FMT> tile;
  tile.n = n;
  tile.arow = a_row(real_row(tid >> 2, a_rows));
  // B rows this thread loads: BF16 chunks tid and tid + 256 (4 a row); FP8 row tid / 2; FP4 row tid
  // (threads below kBN; the others name a real row they never read).
  if constexpr (FMT == WF_BF16) {
    tile.brow[0] = b_row(real_row(tid >> 2, b_rows)), tile.b_part[0] = tid & 3;
    tile.brow[1] = b_row(real_row((tid + kThreads) >> 2, b_rows)), tile.b_part[1] = tid & 3;
  } else if constexpr (FMT == WF_FP4_ROW32) {
    tile.brow[0] = b_row(real_row(tid & (kBN - 1), b_rows)), tile.b_part[0] = 0;
    tile.brow[1] = tile.brow[0], tile.b_part[1] = 0;
  } else {
    tile.brow[0] = b_row(real_row(tid >> 1, b_rows)), tile.b_part[0] = tid & 1;
    tile.brow[1] = tile.brow[0], tile.b_part[1] = 0;
  }
  float acc[2][4][4];
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;
  const long long steps = n / kBK;
  Loads<FMT> even, odd;  // the register stages of the even and the odd K steps
  __syncthreads();       // the previous tile's last stage may still be read
  tile.load(0, even);
  tile.store(smem, even);
  if (steps > 1) tile.load(kBK, odd);
  __syncthreads();
  // Step s: the loads of step s + 2 go out into the register stage step s has left (two steps of MMAs
  // to arrive), the MMAs of step s run, then step s + 1 is decoded into the other shared stage.
  auto step = [&](long long s, Loads<FMT>& mine, const Loads<FMT>& next) {
    if (s + 2 < steps) tile.load((s + 2) * kBK, mine);
    tile_mma(smem + (s & 1) * kStageHalves, acc);
    if (s + 1 < steps) tile.store(smem + ((s + 1) & 1) * kStageHalves, next);
    __syncthreads();
  };
  for (long long s = 0; s < steps; s += 2) {
    step(s, even, odd);
    if (s + 1 < steps) step(s + 1, odd, even);
  }
  const int lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int wm = warp >> 2, wn = warp & 3;
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
      const int i = wm * 32 + mi * 16 + g, j = wn * 32 + ni * 8 + 2 * t;
      epi(i, j, acc[mi][ni][0], acc[mi][ni][1]);
      epi(i + 8, j, acc[mi][ni][2], acc[mi][ni][3]);
    }
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace gemm_tile
}  // namespace dsv41k
