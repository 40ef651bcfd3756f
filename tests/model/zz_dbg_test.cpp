#include <cstdio>
#include <gtest/gtest.h>
#include "tests/model/model_fixtures.h"
namespace dsv41::model_test {
TEST(Dbg, Values) {
  const GenerateResult& w1 = generated({SynthFormat::Release, Mode::BF16, 1, kLongPrompt});
  const GenerateResult& w2 = generated({SynthFormat::Release, Mode::BF16, 2, kLongPrompt});
  const GenerateResult& w3 = generated({SynthFormat::Release, Mode::BF16, 3, kLongPrompt});
  const GenerateResult& w4 = generated({SynthFormat::Release, Mode::BF16, 4, kLongPrompt});
  for (size_t r = 0; r < 64; ++r) {
    std::printf("row %zu: w2 %g w3 %g w4 %g w3vs4 %g\n", r, row_diff(w2.logits[r], w1.logits[r]).relative,
                row_diff(w3.logits[r], w1.logits[r]).relative, row_diff(w4.logits[r], w1.logits[r]).relative,
                row_diff(w3.logits[r], w4.logits[r]).relative);
  }
}
}
