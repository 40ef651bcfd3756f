// tests/reference/reference_engram.h — Engram written from the architecture notes (§3.3) alone: prime layout, hash, rows, gate.
#pragma once

#include <cstdint>
#include <vector>

#include "common/model_config.h"
#include "common/status.h"
#include "tests/reference/reference_math.h"
#include "tests/reference/reference_weights.h"

namespace dsv41::reference {

// One Engram layer's hash: per column (order n = 2..max_n, head h at (n−2)·heads + h) a prime and
// its offset in the table; per lookback distance a multiplier.
struct EngramLayout {
  int64_t layer = 0;
  std::vector<int64_t> primes, offsets, multipliers;
};

// The layouts of every Engram layer in engram_layer_ids order. Primes are searched here; the
// multipliers are the NumPy draws, which only common/engram_multipliers.cpp lists (data, not code).
Result<std::vector<EngramLayout>> engram_layouts(const ModelConfig& config);

// X ← Engram(X) at position t (docs/model.md §8): `compressed` holds the compressed ids of positions
// 0..t (the token map applied), `pad` the pad token's compressed id. Rounds as bf() does.
Status engram_apply(const ModelConfig& config, const EngramLayout& layout, const EngramWeights& weights,
                    const std::vector<int64_t>& compressed, int64_t t, int64_t pad, Vec& streams);

}  // namespace dsv41::reference
