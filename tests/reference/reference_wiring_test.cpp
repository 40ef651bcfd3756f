// tests/reference/reference_wiring_test.cpp — the reference's layer wiring: the tiny config worked out by hand
// from its raw lists, and the release and tiny configs against the implementation's own derivation.
#include "tests/reference/reference_wiring.h"

#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace dsv41::reference {
namespace {

// The tiny config: compress_ratios [0, 0, 2, 2, 2, 1, 1, 1], kv sources [2, 5], index sources
// [2, 5, 7], candidate source 5.
TEST(ReferenceWiring, TinyConfigByHand) {
  const std::vector<LayerWiring> w = derive_wiring(test::fixture_config("dsv41-tiny"));
  ASSERT_EQ(w.size(), 8u);
  struct Expected {
    int ratio, kv_layer, index_layer;
    bool kv_source, index_source, candidate_source, candidate_masked;
  };
  const Expected expected[8] = {
      {0, -1, -1, false, false, false, false}, {0, -1, -1, false, false, false, false},
      {2, 2, 2, true, true, false, false},     {2, 2, 2, false, false, false, false},
      {2, 2, 2, false, false, false, false},   {1, 5, 5, true, true, true, false},
      {1, 5, 5, false, false, false, false},   {1, 5, 7, false, true, false, true},
  };
  for (int l = 0; l < 8; ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    EXPECT_EQ(w[l].ratio, expected[l].ratio);
    EXPECT_EQ(w[l].kv_layer, expected[l].kv_layer);
    EXPECT_EQ(w[l].index_layer, expected[l].index_layer);
    EXPECT_EQ(w[l].kv_source, expected[l].kv_source);
    EXPECT_EQ(w[l].index_source, expected[l].index_source);
    EXPECT_EQ(w[l].candidate_source, expected[l].candidate_source);
    EXPECT_EQ(w[l].candidate_masked, expected[l].candidate_masked);
  }
}

// Two derivations written apart (common/model_config_validate.cpp walks forward keeping the last
// source; this one searches the lists backwards) must agree on every layer of both fixtures.
TEST(ReferenceWiring, AgreesWithTheImplementationsLayerRoles) {
  for (const char* fixture : {"dsv41-tiny", "dsv41-release"}) {
    const ModelConfig c = test::fixture_config(fixture);
    const std::vector<LayerWiring> w = derive_wiring(c);
    ASSERT_EQ(w.size(), c.layers.size()) << fixture;
    for (size_t l = 0; l < w.size(); ++l) {
      SCOPED_TRACE(std::string(fixture) + " layer " + std::to_string(l));
      const LayerRole& r = c.layers[l];
      EXPECT_EQ(w[l].ratio, r.ratio);
      EXPECT_EQ(w[l].kv_source, r.kv_source);
      EXPECT_EQ(w[l].index_source, r.index_source);
      EXPECT_EQ(w[l].candidate_source, r.candidate_source);
      EXPECT_EQ(w[l].candidate_masked, r.candidate_masked);
      EXPECT_EQ(w[l].kv_layer, r.kv_layer);
      EXPECT_EQ(w[l].index_layer, r.index_layer);
    }
  }
}

}  // namespace
}  // namespace dsv41::reference
