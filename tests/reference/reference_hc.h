// tests/reference/reference_hc.h — the hyper-connection mixes, collapse and post of docs/model.md §5.
#pragma once

#include "common/model_config.h"
#include "tests/reference/reference_math.h"
#include "tests/reference/reference_weights.h"

namespace dsv41::reference {

// Streams are one flat vector of S·D values, stream s at [s·D, (s+1)·D).
struct HcMix {
  Vec pre, post;  // S each
  Vec comb;       // S·S, comb[i·S + j]
};

HcMix hc_mix(const ModelConfig& config, const HcWeights& w, const Vec& streams);
// b(Σ_s weights[s]·X[s]).
Vec hc_collapse(const ModelConfig& config, const Vec& streams, const Vec& weights);
// X'[j] = b(post[j]·a + Σ_i comb[i][j]·X[i]).
Vec hc_post(const ModelConfig& config, const Vec& sublayer_out, const Vec& streams, const HcMix& mix);

}  // namespace dsv41::reference
