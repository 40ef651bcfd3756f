// tests/reference/reference_moe.h — the routed + shared expert FFN of docs/model.md §7.
#pragma once

#include "common/model_config.h"
#include "tests/reference/reference_math.h"
#include "tests/reference/reference_weights.h"

namespace dsv41::reference {

// The experts a row routes to (ascending selection order: best first) and their weights.
struct Routing {
  std::vector<int64_t> experts;
  Vec weights;
};

Routing route(const ModelConfig& config, const LayerWeights& w, const Vec& x);
// y = b(Σ routed + shared), width hidden_size.
Vec run_moe(const ModelConfig& config, const LayerWeights& w, const Vec& x);

}  // namespace dsv41::reference
