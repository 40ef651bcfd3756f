// tests/reference/reference_attention.h — one layer's attention for one row (docs/model.md §6).
#pragma once

#include <cstdint>
#include <vector>

#include "common/model_config.h"
#include "tests/reference/reference_math.h"
#include "tests/reference/reference_state.h"
#include "tests/reference/reference_weights.h"
#include "tests/reference/reference_wiring.h"

namespace dsv41::reference {

// Everything a layer's attention reads for one row.
struct AttentionContext {
  const ModelConfig& config;
  const ModelWeights& weights;
  const Rope& rope;  // the layer's rope (by its ratio)
  const LayerWiring& wiring;  // the layer's (derive_wiring)
  int64_t layer;
  int64_t position;
  SequenceState& sequence;
  RowScratch& row;
  ReferenceStats* stats;  // may be null
};

// §6.2: runs the compressor of a kv source on its input x, writing any entry whose group closes.
void run_compressor(const AttentionContext& ctx, const Vec& x);
// §6.3: the indexer of an index source; returns the selected entries, ascending.
std::vector<int64_t> run_indexer(const AttentionContext& ctx, const Vec& x, const Vec& qr);
// §6.1-6.5: the attention sublayer output (width hidden_size, bf16 values).
Vec run_attention(const AttentionContext& ctx, const Vec& x);

}  // namespace dsv41::reference
