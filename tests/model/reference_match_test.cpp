// tests/model/reference_match_test.cpp — the CPU backend at world 1 against the independent reference forward, both pack formats.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "tests/model/model_fixtures.h"

namespace dsv41::model_test {
namespace {

// Every greedy token the backend chose is the reference's argmax for the same row, unless the two
// are within the comparison's tolerance of each other in the reference (a near tie either may break).
void expect_same_choices(const RunKey& key, const GenerateResult& run, const Logits& ref, double tolerance) {
  const size_t first = key.prompt.length - 1;
  for (size_t k = 0; k < run.tokens.size() && first + k < ref.size(); ++k) {
    const std::vector<float>& row = ref[first + k];
    const int32_t best = greedy_token(row.data(), static_cast<int64_t>(row.size()));
    if (best == run.tokens[k]) continue;
    const RowDiff scale = row_diff(row, row);
    const double gap = (row[best] - row[run.tokens[k]]) / scale.scale;
    EXPECT_LE(gap, 2 * tolerance) << describe(key) << ": step " << k << " (row " << first + k << ") chose "
                                  << run.tokens[k] << " (" << row[run.tokens[k]] << " in the reference), the reference "
                                  << "prefers " << best << " (" << row[best] << "); gap / max|logit| " << gap;
  }
}

// docs/model.md §2: in check mode the backend and the reference compute the same real-number
// function, so they agree to fp32 accuracy: 1e-3·max|logit| at every row, prompt and decode.
TEST(ModelVsReference, CheckModeMatchesEveryRowInBothFormats) {
  for (SynthFormat format : {SynthFormat::BF16, SynthFormat::Release}) {
    const RunKey key{format, Mode::Check, 1, kLongPrompt};
    SCOPED_TRACE(describe(key));
    const GenerateResult& run = generated(key);
    const Logits& ref = reference_logits(key);
    ASSERT_EQ(run.logits.size(), kLongPrompt.length + kMaxTokens - 1);
    ASSERT_EQ(ref.size(), run.logits.size());
    const size_t last_prompt_row = kLongPrompt.length - 1;
    const double prompt = expect_rows_close(run.logits, ref, 0, last_prompt_row, kCheckTolerance, describe(key));
    const double steps =
        expect_rows_close(run.logits, ref, last_prompt_row, run.logits.size(), kCheckTolerance, describe(key));
    std::printf("[measured] %s vs reference: max |diff|/max|logit| over prompt rows %.3g, over the %d steps %.3g\n",
                describe(key).c_str(), prompt, kMaxTokens, steps);
    expect_same_choices(key, run, ref, kCheckTolerance);
  }
}

// bf16 mode: both sides round where docs/model.md §2 says, but sum in different orders, so roundings
// flip and the flips cascade (§2 measures ~1 % typical, up to 17 % where an expert choice flips).
// The reference is fed the backend's tokens (teacher forcing), so every row is comparable. Bounds,
// from the measurements reported below with margin: see kBf16* — a broken rounding point or op
// moves the logits by far more than these.
constexpr double kBf16MedianRelative = 0.05;  // median over rows of max|diff|/max|logit|
constexpr double kBf16Top1Agreement = 0.85;   // fraction of rows whose argmax is the same

TEST(ModelVsReference, Bf16ModeAgreesStatistically) {
  for (SynthFormat format : {SynthFormat::BF16, SynthFormat::Release}) {
    const RunKey key{format, Mode::BF16, 1, kLongPrompt};
    SCOPED_TRACE(describe(key));
    const GenerateResult& run = generated(key);
    const Logits& ref = reference_logits(key);
    ASSERT_EQ(run.logits.size(), kLongPrompt.length + kMaxTokens - 1);
    ASSERT_EQ(ref.size(), run.logits.size());
    std::vector<double> relative;
    for (size_t r = 0; r < ref.size(); ++r) relative.push_back(row_diff(run.logits[r], ref[r]).relative);
    std::vector<double> sorted = relative;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2], worst = sorted.back();
    const double agreement = top1_agreement(run.logits, ref, 0, ref.size());
    std::printf("[measured] %s vs reference bf16: max|diff|/max|logit| median %.3g, max %.3g; top-1 agreement "
                "%.3f over %zu rows\n", describe(key).c_str(), median, worst, agreement, ref.size());
    EXPECT_LE(median, kBf16MedianRelative) << describe(key);
    EXPECT_GE(agreement, kBf16Top1Agreement) << describe(key);
    // The rows that matter most for greedy decoding: the prompt's last row predicts the first token.
    EXPECT_EQ(greedy_token(ref[kLongPrompt.length - 1].data(), static_cast<int64_t>(ref[0].size())), run.tokens[0])
        << describe(key) << ": the first generated token";
  }
}

}  // namespace
}  // namespace dsv41::model_test
