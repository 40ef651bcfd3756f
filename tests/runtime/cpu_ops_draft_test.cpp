// tests/runtime/cpu_ops_draft_test.cpp — the DSpark ops (stream_mean, block_attention, markov_logits) against direct evaluation.
#include <cmath>

#include <gtest/gtest.h>

#include "tests/runtime/fake_op_context.h"

namespace dsv41::cpu::testing {
namespace {

TEST(StreamMean, WritesTheRoundedMeanOfTheStreamsIntoItsTapsColumns) {
  constexpr int64_t kRows = 3, kStreams = 4, kHidden = 8, kTaps = 3, kTap = 1;
  std::mt19937 rng(11);
  FakeContext ctx("stream_mean", {{"hidden", kHidden}, {"streams", kStreams}, {"taps", kTaps}});
  ctx.set_rows({{5, 0, 7, 0}, {6, 0, 8, 0}, {0, -1, 0, 0}});
  const std::vector<float> x = random_values(rng, kRows * kStreams * kHidden, -2, 2, true);
  fill(ctx.add_scratch("x", DType::BF16, {kRows, kStreams, kHidden}), x);
  ctx.add_int("tap", kTap);
  const TensorView out = ctx.add_scratch("out", DType::BF16, {kRows, kTaps * kHidden});
  fill(out, std::vector<float>(kRows * kTaps * kHidden, 9.0f));  // other taps' columns must stay
  ASSERT_TRUE(ctx.run().is_ok());
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t t = 0; t < kTaps; ++t)
      for (int64_t d = 0; d < kHidden; ++d) {
        float want = 9.0f;
        if (t == kTap && r == 2) want = 0.0f;  // an inactive row's tap is zeroed
        if (t == kTap && r < 2) {
          double sum = 0;
          for (int64_t s = 0; s < kStreams; ++s) sum += x[(r * kStreams + s) * kHidden + d];
          want = bf16_round(static_cast<float>(sum / kStreams));
        }
        EXPECT_NEAR(out.get((r * kTaps + t) * kHidden + d), want, std::fabs(want) / 128 + 1e-6)
            << "row " << r << ", tap " << t << ", dim " << d;
      }
  FakeContext bad("stream_mean", {{"hidden", kHidden}, {"streams", kStreams}, {"taps", kTaps}});
  bad.set_rows({{5, 0, 7, 0}});
  bad.add_scratch("x", DType::BF16, {1, kStreams, kHidden});
  bad.add_int("tap", kTaps);
  bad.add_scratch("out", DType::BF16, {1, kTaps * kHidden});
  const Status refused = bad.run();
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("tap 3 outside 0..2"), std::string::npos) << refused.message();
}

// Attention of one head over keys in double: softmax with the sink in the denominator only.
std::vector<double> attend_direct(const float* q, const std::vector<const float*>& keys, int64_t dh, double sink,
                                  double scale) {
  std::vector<double> logit;
  double top = sink;
  for (const float* k : keys) {
    double l = 0;
    for (int64_t d = 0; d < dh; ++d) l += double(q[d]) * k[d];
    logit.push_back(l * scale);
    top = std::max(top, logit.back());
  }
  double denominator = std::exp(sink - top);
  std::vector<double> o(static_cast<size_t>(dh), 0.0);
  for (size_t j = 0; j < keys.size(); ++j) {
    const double e = std::exp(logit[j] - top);
    denominator += e;
    for (int64_t d = 0; d < dh; ++d) o[d] += e * keys[j][d];
  }
  for (double& v : o) v /= denominator;
  return o;
}

TEST(BlockAttention, SeesTheContextWindowBeforeTheBlockAndEveryRowOfTheBlock) {
  constexpr int64_t kHeads = 2, kDh = 8, kWindow = 4, kRingRows = 6, kRows = 5;
  std::mt19937 rng(12);
  FakeContext ctx("block_attention", {{"heads", kHeads}, {"head_dim", kDh}, {"window", kWindow}});
  // Slot 0: a block of 3 rows at positions 10..12; slot 1: a block of 1 row at position 0 (no context);
  // then an unused row.
  ctx.set_rows({{7, 0, 10, 0}, {9, 0, 11, 0}, {9, 0, 12, 0}, {4, 1, 0, 3}, {0, -1, 0, 0}});
  const std::vector<float> q = random_values(rng, kRows * kHeads * kDh), kv = random_values(rng, kRows * kDh);
  fill(ctx.add_scratch("q", DType::F32, {kRows, kHeads * kDh}), q);
  fill(ctx.add_scratch("kv", DType::F32, {kRows, kDh}), kv);
  ctx.add_state("ring", DType::F32, {kRingRows, kDh}, 2);
  const std::vector<float> ring = random_values(rng, kRingRows * kDh);
  fill(ctx.slot_state("ring", 0), ring);
  const std::vector<float> sink = {0.3f, -0.5f};
  ctx.add_weight("sink", {kHeads}, sink);
  const double scale = 1.0 / std::sqrt(double(kDh));
  ctx.add_float("scale", scale);
  const TensorView out = ctx.add_scratch("out", DType::F32, {kRows, kHeads * kDh});
  ASSERT_TRUE(ctx.run().is_ok());
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t h = 0; h < kHeads; ++h) {
      std::vector<const float*> keys;
      if (r < 3) {
        for (int64_t t = 10 - kWindow; t < 10; ++t) keys.push_back(ring.data() + (t % kRingRows) * kDh);
        for (int64_t b = 0; b < 3; ++b) keys.push_back(kv.data() + b * kDh);  // later rows too: not causal
      } else if (r == 3) {
        keys.push_back(kv.data() + 3 * kDh);
      }
      const std::vector<double> want =
          r == 4 ? std::vector<double>(kDh, 0.0) : attend_direct(q.data() + (r * kHeads + h) * kDh, keys, kDh, sink[h], scale);
      for (int64_t d = 0; d < kDh; ++d)
        EXPECT_NEAR(out.get((r * kHeads + h) * kDh + d), want[d], 1e-5) << "row " << r << ", head " << h << ", dim " << d;
    }
}

// The phase's order: markov_logits of step 0, markov_pick of step 0, markov_logits of step 1, ...
TEST(MarkovLogits, AddsTheMarkovTermOfEachRowsPredecessorChosenGreedily) {
  constexpr int64_t kVocab = 7, kRank = 3, kRows = 6, kSteps = 3;
  std::mt19937 rng(13);
  // Sequence A: rows 0-2 after token 4; sequence B: rows 3-4 after token 1; row 5 unused.
  const std::vector<RowStatic> rows = {{4, 0, 20, 0}, {6, 0, 21, 0}, {6, 0, 22, 0}, {1, 1, 5, 3}, {6, 1, 6, 3}, {0, -1, 0, 0}};
  const std::vector<float> base = random_values(rng, kRows * kVocab, -1, 1);
  const std::vector<float> embed = random_values(rng, kVocab * kRank, -2, 2), head = random_values(rng, kVocab * kRank, -2, 2);
  std::vector<float> out(kRows * kVocab, 9.0f);  // rows not yet stepped keep what they held
  std::vector<int32_t> picks(kRows, -7);
  for (int64_t step = 0; step < kSteps; ++step) {
    FakeContext logits("markov_logits", {{"vocab", kVocab}, {"rank", kRank}});
    logits.set_rows(rows);
    fill(logits.add_scratch("base", DType::F32, {kRows, kVocab}), base);
    logits.add_weight("embed", {kVocab, kRank}, embed);
    logits.add_weight("head", {kVocab, kRank}, head);
    const TensorView in_picks = logits.add_scratch("picks", DType::I32, {kRows});
    for (int64_t r = 0; r < kRows; ++r) in_picks.set_int(r, picks[r]);
    logits.add_int("step", step);
    const TensorView o = logits.add_scratch("out", DType::F32, {kRows, kVocab});
    fill(o, out);
    ASSERT_TRUE(logits.run().is_ok()) << "step " << step;
    for (int64_t i = 0; i < kRows * kVocab; ++i) {
      const int64_t r = i / kVocab;
      const bool stepped = r < 5 && r - rows[r].first_row <= step;
      if (!stepped && r < 5) EXPECT_EQ(o.get(i), 9.0f) << "row " << r << " is a later step's, step " << step;
      out[i] = o.get(i);
    }
    FakeContext pick("markov_pick", {{"vocab", kVocab}});
    pick.set_rows(rows);
    fill(pick.add_scratch("logits", DType::F32, {kRows, kVocab}), out);
    pick.add_int("step", step);
    const TensorView p = pick.add_scratch("picks", DType::I32, {kRows});
    for (int64_t r = 0; r < kRows; ++r) p.set_int(r, picks[r]);
    ASSERT_TRUE(pick.run().is_ok()) << "step " << step;
    for (int64_t r = 0; r < kRows; ++r) picks[r] = p.get_int(r);
  }
  int64_t prev = 0, changed = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    if (r == 0) prev = 4;
    if (r == 3) prev = 1;
    int64_t best = 0;
    std::vector<double> want(kVocab, 0.0);
    for (int64_t v = 0; v < kVocab && r < 5; ++v) {
      double m = 0;
      for (int64_t k = 0; k < kRank; ++k) m += double(head[v * kRank + k]) * embed[prev * kRank + k];
      want[v] = base[r * kVocab + v] + m;
      if (want[v] > want[best]) best = v;
    }
    for (int64_t v = 0; v < kVocab; ++v) EXPECT_NEAR(out[r * kVocab + v], want[v], 1e-5) << "row " << r << ", token " << v;
    if (r < 5) EXPECT_EQ(picks[r], best) << "row " << r;
    changed += r < 5 && best != prev;
    prev = best;
  }
  EXPECT_EQ(picks[5], -7) << "an inactive row's pick is left alone";
  EXPECT_GT(changed, 0) << "the chain should not be constant, or the test proves little";
}

TEST(MarkovLogits, ARowOutsideARunIsRefusedNamingIt) {
  FakeContext ctx("markov_logits", {{"vocab", 3}, {"rank", 2}});
  ctx.set_rows({{1, 0, 5, 0}, {2, -1, 0, 1}, {2, 0, 7, 0}});  // row 2's run passes an inactive row
  fill(ctx.add_scratch("base", DType::F32, {3, 3}), std::vector<float>(9, 0.5f));
  ctx.add_weight("embed", {3, 2}, std::vector<float>(6, 1.0f));
  ctx.add_weight("head", {3, 2}, std::vector<float>(6, 1.0f));
  ctx.add_scratch("picks", DType::I32, {3});
  ctx.add_int("step", 2);
  ctx.add_scratch("out", DType::F32, {3, 3});
  const Status s = ctx.run();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("row 2 names first row 0"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace dsv41::cpu::testing
