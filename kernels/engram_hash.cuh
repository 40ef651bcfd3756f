// kernels/engram_hash.cuh — Engram's row ids of every Engram layer (docs/ops.md "engram_hash"):
// the rolling n-gram hash of docs/model.md §8 over the compressed ids of a row's last max_n tokens.
//
// Launch (common/kernel_launch_engram.cpp): block 32 threads, grid (R): one block per row; thread
// k < layers·(max_n − 1)·heads computes output column k. A token before the step comes from the
// slot's lookback ring (entry q mod window), one in the step from the row q − p before it. A token
// outside the map (or an empty map) reports ERR_TOKEN, inconsistent statics or a slot outside the
// lookback ERR_STATICS; the row's ids are then 0. Inactive rows get 0.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace engram_hash_detail {
constexpr int kThreads = 32;
}

namespace entry {

template <long long layers, long long max_n, long long heads, long long window>
__device__ __forceinline__ void engram_hash(Rows rows, Statics statics, State lookback, IntList token_map,
                                            Int token_map_count, Int pad_token, IntList multipliers, IntList primes,
                                            IntList offsets, Scratch out, Errors errors) {
  static_assert(layers >= 1 && layers <= 8, "layers out of range");
  static_assert(max_n >= 2 && max_n <= 8, "max_n out of range");
  static_assert(heads >= 1 && heads <= 64, "heads out of range");
  static_assert(window >= max_n - 1, "the lookback ring must hold max_n - 1 tokens");
  constexpr long long columns = (max_n - 1) * heads, width = layers * columns;
  static_assert(width <= 32 * 64, "too many columns");
  const long long r = blockIdx.x;
  if (r >= rows) return;
  int* dst = static_cast<int*>(out) + r * width;
  const int slot = row_slot(statics, r);
  bool ok = slot >= 0;
  // Compressed ids of the row's tokens, newest first (the pad's once a position is before the start).
  long long ids[max_n];
  if (ok) {
    const long long p = row_position(statics, r), first = row_first(statics, r);
    const long long p0 = first >= 0 && first <= r ? row_position(statics, first) : -1;
    if (p < 0 || p0 < 0 || p0 > p || !slot_in(slot, lookback)) {
      ok = false;
      if (threadIdx.x == 0) report_error(errors, ERR_STATICS);
    } else if (pad_token < 0 || pad_token >= token_map_count) {
      ok = false;
      if (threadIdx.x == 0) report_error(errors, ERR_TOKEN);
    }
    const int* ring = ok ? reinterpret_cast<const int*>(slot_base(lookback, slot)) : nullptr;
    bool blocked = false;
    for (long long s = 0; s < max_n && ok; ++s) {
      const long long q = p - s;
      blocked = blocked || q < 0;
      long long token = -1;
      if (!blocked) token = q >= p0 ? row_token(statics, r - s) : ring[q % window];
      if (!blocked && (token < 0 || token >= token_map_count)) {
        ok = false;
        if (threadIdx.x == 0) report_error(errors, ERR_TOKEN);
        break;
      }
      ids[s] = token_map[blocked ? pad_token : token];
    }
  }
  for (long long k = threadIdx.x; k < width; k += engram_hash_detail::kThreads) {
    if (!ok) {
      dst[k] = 0;
      continue;
    }
    const long long layer = k / columns, col = k % columns, s = col / heads + 1;
    // Unsigned products wrap as NumPy's int64 does.
    unsigned long long x = 0;
    for (long long j = 0; j <= s; ++j)
      x ^= static_cast<unsigned long long>(ids[j]) * static_cast<unsigned long long>(multipliers[layer * max_n + j]);
    const long long prime = primes[k], rem = static_cast<long long>(x) % prime;
    dst[k] = static_cast<int>((rem < 0 ? rem + prime : rem) + offsets[k]);
  }
}

}  // namespace entry
}  // namespace dsv41k
