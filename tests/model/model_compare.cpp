// tests/model/model_compare.cpp — logit row comparisons with failure messages that name the row, the id and both values; crossings.
#include "tests/model/model_compare.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runtime/generate.h"

namespace dsv41::model_test {

RowDiff row_diff(const std::vector<float>& actual, const std::vector<float>& expected) {
  RowDiff d;
  double worst = -1;
  for (size_t i = 0; i < expected.size(); ++i) {
    d.scale = std::max(d.scale, std::fabs(expected[i]));
    const double diff = i < actual.size() ? std::fabs(static_cast<double>(actual[i]) - expected[i]) : INFINITY;
    if (!(diff <= worst)) {  // NaN counts as worst
      worst = diff;
      d.index = static_cast<int64_t>(i);
      d.actual = i < actual.size() ? actual[i] : NAN;
      d.expected = expected[i];
    }
  }
  d.relative = actual.size() != expected.size() ? INFINITY : (std::isnan(worst) ? INFINITY : worst / d.scale);
  return d;
}

namespace {

std::string describe_row(const RowDiff& d, size_t r) {
  return fmt::format("row {} (position {}, predicts position {}): id {} is {}, expected {}; |diff|/max|logit| = {:.3g} "
                     "(max|logit| {})", r, r, r + 1, d.index, d.actual, d.expected, d.relative, d.scale);
}

}  // namespace

double expect_rows_close(const Logits& actual, const Logits& expected, size_t first, size_t last, double tolerance,
                         const std::string& what) {
  EXPECT_GE(actual.size(), last) << what << ": too few actual rows";
  EXPECT_GE(expected.size(), last) << what << ": too few expected rows";
  double worst = 0;
  size_t failed = 0;
  std::string first_failure, worst_failure;
  for (size_t r = first; r < last && r < actual.size() && r < expected.size(); ++r) {
    const RowDiff d = row_diff(actual[r], expected[r]);
    if (d.relative <= tolerance) {
      worst = std::max(worst, d.relative);
      continue;
    }
    if (failed++ == 0) first_failure = describe_row(d, r);
    if (!(d.relative <= worst)) worst = d.relative, worst_failure = describe_row(d, r);
  }
  // One message per comparison: the first row out of tolerance (where a bug starts) and the worst.
  EXPECT_EQ(failed, 0u) << what << ": " << failed << " of rows [" << first << ", " << last << ") exceed the tolerance "
                        << tolerance << " of max|logit|\n  first: " << first_failure << "\n  worst: "
                        << (worst_failure.empty() ? first_failure : worst_failure);
  return worst;
}

double top1_agreement(const Logits& a, const Logits& b, size_t first, size_t last) {
  size_t same = 0, count = 0;
  for (size_t r = first; r < last && r < a.size() && r < b.size(); ++r, ++count) {
    const auto n = static_cast<int64_t>(a[r].size());
    same += greedy_token(a[r].data(), n) == greedy_token(b[r].data(), n);
  }
  return count ? static_cast<double>(same) / static_cast<double>(count) : 0.0;
}

Bf16Agreement bf16_agreement(const Logits& actual, const Logits& expected, size_t first, size_t last) {
  Bf16Agreement a;
  std::vector<double> relative;
  for (size_t r = first; r < last && r < actual.size() && r < expected.size(); ++r)
    relative.push_back(row_diff(actual[r], expected[r]).relative);
  if (relative.empty()) {
    a.quartile = a.median = a.worst = INFINITY;
    return a;
  }
  std::sort(relative.begin(), relative.end());
  a.rows = relative.size();
  a.quartile = relative[relative.size() / 4];
  a.median = relative[relative.size() / 2];
  a.worst = relative.back();
  a.top1 = top1_agreement(actual, expected, first, last);
  return a;
}

std::string describe(const Bf16Agreement& a) {
  return fmt::format("over {} rows max|diff|/max|logit| lower quartile {:.3g}, median {:.3g}, max {:.3g}; top-1 "
                     "agreement {:.3f}", a.rows, a.quartile, a.median, a.worst, a.top1);
}

void expect_bf16_agreement(const Bf16Agreement& a, const std::string& what) {
  EXPECT_GT(a.rows, 0u) << what;
  EXPECT_LE(a.median, kBf16MedianBound) << what << ": " << describe(a);
  EXPECT_LE(a.worst, kBf16WorstBound) << what << ": " << describe(a);
  EXPECT_GE(a.top1, kBf16Top1Bound) << what << ": " << describe(a);
}

void expect_as_close_to_the_oracle(const Bf16Agreement& candidate, const Bf16Agreement& reference,
                                   const std::string& what) {
  const std::string both = describe(candidate) + "; the reference " + describe(reference);
  EXPECT_GT(candidate.rows, 0u) << what;
  EXPECT_EQ(candidate.rows, reference.rows) << what;
  EXPECT_LE(candidate.quartile, kOracleQuartileFactor * reference.quartile) << what << ": " << both;
  EXPECT_LE(candidate.median, kOracleMedianFactor * reference.median) << what << ": " << both;
  EXPECT_LE(candidate.worst, std::max(kOracleMedianFactor * reference.worst, kBf16WorstBound)) << what << ": " << both;
  EXPECT_GE(candidate.top1, reference.top1 - kOracleTop1Slack) << what << ": " << both;
}

Crossings crossings(const ModelConfig& c, int64_t length) {
  Crossings x;
  x.window_wraps = length > c.sliding_window;  // position W reuses the slot of position 0
  bool masked_source = false;
  for (const LayerRole& role : c.layers) {
    if (!role.index_source || role.ratio < 1) continue;
    const int64_t visible = length / role.ratio;  // n(p) = (p + 1) div r at the last position
    if (visible > c.index_topk) (role.ratio == 1 ? x.topk_ratio1 : x.topk_ratio2) = true;
    masked_source |= role.candidate_masked;
  }
  if (c.candidate_source_layer_id >= 0 && masked_source && c.layers[c.candidate_source_layer_id].ratio > 0) {
    const int64_t visible = length / c.layers[c.candidate_source_layer_id].ratio;
    const int64_t blocks = (visible + c.candidate_block_size - 1) / c.candidate_block_size;
    x.candidate_mask = blocks > c.candidate_topk_blocks;
  }
  return x;
}

std::string describe(const Crossings& c) {
  return fmt::format("window wraps: {}, entries > index_topk on ratio-2 index sources: {}, on ratio-1: {}, "
                     "candidate mask active: {}", c.window_wraps, c.topk_ratio2, c.topk_ratio1, c.candidate_mask);
}

}  // namespace dsv41::model_test
