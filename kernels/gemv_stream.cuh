// kernels/gemv_stream.cuh — the decode GEMV's tensor-core body with its weight loads software-pipelined:
// a ring of stream_stages() K blocks in registers, the load of block k + (S - 1)·split issued before
// block k is decoded and multiplied, so a warp keeps S - 1 .. S blocks of weight bytes in flight instead
// of a batch that drops to none while it is decoded (mma_tile of kernels/gemv_mma.cuh). The same lanes,
// K permutation, decode and MMA sequence as mma_tile: the partials are the same bits, only the weight
// loads are issued earlier. Taken for BF16 weights only, where the GPU measured it faster (docs/perf.md,
// branch gemv8: the head at 8 and 16 rows 12 and 10 points of the roofline faster); FP8 and FP4 keep
// mma_tile (the ring measured mixed for FP8 and slower for FP4). Also the products' tensor-core block
// body (gemv_mma_block: mma_stream for BF16, mma_tile at kProductBatch otherwise).
#pragma once

#include "gemv_mma.cuh"

namespace dsv41k {
namespace gemv_detail {

// K blocks a warp keeps in its register ring (each 32 bytes a lane: two weight rows' 16-byte chunks);
// four is mma_tile's FP8 batch, so the ring costs about the registers that batch did. 0: mma_tile.
template <int FMT>
__device__ constexpr int stream_stages() {
  return FMT == WF_BF16 ? 4 : 0;
}

#ifndef DSV41_CONTRACT_SCAN

// One K block's weight loads for a lane: chunk `chunk` of weight rows c0 and c1 (zeros where not live).
// Scale bytes are read at decode, as mma_tile reads them: carrying them in the ring (volatile byte loads
// issued with the chunks) made FP8 slower (wo_b 5120x8192, 1 row: 25.2 -> 31.2 us, docs/perf.md).
struct StreamStage {
  uint4 a, b;
};
template <int FMT>
__device__ __forceinline__ void stream_load(Weight w, long long c0, long long c1, long long n, long long chunk,
                                            bool live, StreamStage& s) {
  s.a = s.b = make_uint4(0, 0, 0, 0);
  if (!live) return;
  s.a = load_chunk<FMT>(w, c0, n, chunk);
  s.b = load_chunk<FMT>(w, c1, n, chunk);
}

// A lane's part of a warp's MMA tile: its column t in the quad, the weight rows of columns g and g + 8
// of the group (clamped below `columns`: the extra lanes re-read the last row) and the x offsets of inputs
// g and g + 8 (-1: past nrows, zeros).
struct MmaLane {
  int t;
  long long c0, c1, xr0, xr1;
};
template <class XRow>
__device__ __forceinline__ MmaLane mma_lane(XRow xrow, int nrows, long long gcol, long long columns) {
  const int lane = threadIdx.x & 31, g = lane >> 2;
  return {lane & 3, gcol + g < columns ? gcol + g : columns - 1, gcol + g + 8 < columns ? gcol + g + 8 : columns - 1,
          g < nrows ? xrow(g) : -1, g + 8 < nrows ? xrow(g + 8) : -1};
}

// mma_tile's contract (same arguments, same partials into mine) with the loads pipelined.
template <int FMT, class XRow>
__device__ __forceinline__ void mma_stream(const unsigned short* xs, XRow xrow, int nrows, Weight w, long long n,
                                           long long gcol, long long columns, int slice, int split, float* mine) {
  constexpr int E = chunk_elems(FMT), S = stream_stages<FMT>();
  const MmaLane L = mma_lane(xrow, nrows, gcol, columns);
  const int t = L.t;
  const long long c0 = L.c0, c1 = L.c1, xr0 = L.xr0, xr1 = L.xr1;
  float d[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
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
      mma_block<FMT, false>(xs, xr0, xr1, nrows, w, n, c0, c1, chunk, chunk < chunks, ring[s].a, ring[s].b, d);
    }
  }
  mma_store(d, mine);
}

// K blocks a lane of the products' mma_tile keeps in flight: 2 (the experts keep 4 for FP8) put the FP8
// linear and grouped_linear variants at 78-80 registers instead of 102-107 (more blocks an SM, for a body
// that waits on its loads at 25% occupancy: docs/perf.md, branch dfp8), measured while the tiled prefill
// path still shared their variants; their decode variants (many_rows = 0) now take 64 and 74.
constexpr int kProductBatch = 2;

// The tensor-core body of the GEMV: the warp's column group and K slice into red (gemv_store sums them).
// K slice kslice of kslices (kernels/gemv_kparts.cuh splits K over blocks too).
template <int format_w, class X0>
__device__ __forceinline__ void gemv_mma_block(Rows rows, Scratch x, long long x_width, X0 x0_of, Weight w, long long n,
                                               long long columns, int split, int kslice, int kslices, float* red) {
  const int warp = threadIdx.x >> 5, group = warp / split;
  const long long row0 = static_cast<long long>(blockIdx.x) * kGemvRows;
  const long long gcol = static_cast<long long>(blockIdx.y) * gemv_columns_per_block(split) + group * kGemvGroup;
  float* mine = red + warp * kGemvGroup * kGemvRows;
  if (gcol >= columns) {  // the block's last group may lie past the matrix: nothing to add
    for (int i = threadIdx.x & 31; i < kGemvGroup * kGemvRows; i += 32) mine[i] = 0.0f;
    return;
  }
  const long long x0 = x0_of(gcol), nrows = rows - row0 < kGemvRows ? rows - row0 : kGemvRows;
  const unsigned short* xs = static_cast<const unsigned short*>(x);
  auto xrow = [&](int i) { return (row0 + i) * x_width + x0; };
  if constexpr (stream_stages<format_w>() > 0)
    mma_stream<format_w>(xs, xrow, static_cast<int>(nrows), w, n, gcol, columns, kslice, kslices, mine);
  else
    mma_tile<format_w, false, kProductBatch>(xs, xrow, static_cast<int>(nrows), w, n, gcol, columns, kslice, kslices,
                                             mine);
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace gemv_detail
}  // namespace dsv41k
