// runtime/cpu/rope_math.h — RoPE of docs/model.md §3: frequencies (with YaRN) and the rotation of one vector.
#pragma once

#include <cstdint>
#include <vector>

namespace dsv41::cpu {

struct RopeParams {
  double theta = 10000.0;     // the base B
  double yarn_factor = 1.0;   // φ; YaRN applies only when > 1 and yarn_original > 0
  int64_t yarn_original = 0;  // Lo, rope_scaling.original_max_position_embeddings
  double beta_fast = 32.0, beta_slow = 1.0;
};

bool yarn_enabled(const RopeParams& params);

// freq_i for i < rope_dim / 2, in fp64: theta^(−2i/rope_dim), blended towards freq_i/φ by the
// YaRN ramp when YaRN is enabled.
std::vector<double> rope_frequencies(int64_t rope_dim, const RopeParams& params);

// The YaRN ramp bounds (lo, hi) after the hi == lo nudge; for tests and docs.
struct YarnRamp {
  double lo = 0, hi = 0;
};
YarnRamp yarn_ramp(int64_t rope_dim, const RopeParams& params);

// Rotates the last 2·freqs.size() dims of v[0 .. width) at `position` in GPT-J interleaved pairs:
// θ = position·freq_i formed in fp64 (−θ when inverse), cos/sin rounded to fp32, products in fp32.
void rope_rotate(float* v, int64_t width, const std::vector<double>& freqs, int64_t position, bool inverse);

}  // namespace dsv41::cpu
