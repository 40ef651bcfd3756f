// tests/reference/reference_moe.cpp — sqrt-softplus router with selection bias, clamped SwiGLU experts weighted before w2.
#include "tests/reference/reference_moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dsv41::reference {
namespace {

// b(weight·silu(min(g, L))·clamp(u, −L, L))·w2ᵀ, accumulated into y.
void add_expert(const ModelConfig& c, const ExpertWeights& e, const Vec& x, float weight, Vec& y) {
  const Vec g = matvec(e.w1, x), u = matvec(e.w3, x);
  const auto limit = static_cast<float>(c.swiglu_limit);
  Vec act(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    float gi = g[i], ui = u[i];
    if (limit > 0.0f) {
      gi = std::min(gi, limit);
      ui = std::clamp(ui, -limit, limit);
    }
    act[i] = bf(weight * silu(gi) * ui);
  }
  const Vec down = matvec(e.w2, act);
  for (size_t d = 0; d < y.size(); ++d) y[d] += down[d];
}

}  // namespace

Routing route(const ModelConfig& c, const LayerWeights& w, const Vec& x) {
  const Vec logits = matvec(w.gate, x);
  Vec score(logits.size()), biased(logits.size());
  for (size_t e = 0; e < logits.size(); ++e) {
    score[e] = std::sqrt(softplus(logits[e]));
    biased[e] = score[e] + w.gate_bias[e];
  }
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  // Higher biased score first, ties to the lower expert id.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return biased[a] > biased[b]; });
  Routing r;
  r.experts.assign(order.begin(), order.begin() + c.num_experts_per_tok);
  float total = 0.0f;
  for (int64_t e : r.experts) {
    r.weights.push_back(score[e]);
    total += score[e];
  }
  for (float& v : r.weights) {
    // The official gate renormalises only when more than one expert is chosen.
    if (c.norm_topk_prob && c.num_experts_per_tok > 1) v /= total + 1e-20f;
    v *= static_cast<float>(c.routed_scaling_factor);
  }
  return r;
}

Vec run_moe(const ModelConfig& c, const LayerWeights& w, const Vec& x) {
  const Routing r = route(c, w, x);
  Vec y(static_cast<size_t>(c.hidden_size), 0.0f);
  for (size_t k = 0; k < r.experts.size(); ++k) add_expert(c, w.experts[r.experts[k]], x, r.weights[k], y);
  if (w.has_shared) add_expert(c, w.shared, x, 1.0f, y);
  bf_inplace(y);
  return y;
}

}  // namespace dsv41::reference
