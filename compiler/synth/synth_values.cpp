// compiler/synth/synth_values.cpp — per-tensor value scales for synthetic packs and the counter-based generator.
#include "compiler/synth/synth_values.h"

#include <cmath>
#include <string_view>

#include "common/hashing.h"

namespace dsv41 {
namespace {

// Why these scales. Values are uniform with the given mean and standard deviation (uniform is bounded,
// so no outlier can dominate a quantization tile, and it is cheap to draw). The tiny model must run
// 40+ layers deep without overflow or collapse:
// - Linear maps use std 1/sqrt(in), so an RMS-normalised input gives O(1) outputs. Maps that write back
//   into the residual (attn.wo_b, expert and shared-expert w2) use 0.5/sqrt(in): the residual then grows
//   slowly with depth instead of doubling.
// - RMSNorm gains (every *norm.weight) and the Engram q/k gains sit near 1 with a little spread, so a
//   wrong gain index still shows up in a comparison.
// - Embedding rows (token and Engram tables, the Markov embedding) have std 1, as a norm would give.
// - hc_*_fn uses std 1/sqrt(hc_dim): the mix logits m are O(1) after the RMS, so sigmoid, softmax and
//   Sinkhorn see varied but unsaturated inputs. hc_*_base is ~0 except a +1 diagonal on the 4x4 comb
//   part: the comb matrix stays near identity, so the four streams stay distinct (a uniform comb would
//   average them and hide stream and transposition bugs). hc_*_scale is ~0.5 with distinct entries.
// - attn_sink has std 0.5; the router bias (ffn.gate.bias) std 0.01 so it nudges, not decides, routing.
// - The DSpark Markov output head and confidence head are small (0.1/sqrt(in)): they refine logits.
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view last_component(std::string_view name) {
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

// splitmix64's output function: a bijective mix with good avalanche, so consecutive counters give
// independent-looking values and any element can be drawn without the ones before it.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

SynthValues::SynthValues(const ExpectedTensor& t, uint64_t seed) : key_(hash_text(t.name) ^ seed) {
  const std::string_view name = t.name, last = last_component(name);
  const double in = static_cast<double>(t.shape.empty() ? 1 : t.shape.back());
  double center = 0.0, std_dev = 1.0 / std::sqrt(in);
  if (ends_with(name, "norm.weight") || ends_with(name, "engram.q_weight") || ends_with(name, "engram.k_weight")) {
    center = 1.0, std_dev = 0.06;
  } else if (name == "embed.weight" || ends_with(name, "engram.embed.weight") ||
             ends_with(name, "markov_head.embed.weight")) {
    std_dev = 1.0;
  } else if (last.starts_with("hc_") && ends_with(last, "_base")) {
    std_dev = 0.1;
    // [pre (hc) | post (hc) | comb (hc x hc)]: solve mix = hc^2 + 2 hc for hc.
    const int64_t mix = t.shape[0];
    comb_side_ = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(mix + 1)) - 1.0));
    comb_first_ = 2 * comb_side_;
  } else if (last.starts_with("hc_") && ends_with(last, "_scale")) {
    center = 0.5, std_dev = 0.05;
  } else if (last == "attn_sink") {
    std_dev = 0.5;
  } else if (ends_with(name, "ffn.gate.bias")) {
    std_dev = 0.01;
  } else if (ends_with(name, "markov_head.head.weight") || ends_with(name, "confidence_head.proj.weight")) {
    std_dev = 0.1 / std::sqrt(in);
  } else if (ends_with(name, "attn.wo_b.weight") || ends_with(name, ".w2.weight")) {
    std_dev = 0.5 / std::sqrt(in);
  }
  center_ = static_cast<float>(center);
  std_ = static_cast<float>(std_dev);
}

void SynthValues::fill(int64_t first, int64_t count, float* out) const {
  const float half_width = std_ * 1.7320508f;  // uniform on [-a, a] has std a/sqrt(3)
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t index = static_cast<uint64_t>(first + i);
    const uint64_t bits = mix64(key_ + (index + 1) * 0x9E3779B97F4A7C15ull);
    const float unit = static_cast<float>(bits >> 40) * 0x1p-24f * 2.0f - 1.0f;  // [-1, 1)
    float center = center_;
    if (comb_first_ >= 0 && static_cast<int64_t>(index) >= comb_first_ &&
        (static_cast<int64_t>(index) - comb_first_) % (comb_side_ + 1) == 0)
      center += 1.0f;  // the comb matrix diagonal
    out[i] = center + half_width * unit;
  }
}

}  // namespace dsv41
