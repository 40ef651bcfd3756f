// kernels/gemv_stream.cuh — the decode GEMV's tensor-core body with its weight loads software-pipelined:
// a ring of kStreamStages K blocks in registers, the load of block k + (S - 1)·split issued before block
// k is decoded and multiplied, so a warp always has S - 1 .. S blocks of weight bytes (and their scale
// bytes) in flight instead of U blocks that drop to none while the previous ones are decoded (mma_tile
// of kernels/gemv_mma.cuh, which the grouped experts keep). The same lanes, K permutation, decode and
// MMA sequence as mma_tile: the partials are the same bits, only the loads are issued earlier.
#pragma once

#include "gemv_mma.cuh"

namespace dsv41k {
namespace gemv_detail {

// K blocks a warp keeps in its register ring (each 32 bytes a lane: two weight rows' 16-byte chunks).
// Four is mma_tile's FP8 batch, so the ring costs about the registers that batch did.
template <int FMT>
__device__ constexpr int stream_stages() {
  return 4;
}

#ifndef DSV41_CONTRACT_SCAN

// One K block's loads for a lane: chunk `chunk` of weight rows c0 and c1 and, for scaled formats, the
// UE8M0 byte of each (pinned as volatile loads, so they issue here and not where the bytes are used).
struct StreamStage {
  uint4 a, b;
  unsigned sa, sb;
};
__device__ __forceinline__ unsigned load_scale_byte(const unsigned char* p) {
  unsigned v;
  asm volatile("ld.global.nc.u8 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
template <int FMT>
__device__ __forceinline__ void stream_load(Weight w, long long c0, long long c1, long long n, long long chunk,
                                            bool live, StreamStage& s) {
  constexpr int E = chunk_elems(FMT);
  s.a = s.b = make_uint4(0, 0, 0, 0);
  s.sa = s.sb = 127u;
  if (!live) return;
  s.a = load_chunk<FMT>(w, c0, n, chunk);
  s.b = load_chunk<FMT>(w, c1, n, chunk);
  if constexpr (FMT != WF_BF16) {
    s.sa = load_scale_byte(w.scales + scale_index<FMT>(c0, chunk * E, n));
    s.sb = load_scale_byte(w.scales + scale_index<FMT>(c1, chunk * E, n));
  }
}
// weight_words with the scale byte already loaded.
template <int FMT>
__device__ __forceinline__ void stream_words(uint4 raw, unsigned s, unsigned* words) {
  if constexpr (FMT == WF_BF16) {
    words[0] = raw.x, words[1] = raw.y, words[2] = raw.z, words[3] = raw.w;
  } else if constexpr (FMT == WF_FP4_ROW32) {
    fp4_to_bf16(raw, bf16_scale(s, 126u), words);
  } else {
    fp8_to_bf16(raw, bf16_scale(s, 120u), words);
  }
}

// mma_tile's contract (same arguments, same partials into mine) with the loads pipelined.
template <int FMT, class XRow>
__device__ __forceinline__ void mma_stream(const unsigned short* xs, XRow xrow, int nrows, Weight w, long long n,
                                           long long gcol, long long columns, int slice, int split, float* mine) {
  constexpr int E = chunk_elems(FMT), W = E / 2, S = stream_stages<FMT>();
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  float d[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
  const long long c0 = gcol + g < columns ? gcol + g : columns - 1,
                  c1 = gcol + g + 8 < columns ? gcol + g + 8 : columns - 1;
  const long long xr0 = g < nrows ? xrow(g) : -1, xr1 = g + 8 < nrows ? xrow(g + 8) : -1;
  const long long chunks = n / E, blocks = (chunks + 3) / 4;  // K blocks of 4 chunks, one a lane
  StreamStage ring[S];
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    const long long k = slice + static_cast<long long>(s) * split, chunk = k * 4 + t;
    stream_load<FMT>(w, c0, c1, n, chunk, k < blocks && chunk < chunks, ring[s]);
  }
  // The ring index is a constant in the unrolled inner loop (registers, not local memory).
  for (long long kb0 = slice; kb0 < blocks; kb0 += static_cast<long long>(split) * S) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
      const long long k = kb0 + static_cast<long long>(s) * split;
      if (k >= blocks) break;
      {  // refill the slot block k - split left: block k + (S - 1)·split
        const long long kn = k + static_cast<long long>(S - 1) * split, cn = kn * 4 + t;
        stream_load<FMT>(w, c0, c1, n, cn, kn < blocks && cn < chunks, ring[(s + S - 1) % S]);
      }
      const long long chunk = k * 4 + t;
      const bool valid = chunk < chunks;
      unsigned wa[W], wb[W];
      if (valid) {
        stream_words<FMT>(ring[s].a, ring[s].sa, wa);
        stream_words<FMT>(ring[s].b, ring[s].sb, wb);
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
          if (valid && xr >= 0) v = *(reinterpret_cast<const uint4*>(xs + xr + chunk * E) + j);
          xw[4 * j] = v.x, xw[4 * j + 1] = v.y, xw[4 * j + 2] = v.z, xw[4 * j + 3] = v.w;
        }
        if constexpr (FMT == WF_FP4_ROW32) {
          unsigned xp[W];
          fp4_pair_x(xw, xp);
#pragma unroll
          for (int j = 0; j < W; ++j) xw[j] = xp[j];
        }
#pragma unroll
        for (int q = 0; q < W / 2; ++q)
          mma_bf16(d[tile], wa[2 * q], wb[2 * q], wa[2 * q + 1], wb[2 * q + 1], xw[2 * q], xw[2 * q + 1]);
      }
    }
  }
  // d[tile]: (column g, inputs 2t, 2t+1) and (column g + 8, the same inputs) of the tile.
#pragma unroll
  for (int tile = 0; tile < 2; ++tile) {
    const int r = tile * 8 + 2 * t;
    mine[g * kGemvRows + r] = d[tile][0];
    mine[g * kGemvRows + r + 1] = d[tile][1];
    mine[(g + 8) * kGemvRows + r] = d[tile][2];
    mine[(g + 8) * kGemvRows + r + 1] = d[tile][3];
  }
}

// The tensor-core body of the GEMV: the warp's column group and K slice into red (gemv_store sums them).
template <int format_w, class X0>
__device__ __forceinline__ void gemv_mma_block(Rows rows, Scratch x, long long x_width, X0 x0_of, Weight w, long long n,
                                               long long columns, int split, float* red) {
  const int warp = threadIdx.x >> 5, group = warp / split, slice = warp % split;
  const long long row0 = static_cast<long long>(blockIdx.x) * kGemvRows;
  const long long gcol = static_cast<long long>(blockIdx.y) * gemv_columns_per_block(split) + group * kGemvGroup;
  float* mine = red + warp * kGemvGroup * kGemvRows;
  if (gcol >= columns) {  // the block's last group may lie past the matrix: nothing to add
    for (int i = threadIdx.x & 31; i < kGemvGroup * kGemvRows; i += 32) mine[i] = 0.0f;
    return;
  }
  const long long x0 = x0_of(gcol), nrows = rows - row0 < kGemvRows ? rows - row0 : kGemvRows;
  mma_stream<format_w>(
      static_cast<const unsigned short*>(x), [&](int i) { return (row0 + i) * x_width + x0; }, static_cast<int>(nrows),
      w, n, gcol, columns, slice, split, mine);
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace gemv_detail
}  // namespace dsv41k
