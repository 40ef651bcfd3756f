// tests/draft/draft_verify_test.cpp — the acceptance rule, prompt lookup and drafted rows in the round planner, without a model.
#include <gtest/gtest.h>

#include "common/call_list.h"
#include "runtime/draft_verify.h"
#include "runtime/serve/round_planner.h"

namespace dsv41 {
namespace {

// Rows of logits over a vocabulary of 8 whose argmax is `best[j]`.
std::vector<std::vector<float>> rows_choosing(const std::vector<int32_t>& best) {
  std::vector<std::vector<float>> rows;
  for (int32_t b : best) {
    std::vector<float> row(8, 0.0f);
    row[b] = 1.0f;
    rows.push_back(row);
  }
  return rows;
}

TokenChooser argmax_recording(std::vector<int64_t>& positions) {
  return [&positions](const std::vector<float>& logits, int64_t position) {
    positions.push_back(position);
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  };
}

TEST(DraftVerify, KeepsDraftsWhileTheChosenTokenAgrees) {
  std::vector<int64_t> positions;
  const auto logits = rows_choosing({3, 4, 5, 6});
  // Every draft right: the three drafts, then the bonus token from the last row.
  EXPECT_EQ(accept_drafts(logits, {3, 4, 5}, 10, argmax_recording(positions)), (std::vector<int32_t>{3, 4, 5, 6}));
  EXPECT_EQ(positions, (std::vector<int64_t>{10, 11, 12, 13}));
  positions.clear();
  // The second draft wrong: the first kept, the second row's choice is the correction; row 3 unread.
  EXPECT_EQ(accept_drafts(logits, {3, 7, 5}, 10, argmax_recording(positions)), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(positions, (std::vector<int64_t>{10, 11}));
  positions.clear();
  // The first draft wrong, and no drafts at all: one token, as serial decoding.
  EXPECT_EQ(accept_drafts(logits, {0, 4, 5}, 10, argmax_recording(positions)), (std::vector<int32_t>{3}));
  EXPECT_EQ(accept_drafts(rows_choosing({2}), {}, 10, argmax_recording(positions)), (std::vector<int32_t>{2}));
}

TEST(DraftVerify, LookupDraftsTheContinuationOfTheLatestMatch) {
  // Last 3 tokens (4 1 2) never came before; the last 2 (1 2) did, at the start: 3 4 1 follow.
  EXPECT_EQ(lookup_drafts({1, 2, 3, 4, 1, 2}, 3), (std::vector<int32_t>{3, 4, 1}));
  EXPECT_EQ(lookup_drafts({1, 2, 3, 4, 1, 2}, 1), (std::vector<int32_t>{3}));
  // The latest of two matches of the last token (9): 5 after the second one.
  EXPECT_EQ(lookup_drafts({9, 1, 9, 5, 9}, 4), (std::vector<int32_t>{5, 9}));
  EXPECT_TRUE(lookup_drafts({1, 2, 3}, 5).empty());
  EXPECT_TRUE(lookup_drafts({1, 1}, 0).empty());
}

TEST(DraftVerify, AcceptanceLengthCountsTokensPerRound) {
  DraftStats d;
  EXPECT_EQ(d.acceptance_length(), 0.0);
  d.add(5, 2);
  d.add(5, 0);
  d.add(0, 0);
  EXPECT_EQ(d.rounds, 3);
  EXPECT_EQ(d.drafted, 10);
  EXPECT_DOUBLE_EQ(d.acceptance_length(), 5.0 / 3.0);
}

int32_t field(const PhaseRun& run, int64_t row, int f) { return run.statics[row * kStaticsFields + f]; }

TEST(DraftVerify, APlannedRoundKeepsEachSequencesRowsTogether) {
  const std::vector<int32_t> prompt{1, 2};
  serve::PlannerShape shape{{1, 2, 4}, {8}, 1};
  std::vector<serve::SlotView> slots(2);
  slots[0] = {7, 0, false, &prompt, 2, 11, 5, {12, 13}};  // 3 rows from position 5
  slots[1] = {8, 1, false, &prompt, 2, 21, 9, {22, 23}};  // 3 rows from position 9: a window of its own
  serve::PlannedRound planned = serve::plan_round(shape, slots, 0);
  ASSERT_EQ(planned.plan.runs.size(), 2u);
  for (int s = 0; s < 2; ++s) {
    const PhaseRun& run = planned.plan.runs[s];
    EXPECT_EQ(run.phase, "decode.r4");
    EXPECT_EQ(run.logits_rows, (std::vector<int32_t>{0, 1, 2}));
    for (int64_t r = 0; r < 3; ++r) {
      EXPECT_EQ(field(run, r, kStaticSlot), s);
      EXPECT_EQ(field(run, r, kStaticPosition), (s ? 9 : 5) + r);
      EXPECT_EQ(field(run, r, kStaticFirstRow), 0);
      EXPECT_EQ(field(run, r, kStaticToken), (s ? 21 : 11) + r);
    }
    EXPECT_EQ(field(run, 3, kStaticSlot), -1);  // padding
  }
  EXPECT_EQ(planned.padding_rows, 2);
  ASSERT_EQ(planned.owners.size(), 6u);
  EXPECT_EQ(planned.owners[2].id, 7);
  EXPECT_EQ(planned.owners[2].position, 8);  // the row at position 7 chooses the token at 8
  EXPECT_EQ(planned.owners[3].id, 8);

  // A sequence without drafts fills the first window's spare row.
  slots[1].drafts.clear();
  planned = serve::plan_round(shape, slots, 1);
  ASSERT_EQ(planned.plan.runs.size(), 1u);
  EXPECT_EQ(field(planned.plan.runs[0], 3, kStaticSlot), 1);
  EXPECT_EQ(field(planned.plan.runs[0], 3, kStaticFirstRow), 3);
  EXPECT_EQ(planned.padding_rows, 0);
}

}  // namespace
}  // namespace dsv41
