// tests/model/segment_test.cpp — prefilling in segments of 16, 64 and 2048 rows gives the logits of one token at a time.
#include <cstdio>

#include <gtest/gtest.h>

#include "tests/model/model_fixtures.h"

namespace dsv41::model_test {
namespace {

// Check mode, so the only difference between segment sizes is fp32 summation order (a segment's
// rows read the cache rows earlier rows of the same segment wrote, and the compressor's open group
// crosses segment boundaries): 1e-3·max|logit| at the last prompt row and at every decode step.
// The 64-row prompt is 4 segments of 16, exactly one of 64, and a partly filled 2048.
void expect_segments_match(SynthFormat format, int world, const std::vector<int64_t>& segments) {
  const RunKey by_token{format, Mode::Check, world, kLongPrompt, 1};
  const GenerateResult& base = generated(by_token);
  ASSERT_EQ(base.logits.size(), kLongPrompt.length + kMaxTokens - 1) << describe(by_token);
  for (int64_t rows : segments) {
    const RunKey key{format, Mode::Check, world, kLongPrompt, rows};
    const GenerateResult& run = generated(key);
    EXPECT_EQ(run.tokens, base.tokens) << describe(key) << " vs token by token";
    const std::string what = describe(key) + " vs token by token";
    // Every prompt row is compared too: all_logits keeps them, and they must agree as well.
    const double prompt = expect_rows_close(run.logits, base.logits, 0, kLongPrompt.length - 1, kCheckTolerance, what);
    const double steps = expect_rows_close(run.logits, base.logits, kLongPrompt.length - 1, base.logits.size(),
                                           kCheckTolerance, what);
    std::printf("[measured] %s: max |diff|/max|logit| prompt rows %.3g, last prompt row + decode steps %.3g\n",
                what.c_str(), prompt, steps);
  }
}

TEST(ModelSegments, EverySegmentSizeMatchesTokenByTokenAtWorldOne) {
  expect_segments_match(SynthFormat::Release, 1, {16, 64, 2048});
}

TEST(ModelSegments, SixteenRowSegmentsMatchTokenByTokenAtWorldThree) {
  expect_segments_match(SynthFormat::Release, 3, {16});
}

}  // namespace
}  // namespace dsv41::model_test
