// kernels/window_store.cuh — the window ring update (docs/ops.md "window_store"): for active rows in
// row order, ring(slot)[p mod window] = kv[r]; so when a step is longer than the window, only the
// last row of each ring entry lands.
//
// Launch (common/kernel_launch_rows.cpp): block 256 threads, grid (R): one block per row. Rows run in
// parallel, so "row order" is realised by ownership: block r stores its row only when no later
// active row r' > r has the same slot and the same ring entry (the block scans the later rows'
// statics with __syncthreads_or); the rows left write distinct entries. A negative position reports
// ERR_STATICS and a window beyond the ring's rows (ring_rows) reports ERR_CAPACITY; the row is then
// skipped. The ring and kv are activations of the same dtype in practice; the copy goes through
// fp32 (exact for equal dtypes). A DT_PACKED ring (the official cache format) stores the row as FP8
// e4m3 with a UE8M0 scale per 32 values (kernels/cache_rows.cuh), one thread per group.
#pragma once

#include "cache_rows.cuh"
#include "kernel_abi.cuh"

namespace dsv41k {
namespace window_store_detail {
constexpr int kThreads = 256;
}

namespace entry {

template <long long window, long long head_dim, int dtype_kv, int dtype_ring>
__device__ __forceinline__ void window_store(Rows rows, Statics statics, Scratch kv, State ring, Int ring_rows,
                                             Errors errors) {
  static_assert(window >= 1 && window <= (1 << 24), "window out of range");
  static_assert(head_dim >= 1 && head_dim <= (1 << 20), "head_dim out of range");
  static_assert(dtype_kv == DT_F32 || dtype_kv == DT_BF16, "kv is an activation (BF16, or F32 in check mode)");
  static_assert(dtype_ring == DT_F32 || dtype_ring == DT_BF16 || dtype_ring == DT_PACKED,
                "ring is an activation (BF16, or F32 in check mode) or packed (official cache format)");
  static_assert(dtype_ring != DT_PACKED || head_dim % 32 == 0, "a packed ring row is whole groups of 32");
  constexpr int T = window_store_detail::kThreads;
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int tid = threadIdx.x;
  const int slot = row_slot(statics, r);
  if (slot < 0) return;  // inactive: nothing is stored
  const long long position = row_position(statics, r);
  if (position < 0 || !slot_in(slot, ring) || window > ring_rows) {
    if (tid == 0) report_error(errors, window > ring_rows ? ERR_CAPACITY : ERR_STATICS);
    return;
  }
  // The ring holds ring_rows >= window rows (more when drafting: docs/serving.md "Drafting"), position q
  // in row q mod ring_rows, so a rewind by length finds its window intact.
  const long long entry = position % ring_rows;
  // Superseded by a later row of the same slot landing on the same entry?
  int later = 0;
  for (long long q = r + 1 + tid; q < rows; q += T) {
    const long long pq = row_position(statics, q);
    later |= row_slot(statics, q) == slot && pq >= 0 && pq % ring_rows == entry;
  }
  if (__syncthreads_or(later)) return;
  char* base = slot_base(ring, slot);
  if constexpr (dtype_ring == DT_PACKED) {
    cache_rows::pack_row<CACHE_WINDOW>([&](long long d) { return load<dtype_kv>(kv, r * head_dim + d); }, head_dim,
                                       base + entry * cache_rows::row_bytes<CACHE_WINDOW>(head_dim));
  } else {
    for (long long d = tid; d < head_dim; d += T)
      store<dtype_ring>(base, entry * head_dim + d, load<dtype_kv>(kv, r * head_dim + d));
  }
}

}  // namespace entry
}  // namespace dsv41k
