// kernels/gemm_tile.cuh — the tiled tensor-core product of prefill-sized phases: one block of 256
// threads computes a BM x 128 tile of C = A·Bᵀ (A: up to BM bf16 activation rows, gathered by the
// caller; B: up to 128 weight rows in their stored format) over K in steps of BK, fp32 accumulation.
// BM (tile_rows) is 128 for BF16 weights in the products above kGemvRows rows (kernels/linear.cuh: the
// head; twice the MMAs a copied weight element, and a warp's 64 x 32 takes 16 MMAs for 6 fragment loads
// a K half-step), with BK (tile_k) 64 where K allows; else 64 rows and BK 32: the experts
// (kernels/moe_prefill.cuh: an expert's rows are few) and the FP8 / FP4 products (narrow ones would leave
// SMs idle at 128 rows; the op tests cover both tiles).
//
// Weights are decoded to exact bf16 on their way into shared memory (BF16 as stored; e4m3 / e2m1 codes
// times their UE8M0 scale, a power of two: kernels/gemv_mma.cuh), so the MMA's products are exact and
// the sums run in fp32 in a fixed order (K step by K step, a row's result does not depend on which other
// rows share its tile). Shared memory (smem_bytes, dynamic) holds stages(BM, BK) stages; one barrier a
// step:
//   A (always bf16) and BF16 weights travel by cp.async (kernels/cp_async.cuh) stages − 1 steps ahead;
//   FP8 / FP4 weights go through two register stages: the loads of step s + 2 leave before step s's MMAs,
//   and step s + 1 is decoded into its stage after them (every thread decodes 16 codes of one row).
// Warps: 2 (rows) x 4 (columns), each BM/2 x 32 of the tile = BM/32 x 4 mma.sync m16n8k16.
//
// Rows past the operands (a tile's rows beyond the caller's, its columns beyond the matrix) read the
// last real row again instead of being skipped: their products land only in the tile's (i, j) that
// the caller's epilogue drops, and the loads stay unconditional at valid addresses. A load guarded
// by a null row pointer faulted on an H200 (docs/perf.md, "sefix"): in warps whose 32 rows were all
// past the end, the FP8 shared expert's first A load ran with the pointer's zero (address 0).
#pragma once

#include "cp_async.cuh"
#include "gemv_mma.cuh"

namespace dsv41k {
namespace gemm_tile {

constexpr int kBM = 64, kWideBM = 128, kBN = 128, kBK = 32, kWideBK = 64, kThreads = 256;
// bf16 a shared row: BK + 8 (80 or 144 bytes), so the fragment loads of 8 rows hit 32 distinct banks.
__device__ constexpr int stride(int bk) { return bk + 8; }
// Stages of shared memory: three for the 64-row tile (46,080 bytes: two experts' blocks an SM beside their
// static tables); for the 128-row one four of K 32 (81,920 bytes) or two of K 64 (73,728 bytes), two blocks
// an SM. common/kernel_launch_ops.h kGemmSmemBytes and kWideGemmSmemBytes: the most of each.
__device__ constexpr int stages(int bm, int bk) { return bm == kWideBM ? (bk == kWideBK ? 2 : 4) : 3; }
__device__ constexpr int stage_halves(int bm, int bk) { return (bm + kBN) * stride(bk); }
__device__ constexpr int smem_bytes(int bm, int bk) { return stages(bm, bk) * stage_halves(bm, bk) * 2; }
constexpr int kGemmSmemBytes = smem_bytes(kBM, kBK);

// The tile rows of the products above kGemvRows rows (kernels/linear.cuh) by weight format (file comment).
__device__ constexpr int tile_rows(int format_w) { return format_w == WF_BF16 ? kWideBM : kBM; }
// Their K step: 64 where the 128-row tile's K allows (half the barriers a K), else 32.
__device__ constexpr int tile_k(int format_w, long long n) {
  return format_w == WF_BF16 && n % kWideBK == 0 ? kWideBK : kBK;
}

// Whether a weight format is decoded by the tile loader (the MMA formats of gemv_mma.cuh).
__device__ constexpr bool tile_takes(int format_w) { return gemv_detail::mma_takes(DT_BF16, format_w); }

#ifndef DSV41_CONTRACT_SCAN

// A weight row of B: the matrix and the row (a real row of it: see the file comment).
struct BRow {
  Weight w;
  long long row;
};

// 8 e2m1 codes (4 bytes, low nibble first) in natural order: word m holds elements 2m (low half) and
// 2m + 1 (high half), as code·2^-126 in bf16 times the scale (exact: kernels/gemv_mma.cuh).
__device__ __forceinline__ void fp4_natural(unsigned q, gemv_detail::Bf16Scale sc, unsigned* out) {
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const unsigned b = (q >> (8 * m)) & 0xFFu, v = (b & 0xFu) | ((b & 0xF0u) << 12);
    out[m] = gemv_detail::scaled(((v & 0x00070007u) << 6) | ((v & 0x00080008u) << 12), sc);
  }
}

// A thread's register stage of one K step of FP8 / FP4 weights: 16 codes of its row (FP8 a 16-byte
// chunk; FP4 8 bytes in q.x, q.y) and their scale byte.
struct Raw {
  uint4 q;
  unsigned scale;
};

// A thread's part of the tile's loads (P = BK / 8 chunks of 16 bytes a row). A: chunks c = tid + 256·q
// (q < kA), row c / P, elements 8·(c % P) of the K step. B: BF16 chunks c = tid + 256·q (q < kB) the same
// way; FP8 / FP4 (BK 32) row tid / 2, elements 16·(tid % 2).
template <int FMT, int BM, int BK>
struct Tile {
  static constexpr int P = BK / 8, kA = BM * P / kThreads, kB = kBN * P / kThreads, kStride = stride(BK);
  static_assert(FMT == WF_BF16 || BK == kBK, "FP8 / FP4 weights decode K steps of 32");
  const unsigned short* a[kA];  // at the chunk's first element of column 0 (a real row)
  const unsigned short* b[kB];  // BF16: likewise
  BRow brow;                    // FP8 / FP4: the thread's row (a real one)
  long long n;                  // K: the weights' logical columns

  // The cp.async copies of the K step at k0 into `stage`: A, and B when BF16.
  __device__ __forceinline__ void copy(long long k0, unsigned short* stage) const {
    const int tid = threadIdx.x;
#pragma unroll
    for (int q = 0; q < kA; ++q) {
      const unsigned c = tid + q * kThreads;
      cp_async16(stage + (c / P) * kStride + 8 * (c % P), a[q] + k0);
    }
    if constexpr (FMT == WF_BF16) {
#pragma unroll
      for (int q = 0; q < kB; ++q) {
        const unsigned c = tid + q * kThreads;
        cp_async16(stage + (BM + c / P) * kStride + 8 * (c % P), b[q] + k0);
      }
    }
  }

  // FP8 / FP4: the thread's codes and scale of the K step at k0.
  __device__ __forceinline__ void load(long long k0, Raw& r) const {
    const long long row = brow.row, k = k0 + 16 * (threadIdx.x & 1);
    if constexpr (FMT == WF_FP4_ROW32) {
      const unsigned char* p = static_cast<const unsigned char*>(brow.w.data) + row * (n >> 1) + (k >> 1);
      asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(r.q.x), "=r"(r.q.y) : "l"(p));
    } else {
      r.q = gemv_detail::load_chunk<FMT>(brow.w, row, n, k >> 4);
    }
    const long long si = FMT == WF_FP8_TILE32 ? (row >> 5) * ((n + 31) >> 5) + (k >> 5)
                         : FMT == WF_FP8_ROW32 ? (row * n + k) >> 5
                                               : row * (n >> 5) + (k >> 5);
    r.scale = brow.w.scales[si];
  }

  // FP8 / FP4: the codes decoded into the B part of `stage`.
  __device__ __forceinline__ void store(unsigned short* stage, const Raw& r) const {
    const int tid = threadIdx.x;
    unsigned w[8];
    if constexpr (FMT == WF_FP4_ROW32) {
      const gemv_detail::Bf16Scale sc = gemv_detail::bf16_scale(r.scale, 126u);
      fp4_natural(r.q.x, sc, w);
      fp4_natural(r.q.y, sc, w + 4);
    } else {
      gemv_detail::fp8_to_bf16(r.q, gemv_detail::bf16_scale(r.scale, 120u), w);
    }
    uint4* dst = reinterpret_cast<uint4*>(stage + (BM + (tid >> 1)) * kStride + 16 * (tid & 1));
    dst[0] = make_uint4(w[0], w[1], w[2], w[3]);
    dst[1] = make_uint4(w[4], w[5], w[6], w[7]);
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
// The same with .trans: each lane receives, of each matrix, rows 2·(lane % 4) and next at column
// lane / 4 (the B fragment of a row-major K x N tile; kernels/sparse_attention_prefill.cuh's P·V).
__device__ __forceinline__ void load_x4_trans(const unsigned short* row, unsigned (&r)[4]) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// acc[mi][ni][4] of warp (wm, wn) += the stage's A·Bᵀ over its 32 columns of K. The fragments of
// mma m16n8k16 come by ldmatrix: A's (rows g, g + 8; columns 2t, 2t + 8) as matrices (rows 0-7 | 8-15)
// x (columns 0-7 | 8-15), B's (row g; columns 2t, 2t + 8) for two 8-row groups at once. A's fragments
// are loaded a 16-row slice at a time, beside its four MMAs (fewer registers live).
template <int BM, int BK>
__device__ __forceinline__ void tile_mma(const unsigned short* stage, float (&acc)[BM / 32][4][4]) {
  constexpr int kStride = stride(BK);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, m = lane >> 3, r = lane & 7;
  const int wm = warp >> 2, wn = warp & 3;
  const unsigned short* as = stage + (wm * (BM / 2) + (m & 1) * 8 + r) * kStride + (m >> 1) * 8;
  const unsigned short* bs = stage + (BM + wn * 32 + (m >> 1) * 8 + r) * kStride + (m & 1) * 8;
#pragma unroll
  for (int kk = 0; kk < BK; kk += 16) {
    unsigned b[4][2];
#pragma unroll
    for (int nj = 0; nj < 4; nj += 2) {
      unsigned q[4];
      load_x4(bs + nj * 8 * kStride + kk, q);
      b[nj][0] = q[0], b[nj][1] = q[1], b[nj + 1][0] = q[2], b[nj + 1][1] = q[3];
    }
#pragma unroll
    for (int mi = 0; mi < BM / 32; ++mi) {
      unsigned a[4];
      load_x4(as + mi * 16 * kStride + kk, a);
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) gemv_detail::mma_bf16(acc[mi][ni], a[0], a[1], a[2], a[3], b[ni][0], b[ni][1]);
    }
  }
}

// The row a tile row reads: itself while the operand has it, else the operand's last row (the file
// comment). `rows` is in [1, tile rows].
__device__ __forceinline__ int real_row(int i, int rows) { return i < rows ? i : rows - 1; }

// One tile: C[i][j] = Σ_k A[i][k]·B[j][k] for i < BM, j < 128, k < n (n a multiple of BK), in `smem`
// of smem_bytes(BM, BK). The tile's operands have a_rows in [1, BM] A rows and b_rows in [1, 128] B rows;
// a_row(i) (i < a_rows) is A row i's first element (16-byte aligned, rows of whole 16-byte chunks),
// b_row(j) (j < b_rows) B row j (16-byte aligned rows). epi(i, j, v0, v1) receives C[i][j] and
// C[i][j + 1] (j even) for every (i, j) of the tile once, also past a_rows / b_rows, where the values are
// those of a repeated row: the epilogue drops them. Every thread of the block must call it; it
// synchronises the block.
template <int FMT, int BM, int BK, class ARowOf, class BRowOf, class Epi>
__device__ __forceinline__ void gemm(unsigned short* smem, int a_rows, ARowOf a_row, int b_rows, BRowOf b_row,
                                     long long n, Epi epi) {
  static_assert(tile_takes(FMT), "the tile loader decodes BF16, FP8 and FP4 weights");
  static_assert(BM == kBM || BM == kWideBM, "tiles of 64 or 128 rows");
  static_assert(BK == kBK || (BK == kWideBK && BM == kWideBM), "K steps of 32, or of 64 in the 128-row tile");
  constexpr int S = stages(BM, BK), SH = stage_halves(BM, BK), MI = BM / 32;
  using T = Tile<FMT, BM, BK>;
  constexpr bool kRegB = FMT != WF_BF16;
  const int tid = threadIdx.x;
  T tile;
  tile.n = n;
#pragma unroll
  for (int q = 0; q < T::kA; ++q) {
    const unsigned c = tid + q * kThreads;
    tile.a[q] = a_row(real_row(c / T::P, a_rows)) + 8 * (c % T::P);
  }
  if constexpr (FMT == WF_BF16) {
#pragma unroll
    for (int q = 0; q < T::kB; ++q) {
      const unsigned c = tid + q * kThreads;
      const BRow br = b_row(real_row(c / T::P, b_rows));
      tile.b[q] = static_cast<const unsigned short*>(br.w.data) + br.row * n + 8 * (c % T::P);
    }
  } else {
    tile.brow = b_row(real_row(tid >> 1, b_rows));
  }
  float acc[MI][4][4];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;
  const int steps = static_cast<int>(n / BK);
  __syncthreads();  // the previous tile's last stages may still be read
  // Prologue: steps 0 .. S − 2 copied (one group each, empty past the end, so that the wait below
  // counts steps); FP8 / FP4 B: step 0 decoded, step 1 in registers.
#pragma unroll
  for (int st = 0; st < S - 1; ++st) {
    if (st < steps) tile.copy(static_cast<long long>(st) * BK, smem + st * SH);
    cp_async_commit();
  }
  Raw even, odd;  // FP8 / FP4: the register stages of the even and the odd K steps
  if constexpr (kRegB) {
    tile.load(0, even);
    tile.store(smem, even);
    if (steps > 1) tile.load(kBK, odd);
  }
  // Step s: its copies arrived (this thread's, then the barrier: everyone's, and every warp is past step
  // s − 1, whose stage the copies of step s + S − 1 now take); FP8 / FP4: the loads of step s + 2 into
  // the register stage step s has left, the MMAs, then step s + 1 decoded into its stage (step s + 1 − S
  // read it, before the last barrier).
  auto step = [&](int s, Raw& mine, const Raw& next) {
    cp_async_wait<S - 2>();
    __syncthreads();
    const int ahead = s + S - 1;
    if (ahead < steps) tile.copy(static_cast<long long>(ahead) * BK, smem + (ahead % S) * SH);
    cp_async_commit();
    if constexpr (kRegB) {
      if (s + 2 < steps) tile.load(static_cast<long long>(s + 2) * kBK, mine);
    }
    tile_mma<BM, BK>(smem + (s % S) * SH, acc);
    if constexpr (kRegB) {
      if (s + 1 < steps) tile.store(smem + ((s + 1) % S) * SH, next);
    }
  };
  for (int s = 0; s < steps; s += 2) {
    step(s, even, odd);
    if (s + 1 < steps) step(s + 1, odd, even);
  }
  cp_async_wait<0>();  // only empty groups are left; none outlives the tile
  const int lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int wm = warp >> 2, wn = warp & 3;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
      const int i = wm * (BM / 2) + mi * 16 + g, j = wn * 32 + ni * 8 + 2 * t;
      epi(i, j, acc[mi][ni][0], acc[mi][ni][1]);
      epi(i + 8, j, acc[mi][ni][2], acc[mi][ni][3]);
    }
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace gemm_tile
}  // namespace dsv41k
