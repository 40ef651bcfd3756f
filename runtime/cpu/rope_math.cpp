// runtime/cpu/rope_math.cpp — RoPE frequencies (YaRN ramp in fp64) and the interleaved-pair rotation.
#include "runtime/cpu/rope_math.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/status.h"

namespace dsv41::cpu {

bool yarn_enabled(const RopeParams& params) { return params.yarn_factor > 1.0 && params.yarn_original > 0; }

YarnRamp yarn_ramp(int64_t rope_dim, const RopeParams& params) {
  const double dim = static_cast<double>(rope_dim), base = params.theta;
  const double original = static_cast<double>(params.yarn_original);
  // The pair index whose wavelength makes `turns` full turns over the original context.
  auto corr = [&](double turns) { return dim * std::log(original / (2.0 * std::numbers::pi * turns)) / (2.0 * std::log(base)); };
  YarnRamp ramp;
  ramp.lo = std::max(std::floor(corr(params.beta_fast)), 0.0);
  ramp.hi = std::min(std::ceil(corr(params.beta_slow)), dim - 1.0);
  if (ramp.hi == ramp.lo) ramp.hi = ramp.lo + 0.001;
  return ramp;
}

std::vector<double> rope_frequencies(int64_t rope_dim, const RopeParams& params) {
  std::vector<double> freqs(static_cast<size_t>(rope_dim / 2));
  for (int64_t i = 0; i < rope_dim / 2; ++i)
    freqs[i] = std::pow(params.theta, -2.0 * static_cast<double>(i) / static_cast<double>(rope_dim));
  if (!yarn_enabled(params)) return freqs;
  const YarnRamp ramp = yarn_ramp(rope_dim, params);
  for (size_t i = 0; i < freqs.size(); ++i) {
    const double t = std::clamp((static_cast<double>(i) - ramp.lo) / (ramp.hi - ramp.lo), 0.0, 1.0);
    freqs[i] = freqs[i] * (1.0 - t) + freqs[i] / params.yarn_factor * t;
  }
  return freqs;
}

void rope_rotate(float* v, int64_t width, const std::vector<double>& freqs, int64_t position, bool inverse) {
  const int64_t offset = width - 2 * static_cast<int64_t>(freqs.size());
  DSV41_CHECK(offset >= 0);
  for (size_t i = 0; i < freqs.size(); ++i) {
    const double angle = (inverse ? -1.0 : 1.0) * static_cast<double>(position) * freqs[i];
    const auto cs = static_cast<float>(std::cos(angle));
    const auto sn = static_cast<float>(std::sin(angle));
    float* pair = v + offset + 2 * static_cast<int64_t>(i);
    const float e = pair[0], f = pair[1];
    pair[0] = e * cs - f * sn;
    pair[1] = f * cs + e * sn;
  }
}

}  // namespace dsv41::cpu
