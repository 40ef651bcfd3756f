// tests/reference/reference_hc_test.cpp — the reference's Sinkhorn comb: a uniform comb stays uniform, the
// double (check mode) and float (bf16 mode) forms agree, and the result is doubly stochastic.
#include "tests/reference/reference_hc.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace dsv41::reference {
namespace {

struct Mixes {
  HcMix exact, fp32;  // Rounding::None (double Sinkhorn), Rounding::BF16 (float)
};

Mixes both_forms(const ModelConfig& c, const HcWeights& w, const Vec& x) {
  Mixes m;
  {
    const RoundingScope none(Rounding::None);
    m.exact = hc_mix(c, w, x);
  }
  {
    const RoundingScope bf16(Rounding::BF16);
    m.fp32 = hc_mix(c, w, x);
  }
  return m;
}

HcWeights weights_of(const ModelConfig& c, float spread, uint32_t seed) {
  const int64_t s = c.hc_mult, mix = (2 + s) * s;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  HcWeights w;
  w.fn.rows = mix;
  w.fn.cols = s * c.hidden_size;
  w.fn.v.resize(static_cast<size_t>(w.fn.rows * w.fn.cols));
  for (float& v : w.fn.v) v = normal(rng);
  w.base.resize(static_cast<size_t>(mix));
  for (float& v : w.base) v = normal(rng);
  w.scale = {1.0f, 1.0f, 1.0f};
  return w;
}

TEST(ReferenceSinkhorn, AUniformCombStaysUniform) {
  const ModelConfig c = test::fixture_config("dsv41-tiny");
  HcWeights w = weights_of(c, 0.0f, 1);  // fn and base zero: every comb logit equal
  const Vec x(static_cast<size_t>(c.hc_mult * c.hidden_size), 0.5f);
  const Mixes m = both_forms(c, w, x);
  const float uniform = 1.0f / static_cast<float>(c.hc_mult);
  for (size_t k = 0; k < m.exact.comb.size(); ++k) {
    EXPECT_NEAR(m.exact.comb[k], uniform, 1e-6) << "entry " << k;
    EXPECT_NEAR(m.fp32.comb[k], uniform, 1e-6) << "entry " << k;
  }
}

TEST(ReferenceSinkhorn, DoubleAndFloatFormsAgreeAndAreDoublyStochastic) {
  const ModelConfig c = test::fixture_config("dsv41-tiny");
  const int64_t s = c.hc_mult;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (uint32_t seed : {11u, 12u, 13u}) {
    const HcWeights w = weights_of(c, 0.05f, seed);
    Vec x(static_cast<size_t>(s * c.hidden_size));
    for (float& v : x) v = normal(rng);
    const Mixes m = both_forms(c, w, x);
    for (int64_t i = 0; i < s; ++i) {
      double row = 0.0, column = 0.0;
      for (int64_t j = 0; j < s; ++j) {
        EXPECT_NEAR(m.fp32.comb[i * s + j], m.exact.comb[i * s + j], 1e-5)
            << "seed " << seed << " (" << i << ", " << j << ")";
        row += m.exact.comb[i * s + j];
        column += m.exact.comb[j * s + i];
      }
      EXPECT_NEAR(column, 1.0, 1e-5) << "seed " << seed << " column " << i;  // the last pass normalises columns
      // Rows only approach 1 over the finite passes (measured worst |row - 1|: 0.0086 at these seeds).
      EXPECT_NEAR(row, 1.0, 2e-2) << "seed " << seed << " row " << i;
    }
  }
}

}  // namespace
}  // namespace dsv41::reference
