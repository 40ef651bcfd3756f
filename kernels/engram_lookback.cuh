// kernels/engram_lookback.cuh — Engram's lookback update (docs/ops.md "engram_lookback"): for active
// rows in row order, lookback(slot)[p mod window] = token(r).
//
// Launch (common/kernel_launch_engram.cpp): block 32 threads, grid (R): one block per row. As in
// window_store.cuh, "row order" is realised by ownership: block r stores only when no later active
// row of the same slot lands on the same entry. A negative position, a slot outside the lookback or
// a window beyond its rows reports ERR_STATICS / ERR_CAPACITY and the row is skipped.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace engram_lookback_detail {
constexpr int kThreads = 32;
}

namespace entry {

template <long long window>
__device__ __forceinline__ void engram_lookback(Rows rows, Statics statics, State lookback, Int lookback_rows,
                                                Errors errors) {
  static_assert(window >= 1 && window <= (1 << 24), "window out of range");
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int slot = row_slot(statics, r);
  if (slot < 0) return;
  const long long position = row_position(statics, r);
  if (position < 0 || !slot_in(slot, lookback) || window > lookback_rows) {
    if (threadIdx.x == 0) report_error(errors, window > lookback_rows ? ERR_CAPACITY : ERR_STATICS);
    return;
  }
  const long long entry = position % window;
  int later = 0;
  for (long long q = r + 1 + threadIdx.x; q < rows; q += engram_lookback_detail::kThreads) {
    const long long pq = row_position(statics, q);
    later |= row_slot(statics, q) == slot && pq >= 0 && pq % window == entry;
  }
  if (__syncthreads_or(later)) return;
  if (threadIdx.x == 0) reinterpret_cast<int*>(slot_base(lookback, slot))[entry] = row_token(statics, r);
}

}  // namespace entry
}  // namespace dsv41k
