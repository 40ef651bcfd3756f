// tests/reference/reference_hc.cpp — mHC: sigmoid pre/post, Sinkhorn comb ending on columns, collapse and post.
#include "tests/reference/reference_hc.h"

#include <algorithm>
#include <cmath>

namespace dsv41::reference {

HcMix hc_mix(const ModelConfig& c, const HcWeights& w, const Vec& x) {
  const int64_t s_count = c.hc_mult;
  const auto eps = static_cast<float>(c.hc_eps);
  float sum = 0.0f;
  for (float v : x) sum += v * v;
  const float rho = 1.0f / std::sqrt(sum / static_cast<float>(x.size()) + static_cast<float>(c.rms_norm_eps));
  Vec m = matvec(w.fn, x);
  for (float& v : m) v *= rho;
  HcMix mix;
  mix.pre.resize(s_count);
  mix.post.resize(s_count);
  mix.comb.resize(s_count * s_count);
  for (int64_t s = 0; s < s_count; ++s) {
    mix.pre[s] = sigmoid(w.scale[0] * m[s] + w.base[s]) + eps;
    mix.post[s] = 2.0f * sigmoid(w.scale[1] * m[s_count + s] + w.base[s_count + s]);
  }
  Vec& cm = mix.comb;
  for (int64_t k = 0; k < s_count * s_count; ++k) cm[k] = w.scale[2] * m[2 * s_count + k] + w.base[2 * s_count + k];
  auto normalise_rows = [&] {
    for (int64_t i = 0; i < s_count; ++i) {
      float total = 0.0f;
      for (int64_t j = 0; j < s_count; ++j) total += cm[i * s_count + j];
      for (int64_t j = 0; j < s_count; ++j) cm[i * s_count + j] /= total + eps;
    }
  };
  auto normalise_columns = [&] {
    for (int64_t j = 0; j < s_count; ++j) {
      float total = 0.0f;
      for (int64_t i = 0; i < s_count; ++i) total += cm[i * s_count + j];
      for (int64_t i = 0; i < s_count; ++i) cm[i * s_count + j] /= total + eps;
    }
  };
  for (int64_t i = 0; i < s_count; ++i) {  // row softmax, then + eps
    float top = cm[i * s_count];
    for (int64_t j = 1; j < s_count; ++j) top = std::max(top, cm[i * s_count + j]);
    float total = 0.0f;
    for (int64_t j = 0; j < s_count; ++j) total += (cm[i * s_count + j] = std::exp(cm[i * s_count + j] - top));
    for (int64_t j = 0; j < s_count; ++j) cm[i * s_count + j] = cm[i * s_count + j] / total + eps;
  }
  normalise_columns();
  for (int64_t it = 1; it < c.hc_sinkhorn_iters; ++it) {
    normalise_rows();
    normalise_columns();
  }
  return mix;
}

Vec hc_collapse(const ModelConfig& c, const Vec& x, const Vec& weights) {
  const int64_t d_count = c.hidden_size;
  Vec h(static_cast<size_t>(d_count), 0.0f);
  for (int64_t s = 0; s < c.hc_mult; ++s)
    for (int64_t d = 0; d < d_count; ++d) h[d] += weights[s] * x[s * d_count + d];
  bf_inplace(h);
  return h;
}

Vec hc_post(const ModelConfig& c, const Vec& a, const Vec& x, const HcMix& mix) {
  const int64_t s_count = c.hc_mult, d_count = c.hidden_size;
  Vec y(x.size());
  for (int64_t j = 0; j < s_count; ++j)
    for (int64_t d = 0; d < d_count; ++d) {
      float v = mix.post[j] * a[d];
      for (int64_t i = 0; i < s_count; ++i) v += mix.comb[i * s_count + j] * x[i * d_count + d];
      y[j * d_count + d] = bf(v);
    }
  return y;
}

}  // namespace dsv41::reference
