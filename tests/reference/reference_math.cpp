// tests/reference/reference_math.cpp — bf16 rounding, fp32 products, RMSNorm and RoPE exactly as docs/model.md §2-3 state.
#include "tests/reference/reference_math.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/numeric_formats.h"
#include "common/status.h"

namespace dsv41::reference {

namespace {
thread_local Rounding current_rounding = Rounding::BF16;
}  // namespace

RoundingScope::RoundingScope(Rounding rounding) : saved_(current_rounding) { current_rounding = rounding; }
RoundingScope::~RoundingScope() { current_rounding = saved_; }

Rounding current_rounding_mode() { return current_rounding; }

float bf(float value) { return current_rounding == Rounding::BF16 ? bf16_round(value) : value; }

void bf_inplace(Vec& values) {
  for (float& v : values) v = bf(v);
}

float dot(const float* a, const float* b, int64_t n) {
  // Eight fp32 partial sums: the order of an fp32 sum is free (docs/model.md §2), and this vectorises.
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

Vec matvec(const Matrix& a, const float* x, int64_t row0, int64_t rows) {
  if (rows < 0) rows = a.rows - row0;
  DSV41_CHECK(row0 >= 0 && row0 + rows <= a.rows);
  Vec y(static_cast<size_t>(rows));
  for (int64_t o = 0; o < rows; ++o) y[o] = dot(a.row(row0 + o), x, a.cols);
  return y;
}

Vec rms_norm(const float* v, const Vec& weight, double eps) {
  const auto n = static_cast<int64_t>(weight.size());
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += v[i] * v[i];
  const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + static_cast<float>(eps));
  Vec out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = bf(v[i] * inv * weight[i]);
  return out;
}

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }
float silu(float v) { return v * sigmoid(v); }
float softplus(float v) { return std::max(v, 0.0f) + std::log1p(std::exp(-std::fabs(v))); }

Rope::Rope(const ModelConfig& c, int ratio) {
  const int64_t rot = c.qk_rope_head_dim;
  const double base = ratio == 0 ? c.rope_theta : c.compress_rope_theta;
  freqs_.resize(static_cast<size_t>(rot / 2));
  for (int64_t i = 0; i < rot / 2; ++i) freqs_[i] = std::pow(base, -2.0 * static_cast<double>(i) / rot);
  if (ratio == 0 || c.rope_scaling.type != "yarn") return;
  const double original = static_cast<double>(c.rope_scaling.original_max_position_embeddings);
  auto corr = [&](double turns) {
    return static_cast<double>(rot) * std::log(original / (2.0 * std::numbers::pi * turns)) / (2.0 * std::log(base));
  };
  lo_ = std::max(std::floor(corr(c.rope_scaling.beta_fast)), 0.0);
  hi_ = std::min(std::ceil(corr(c.rope_scaling.beta_slow)), static_cast<double>(rot - 1));
  const double hi = hi_ == lo_ ? lo_ + 0.001 : hi_;
  for (size_t i = 0; i < freqs_.size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - lo_) / (hi - lo_), 0.0, 1.0);
    freqs_[i] = freqs_[i] * (1.0 - ramp) + freqs_[i] / c.rope_scaling.factor * ramp;
  }
}

void Rope::apply(float* v, int64_t width, int64_t position, bool inverse) const {
  const int64_t offset = width - 2 * static_cast<int64_t>(freqs_.size());
  DSV41_CHECK(offset >= 0);
  for (size_t i = 0; i < freqs_.size(); ++i) {
    const double angle = static_cast<double>(position) * freqs_[i];
    const float cs = static_cast<float>(std::cos(angle));
    const float sn = inverse ? -static_cast<float>(std::sin(angle)) : static_cast<float>(std::sin(angle));
    float& e = v[offset + 2 * i];
    float& o = v[offset + 2 * i + 1];
    const float e0 = e, o0 = o;
    e = e0 * cs - o0 * sn;
    o = o0 * cs + e0 * sn;
  }
}

}  // namespace dsv41::reference
