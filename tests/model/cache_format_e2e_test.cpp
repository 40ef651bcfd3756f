// tests/model/cache_format_e2e_test.cpp — the tiny model planned with --cache-format official: worlds 2-4
// against world 1 in check mode, and against the bf16-cache run of the same activations.
#include <algorithm>
#include <cstdio>

#include <gtest/gtest.h>

#include "tests/model/model_fixtures.h"

namespace dsv41::model_test {
namespace {

// Check mode with official caches: the split changes only the order of fp32 sums, as without them;
// the quantization is a function of each cache row, and every rank computes the rows redundantly
// from the same exchanged sums. A value on a rounding boundary could round differently across
// worlds; measured here: worlds 2-4 within 6.1e-7 of world 1 (5.8e-7 with the short prompt, left
// out for time), the same tokens, so the check-mode bound (1e-3·max|logit|) holds with margin. The
// long prompt crosses every attention limit in its prefill (world_match_test.cpp). 11.5 s here.
TEST(CacheFormatE2E, OfficialCachesAgreeAcrossWorldsInCheckMode) {
  for (const PromptCase& prompt : {kLongPrompt}) {
    const RunKey one{SynthFormat::Release, Mode::CheckOfficial, 1, prompt};
    const GenerateResult& base = generated(one);
    ASSERT_FALSE(base.logits.empty()) << describe(one);
    for (int world : {2, 3, 4}) {
      const RunKey key{SynthFormat::Release, Mode::CheckOfficial, world, prompt};
      const GenerateResult& run = generated(key);
      EXPECT_EQ(run.tokens, base.tokens) << describe(key) << " vs world 1";
      const std::string what = describe(key) + " vs world 1";
      const double worst = expect_rows_close(run.logits, base.logits, 0, base.logits.size(), kCheckTolerance, what);
      std::printf("[measured] %s: max |diff|/max|logit| %.3g over %zu rows\n", what.c_str(), worst, base.logits.size());
    }
  }
}

// The official caches change the attention's keys by their quantization (FP8 window rows: up to 2^-4
// relative; FP4 compressed rows and index keys: up to a third of a group's scale), and the tiny
// synthetic model, not trained with them, moves far more than under a bf16 rounding change: measured
// here over the 64 prompt rows, official vs bf16 caches, median max|diff|/max|logit| 0.104, worst
// 0.276, top-1 0.781 in check mode (bf16 activations, not run for time: 0.092, 0.262, 0.875; with
// dsv41-rt generate and a 40-token prompt: 0.077, 0.20, 0.90). The bounds hold those with margin; a
// cache op that stored garbage or read another row's scale moves every row by O(max|logit|) and fails
// the median bound. Both runs must choose the first token alike, and the logits must differ (a format
// silently ignored would leave them equal). Seconds (1.7 s after the test above, which shares a run).
constexpr double kOfficialMedianBound = 0.2, kOfficialWorstBound = 0.5, kOfficialTop1Bound = 0.6;

TEST(CacheFormatE2E, OfficialCachesStayCloseToTheBf16CacheRun) {
  for (Mode official : {Mode::CheckOfficial}) {
    const Mode plain = official == Mode::CheckOfficial ? Mode::Check : Mode::BF16;
    const RunKey base_key{SynthFormat::Release, plain, 1, kLongPrompt};
    const RunKey key{SynthFormat::Release, official, 1, kLongPrompt};
    const GenerateResult& base = generated(base_key);
    const GenerateResult& run = generated(key);
    ASSERT_FALSE(base.logits.empty()) << describe(base_key);
    ASSERT_EQ(run.logits.size(), base.logits.size()) << describe(key);
    const Bf16Agreement rows = bf16_agreement(run.logits, base.logits, 0, kLongPrompt.length);
    const size_t same =
        std::mismatch(run.tokens.begin(), run.tokens.end(), base.tokens.begin()).first - run.tokens.begin();
    std::printf("[measured] %s vs %s: prompt rows %s; first %zu of %zu greedy tokens identical\n", describe(key).c_str(),
                mode_name(plain), describe(rows).c_str(), same, run.tokens.size());
    EXPECT_LE(rows.median, kOfficialMedianBound) << describe(key) << ": " << describe(rows);
    EXPECT_LE(rows.worst, kOfficialWorstBound) << describe(key) << ": " << describe(rows);
    EXPECT_GE(rows.top1, kOfficialTop1Bound) << describe(key) << ": " << describe(rows);
    EXPECT_GE(same, 1u) << describe(key) << ": the first generated token differs from the bf16-cache run's";
    EXPECT_GT(rows.worst, 0.0) << describe(key) << ": logits identical to the bf16-cache run";
  }
}

}  // namespace
}  // namespace dsv41::model_test
