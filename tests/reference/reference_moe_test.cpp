// tests/reference/reference_moe_test.cpp — reference router weights: renormalised for several experts, raw for one.
#include "tests/reference/reference_moe.h"

#include <cmath>

#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace dsv41::reference {
namespace {

// Three experts of one-value rows: logits 2, −1, 0.5 for x = 1; routed_scaling_factor 1.5.
LayerWeights three_experts() {
  LayerWeights w;
  w.gate = Matrix{3, 1, {2.0f, -1.0f, 0.5f}};
  w.gate_bias = {0.0f, 0.0f, 0.0f};
  return w;
}

double sigma(double logit) { return std::sqrt(std::log1p(std::exp(logit))); }

TEST(ReferenceRoute, OneExpertKeepsItsScoreAndSeveralAreRenormalised) {
  ModelConfig c = test::fixture_config("dsv41-tiny");
  c.norm_topk_prob = true;
  c.routed_scaling_factor = 1.5;
  const LayerWeights w = three_experts();
  c.num_experts_per_tok = 1;
  const Routing one = route(c, w, {1.0f});
  ASSERT_EQ(one.experts, (std::vector<int64_t>{0}));
  EXPECT_NEAR(one.weights[0], sigma(2.0) * 1.5, 1e-5);  // not 1.5: the official gate leaves one expert alone
  c.num_experts_per_tok = 2;
  const Routing two = route(c, w, {1.0f});
  ASSERT_EQ(two.experts, (std::vector<int64_t>{0, 2}));
  EXPECT_NEAR(two.weights[0], sigma(2.0) / (sigma(2.0) + sigma(0.5)) * 1.5, 1e-5);
  EXPECT_NEAR(two.weights[0] + two.weights[1], 1.5, 1e-5);
}

}  // namespace
}  // namespace dsv41::reference
