// tests/serve/sampler_test.cpp — the keyed sampler: greedy, determinism by seed, uneven vocabulary slices, truncation, frequencies.
#include "runtime/serve/sampler.h"

#include <cmath>
#include <algorithm>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "runtime/generate.h"

namespace dsv41::serve {
namespace {

std::vector<float> random_logits(int64_t n, uint32_t seed, float scale = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(Sampler, GreedyIsTheArgmaxWithTiesToTheLowerId) {
  std::vector<float> v = random_logits(1000, 1);
  v[17] = v[400] = 50.0f;
  SamplingParams p;
  p.temperature = 0;
  EXPECT_EQ(sample_row(v.data(), 1000, p, 3).id, 17);
  EXPECT_EQ(sample_row(v.data(), 1000, p, 3).id, greedy_token(v.data(), 1000));
  EXPECT_EQ(sample_row(v.data(), 1000, p, 3, {300, 77, 623}).id, 17);
}

TEST(Sampler, SameSeedAndPositionGiveTheSameTokenOtherSeedsVary) {
  const std::vector<float> v = random_logits(512, 2, 0.5f);
  SamplingParams p;
  p.seed = 1234;
  const int32_t a = sample_row(v.data(), 512, p, 9).id;
  EXPECT_EQ(sample_row(v.data(), 512, p, 9).id, a);
  std::set<int32_t> seen;
  for (uint64_t seed = 0; seed < 32; ++seed) {
    p.seed = seed;
    seen.insert(sample_row(v.data(), 512, p, 9).id);
  }
  EXPECT_GT(seen.size(), 4u) << "a flat distribution sampled with 32 seeds gave almost always one token";
}

TEST(Sampler, UnevenSlicesGiveTheSameTokenAsTheWholeRow) {
  const std::vector<float> v = random_logits(1280, 3, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    SamplingParams p;
    p.seed = static_cast<uint64_t>(trial) * 7919;
    p.temperature = 0.3f + 0.01f * static_cast<float>(trial % 100);
    p.top_k = trial % 3 == 0 ? 0 : 1 + trial % 40;
    p.top_p = trial % 4 == 0 ? 1.0f : 0.5f + 0.002f * static_cast<float>(trial);
    p.min_p = trial % 5 == 0 ? 0.05f : 0.0f;
    p.top_logprobs = trial % 6;
    const Sampled whole = sample_row(v.data(), 1280, p, trial);
    for (const std::vector<int64_t>& slices : std::vector<std::vector<int64_t>>{{640, 640}, {384, 384, 256, 256}, {1, 1279}, {900, 3, 377}}) {
      const Sampled split = sample_row(v.data(), 1280, p, trial, slices);
      ASSERT_EQ(split.id, whole.id) << "trial " << trial << " temperature " << p.temperature << " top_k " << p.top_k
                                    << " top_p " << p.top_p << " min_p " << p.min_p << " slices " << slices.size();
      ASSERT_EQ(split.top.size(), whole.top.size());
      for (size_t i = 0; i < whole.top.size(); ++i) EXPECT_EQ(split.top[i].first, whole.top[i].first);
      EXPECT_NEAR(split.logprob, whole.logprob, 1e-5);
    }
  }
}

TEST(Sampler, TruncationsThatKeepOneTokenAreGreedy) {
  const std::vector<float> v = random_logits(300, 4);
  const int32_t best = greedy_token(v.data(), 300);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    SamplingParams k1;
    k1.seed = seed;
    k1.top_k = 1;
    EXPECT_EQ(sample_row(v.data(), 300, k1, 5).id, best);
    SamplingParams p0;
    p0.seed = seed;
    p0.top_p = 1e-6f;
    EXPECT_EQ(sample_row(v.data(), 300, p0, 5).id, best);
    SamplingParams m1;
    m1.seed = seed;
    m1.min_p = 1.0f;
    EXPECT_EQ(sample_row(v.data(), 300, m1, 5).id, best);
  }
}

TEST(Sampler, TopKNeverPicksOutsideTheKBest) {
  const std::vector<float> v = random_logits(200, 5, 0.3f);
  std::vector<int32_t> order(200);
  for (int i = 0; i < 200; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return v[a] > v[b]; });
  const std::set<int32_t> best5(order.begin(), order.begin() + 5);
  for (int position = 0; position < 300; ++position) {
    SamplingParams p;
    p.seed = 99;
    p.top_k = 5;
    EXPECT_TRUE(best5.count(sample_row(v.data(), 200, p, position).id)) << "position " << position;
  }
}

TEST(Sampler, FrequenciesFollowTheSoftmax) {
  const std::vector<float> v = {1.0f, 0.0f, -1.0f, 2.0f};
  const double t = 0.8;
  double z = 0;
  for (float x : v) z += std::exp(x / t);
  std::vector<int> counts(4, 0);
  const int n = 20000;
  SamplingParams p;
  p.temperature = static_cast<float>(t);
  p.seed = 7;
  for (int position = 0; position < n; ++position) ++counts[sample_row(v.data(), 4, p, position).id];
  for (int i = 0; i < 4; ++i) {
    const double expected = std::exp(v[i] / t) / z;
    EXPECT_NEAR(static_cast<double>(counts[i]) / n, expected, 0.015) << "token " << i;
  }
}

TEST(Sampler, LogprobIsTheLogSoftmaxOfTheRawLogits) {
  const std::vector<float> v = {0.5f, 1.5f, -2.0f};
  const double z = std::log(std::exp(0.5) + std::exp(1.5) + std::exp(-2.0));
  SamplingParams p;
  p.temperature = 0;
  p.top_logprobs = 2;
  const Sampled s = sample_row(v.data(), 3, p, 0, {2, 1});
  EXPECT_EQ(s.id, 1);
  EXPECT_NEAR(s.logprob, 1.5 - z, 1e-6);
  ASSERT_EQ(s.top.size(), 2u);
  EXPECT_EQ(s.top[1].first, 0);
  EXPECT_NEAR(s.top[1].second, 0.5 - z, 1e-6);
}

TEST(Sampler, KeyedUniformIsInsideTheOpenIntervalAndKeyed) {
  EXPECT_EQ(keyed_uniform(1, 2, 3), keyed_uniform(1, 2, 3));
  EXPECT_NE(keyed_uniform(1, 2, 3), keyed_uniform(1, 2, 4));
  EXPECT_NE(keyed_uniform(1, 2, 3), keyed_uniform(1, 3, 3));
  EXPECT_NE(keyed_uniform(1, 2, 3), keyed_uniform(2, 2, 3));
  for (int i = 0; i < 1000; ++i) {
    const double u = keyed_uniform(0, i, 0);
    EXPECT_GT(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace dsv41::serve
