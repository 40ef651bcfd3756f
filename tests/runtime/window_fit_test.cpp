// tests/runtime/window_fit_test.cpp — planned-size fitting, padded runs and a sequence's rows (runtime/window_fit.h).
#include "runtime/window_fit.h"

#include <gtest/gtest.h>

#include "common/call_list.h"

namespace dsv41 {
namespace {

const int32_t* row(const PhaseRun& run, int64_t r) { return run.statics.data() + r * kStaticsFields; }

TEST(WindowFit, TheSmallestSizeThatHoldsTheRowsInAnyOrder) {
  const std::vector<int64_t> sizes = {8, 1, 4, 2};  // not sorted: the planner's order is not assumed
  EXPECT_EQ(smallest_holding(sizes, 1), 1);
  EXPECT_EQ(smallest_holding(sizes, 3), 4);
  EXPECT_EQ(smallest_holding(sizes, 4), 4) << "an exact fit takes that size, not the next";
  EXPECT_EQ(smallest_holding(sizes, 5), 8);
  EXPECT_EQ(smallest_holding(sizes, 8), 8);
  EXPECT_EQ(smallest_holding(sizes, 9), 0) << "rows above the largest size fit nowhere";
  EXPECT_EQ(smallest_holding({}, 1), 0);
  EXPECT_EQ(largest_size(sizes), 8);
  EXPECT_EQ(largest_size({}), 0);
}

TEST(WindowFit, APaddedRunHasEveryRowInactive) {
  const PhaseRun run = padded_run("decode.r4", 4);
  EXPECT_EQ(run.phase, "decode.r4");
  ASSERT_EQ(run.statics.size(), static_cast<size_t>(4 * kStaticsFields));
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(row(run, r)[kStaticSlot], -1) << "row " << r;
    EXPECT_EQ(row(run, r)[kStaticToken], 0) << "row " << r;
    EXPECT_EQ(row(run, r)[kStaticPosition], 0) << "row " << r;
    EXPECT_EQ(row(run, r)[kStaticFirstRow], 0) << "row " << r;
  }
  EXPECT_TRUE(run.logits_rows.empty());
}

TEST(WindowFit, ASequencesRowsAreConsecutiveAndTheRowsAroundThemStayPadding) {
  PhaseRun run = padded_run("prefill.n8", 8);
  const std::vector<int32_t> tokens = {11, 12, 13};
  write_sequence_rows(run, 2, 5, 40, tokens);
  for (int64_t r : {0, 1, 5, 6, 7}) EXPECT_EQ(row(run, r)[kStaticSlot], -1) << "padding row " << r;
  for (int64_t j = 0; j < 3; ++j) {
    const int32_t* s = row(run, 2 + j);
    EXPECT_EQ(s[kStaticToken], tokens[j]) << "row " << 2 + j;
    EXPECT_EQ(s[kStaticSlot], 5) << "row " << 2 + j;
    EXPECT_EQ(s[kStaticPosition], 40 + j) << "row " << 2 + j;
    EXPECT_EQ(s[kStaticFirstRow], 2) << "every row names the sequence's first row";
  }
  EXPECT_TRUE(run.logits_rows.empty()) << "the caller chooses the logits rows";
}

TEST(WindowFitDeathTest, RowsPastTheRunAreAProgrammingError) {
  PhaseRun run = padded_run("decode.r2", 2);
  const std::vector<int32_t> tokens = {1, 2, 3};
  EXPECT_DEATH(write_sequence_rows(run, 0, 0, 0, tokens), "internal check failed");
  EXPECT_DEATH(padded_run("decode.r0", 0), "internal check failed");
}

}  // namespace
}  // namespace dsv41
