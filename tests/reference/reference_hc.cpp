// tests/reference/reference_hc.cpp — mHC: sigmoid pre/post, Sinkhorn comb ending on columns, collapse and post.
#include "tests/reference/reference_hc.h"

#include <algorithm>
#include <cmath>

namespace dsv41::reference {
namespace {

// docs/model.md §5, the comb: C = scale[2]·m + base, a softmax along each row plus eps, then the
// columns divided by their sum + eps, then iters-1 rounds of rows, then columns, the same way.
// Written apart from runtime/cpu/ops_hc.cpp (a 2-D array, one normalise() for both axes) and run in
// double in check mode, where the reference is the accuracy oracle; in bf16 mode in float, whose
// operations come in the backend's order, so world 1 stays bit-identical to the reference
// (tests/model/reference_match_test.cpp) and that test keeps pinning every bf16 rounding point.
template <class T>
Vec sinkhorn_comb(const HcWeights& w, const Vec& m, int64_t s_count, int64_t iters, double eps_in) {
  const auto n = static_cast<size_t>(s_count);
  const auto eps = static_cast<T>(eps_in);
  std::vector<std::vector<T>> comb(n, std::vector<T>(n));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      comb[i][j] = static_cast<T>(w.scale[2]) * static_cast<T>(m[2 * n + i * n + j]) + w.base[2 * n + i * n + j];
  for (std::vector<T>& row : comb) {
    const T top = *std::max_element(row.begin(), row.end());
    T total = 0;
    for (T& v : row) total += (v = std::exp(v - top));
    for (T& v : row) v = v / total + eps;
  }
  // Divides each row (by_rows) or each column by its sum + eps.
  auto normalise = [&](bool by_rows) {
    for (size_t a = 0; a < n; ++a) {
      T total = 0;
      for (size_t b = 0; b < n; ++b) total += by_rows ? comb[a][b] : comb[b][a];
      for (size_t b = 0; b < n; ++b) (by_rows ? comb[a][b] : comb[b][a]) /= total + eps;
    }
  };
  normalise(false);
  for (int64_t it = 1; it < iters; ++it) {
    normalise(true);
    normalise(false);
  }
  Vec out(n * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) out[i * n + j] = static_cast<float>(comb[i][j]);
  return out;
}

}  // namespace

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
  for (int64_t s = 0; s < s_count; ++s) {
    mix.pre[s] = sigmoid(w.scale[0] * m[s] + w.base[s]) + eps;
    mix.post[s] = 2.0f * sigmoid(w.scale[1] * m[s_count + s] + w.base[s_count + s]);
  }
  mix.comb = current_rounding_mode() == Rounding::None
                 ? sinkhorn_comb<double>(w, m, s_count, c.hc_sinkhorn_iters, c.hc_eps)
                 : sinkhorn_comb<float>(w, m, s_count, c.hc_sinkhorn_iters, c.hc_eps);
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
