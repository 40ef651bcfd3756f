// kernels/sparse_attention_rows.cuh — where a row's key slots are, for both paths of sparse_attention
// (kernels/sparse_attention.cuh, kernels/sparse_attention_prefill.cuh): the statics' checks and the
// row, and kind, of key slot j (docs/ops.md "sparse_attention").
#pragma once

#include "cache_rows.cuh"
#include "kernel_abi.cuh"

namespace dsv41k {
namespace sparse_attention_rows {
#ifndef DSV41_CONTRACT_SCAN
enum : int { KEY_NONE = -1, KEY_KV = 0, KEY_RING = 1, KEY_CACHE = 2 };
// What row_keys found: a row to attend, an inactive row (zeros), or an error code to report (zeros).
enum : int { ROW_ATTEND = 0, ROW_INACTIVE = -1 };

// One row's keys: window slots j < Wn are positions t0 + j (those below nw exist), this step's rows
// (t ≥ p0) in kv from row f, older ones in the slot's ring; slots Wn + k are the listed cache entries.
struct RowKeys {
  long long f, p0, nw, t0;
  const char* kv;
  const char* ring;
  const char* cache;
  long long ring_rows, cache_rows;
};

// Fills `k` for row r; returns ROW_ATTEND, ROW_INACTIVE, or the error code to report (ERR_STATICS for
// statics that do not describe a run of positions in one slot the states hold, ERR_CAPACITY for a
// ring shorter than the window).
template <int Wn>
__device__ __forceinline__ int row_keys(Statics statics, long long r, const void* kv, State ring, long long ring_rows,
                                        State cache, long long cache_rows, RowKeys& k) {
  const int slot = row_slot(statics, r);
  if (slot < 0) return ROW_INACTIVE;
  const long long p = row_position(statics, r), f = row_first(statics, r);
  const bool consistent = p >= 0 && f >= 0 && f <= r && row_slot(statics, f) == slot &&
                          p - row_position(statics, f) == r - f && slot_in(slot, ring) && slot_in(slot, cache);
  if (!consistent) return ERR_STATICS;
  if (ring_rows < Wn) return ERR_CAPACITY;
  k.f = f;
  k.p0 = row_position(statics, f);
  k.nw = p + 1 < Wn ? p + 1 : Wn;
  k.t0 = p - k.nw + 1;
  k.kv = static_cast<const char*>(kv);
  k.ring = slot_base(ring, slot);
  k.cache = cache.base ? slot_base(cache, slot) : nullptr;
  k.ring_rows = ring_rows;
  k.cache_rows = cache_rows;
  return ROW_ATTEND;
}

// Key slot j (< Wn + K) of row r: its kind (KEY_NONE for a window position before 0 or an unlisted
// entry) and row address. A listed entry outside the cache is KEY_NONE and reports ERR_SELECTION
// when `report`. Row bytes: kv's, the ring's and the cache's (packed rows differ from act rows).
template <int Wn, int K, long long kKvBytes, long long kRingBytes, long long kCacheBytes>
__device__ __forceinline__ int key_at(const RowKeys& k, long long r, int j, Scratch selected, Errors errors,
                                      bool report, const char*& row) {
  row = nullptr;
  if (j < Wn) {
    if (j >= k.nw) return KEY_NONE;
    const long long t = k.t0 + j;
    if (t >= k.p0) {
      row = k.kv + (k.f + (t - k.p0)) * kKvBytes;
      return KEY_KV;
    }
    row = k.ring + (t % k.ring_rows) * kRingBytes;
    return KEY_RING;
  }
  if constexpr (K > 0) {
    const int e = static_cast<const int*>(selected)[r * K + (j - Wn)];
    if (e == -1) return KEY_NONE;
    if (e < 0 || e >= k.cache_rows) {
      if (report) report_error(errors, ERR_SELECTION);
      return KEY_NONE;
    }
    row = k.cache + e * kCacheBytes;
    return KEY_CACHE;
  }
  return KEY_NONE;
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace sparse_attention_rows
}  // namespace dsv41k
