// tests/serve/round_planner_test.cpp — round planning (buckets, padding, chunking, fairness) and the round plan's byte encoding.
#include "runtime/serve/round_planner.h"

#include <gtest/gtest.h>

#include "common/call_list.h"

namespace dsv41::serve {
namespace {

PlannerShape shape() { return {{1, 2, 4}, {8, 4}, 1}; }

struct Seq {
  std::vector<int32_t> prompt;
  SlotView view;
};

Seq decoding(int64_t id, int slot, int64_t position) {
  Seq s{std::vector<int32_t>(static_cast<size_t>(position), 3), {}};
  s.view = {id, slot, false, nullptr, position, static_cast<int32_t>(100 + id), position};
  return s;
}

Seq prefilling(int64_t id, int slot, int64_t length, int64_t done, bool fresh) {
  Seq s{std::vector<int32_t>(static_cast<size_t>(length)), {}};
  for (int64_t i = 0; i < length; ++i) s.prompt[i] = static_cast<int32_t>(10 + i);
  s.view = {id, slot, fresh, nullptr, done, 0, 0};
  return s;
}

std::vector<SlotView> views(std::vector<Seq>& seqs) {
  std::vector<SlotView> out;
  for (Seq& s : seqs) {
    s.view.prompt = &s.prompt;
    out.push_back(s.view);
  }
  return out;
}

const int32_t* row(const PhaseRun& run, int r) { return run.statics.data() + r * kStaticsFields; }

TEST(RoundPlanner, DecodeRowsRunInTheSmallestBucketThatHoldsThemPaddingWritesNothing) {
  std::vector<Seq> seqs = {decoding(1, 0, 5), decoding(2, 3, 9), decoding(3, 1, 7)};
  const PlannedRound r = plan_round(shape(), views(seqs), 4);
  ASSERT_EQ(r.plan.runs.size(), 1u);
  EXPECT_EQ(r.plan.runs[0].phase, "decode.r4");
  EXPECT_EQ(r.padding_rows, 1);
  EXPECT_EQ(row(r.plan.runs[0], 3)[kStaticSlot], -1) << "the padding row is inactive";
  EXPECT_EQ(row(r.plan.runs[0], 1)[kStaticSlot], 3);
  EXPECT_EQ(row(r.plan.runs[0], 1)[kStaticToken], 102);
  EXPECT_EQ(row(r.plan.runs[0], 1)[kStaticPosition], 9);
  EXPECT_EQ(row(r.plan.runs[0], 1)[kStaticFirstRow], 1);
  EXPECT_EQ(r.plan.runs[0].logits_rows, (std::vector<int32_t>{0, 1, 2}));
  ASSERT_EQ(r.owners.size(), 3u);
  EXPECT_EQ(r.owners[1].id, 2);
  EXPECT_EQ(r.owners[1].position, 10) << "the logits of position 9 choose the token at 10";
}

TEST(RoundPlanner, MoreDecodeRowsThanTheLargestBucketSplitIntoSeveralRuns) {
  std::vector<Seq> seqs;
  for (int i = 0; i < 7; ++i) seqs.push_back(decoding(i + 1, i, 4));
  const PlannedRound r = plan_round(shape(), views(seqs), 0);
  ASSERT_EQ(r.plan.runs.size(), 2u);
  EXPECT_EQ(r.plan.runs[0].phase, "decode.r4");
  EXPECT_EQ(r.plan.runs[1].phase, "decode.r4");
  EXPECT_EQ(r.padding_rows, 1);
  EXPECT_EQ(r.owners.size(), 7u);
}

TEST(RoundPlanner, PromptsAreChunkedIntoPlannedSegmentsAndTheLastRowChoosesTheFirstToken) {
  std::vector<Seq> seqs = {prefilling(1, 2, 11, 0, true)};
  PlannedRound r = plan_round(shape(), views(seqs), 0);
  ASSERT_EQ(r.plan.runs.size(), 1u);
  EXPECT_EQ(r.plan.reset_slots, std::vector<int32_t>{2});
  EXPECT_EQ(r.plan.runs[0].phase, "prefill.n8");
  EXPECT_TRUE(r.plan.runs[0].logits_rows.empty()) << "the prompt is not finished";
  EXPECT_EQ(r.prefilled, (std::vector<std::pair<int64_t, int64_t>>{{1, 8}}));
  EXPECT_EQ(row(r.plan.runs[0], 7)[kStaticToken], 17);
  EXPECT_EQ(row(r.plan.runs[0], 7)[kStaticPosition], 7);
  EXPECT_EQ(row(r.plan.runs[0], 7)[kStaticFirstRow], 0);

  seqs[0].view.prefilled = 8;
  seqs[0].view.needs_reset = false;
  r = plan_round(shape(), views(seqs), 1);
  ASSERT_EQ(r.plan.runs.size(), 1u);
  EXPECT_TRUE(r.plan.reset_slots.empty());
  EXPECT_EQ(r.plan.runs[0].phase, "prefill.n4") << "3 rows left: the smallest planned segment holding them";
  EXPECT_EQ(r.padding_rows, 1);
  EXPECT_EQ(row(r.plan.runs[0], 0)[kStaticPosition], 8);
  EXPECT_EQ(row(r.plan.runs[0], 3)[kStaticSlot], -1);
  EXPECT_EQ(r.plan.runs[0].logits_rows, std::vector<int32_t>{2});
  ASSERT_EQ(r.owners.size(), 1u);
  EXPECT_EQ(r.owners[0].position, 11);
}

TEST(RoundPlanner, RunningStreamsAdvanceEveryRoundBesideOnePrefillSegment) {
  std::vector<Seq> seqs = {decoding(1, 0, 5), prefilling(2, 1, 40, 0, true), prefilling(3, 2, 40, 0, true)};
  const PlannedRound r = plan_round(shape(), views(seqs), 0);
  ASSERT_EQ(r.plan.runs.size(), 2u);
  EXPECT_EQ(r.plan.runs[0].phase, "decode.r1") << "the running stream gets its token";
  EXPECT_EQ(r.plan.runs[1].phase, "prefill.n8") << "one segment of the oldest prompt, not the whole of both";
  EXPECT_EQ(r.prefilled, (std::vector<std::pair<int64_t, int64_t>>{{2, 8}}));
  EXPECT_EQ(r.plan.reset_slots, (std::vector<int32_t>{1, 2}));
  PlannerShape two = shape();
  two.prefill_segments = 2;
  EXPECT_EQ(plan_round(two, views(seqs), 0).plan.runs.size(), 3u);
}

TEST(RoundPlan, EncodingRoundTripsAndRefusesDamage) {
  RoundPlan plan;
  plan.round = 0x123456789aULL;
  plan.reset_slots = {0, 3};
  plan.runs.push_back({"decode.r2", {1, 2, 3, 4, -5, -1, 0, 1}, {0}});
  plan.runs.push_back({"prefill.n4", std::vector<int32_t>(16, 7), {}});
  const std::vector<uint8_t> bytes = encode_round_plan(plan);
  auto back = decode_round_plan(bytes);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_TRUE(*back == plan);
  for (size_t cut : {size_t{0}, size_t{3}, size_t{11}, bytes.size() - 1}) {
    auto damaged = decode_round_plan(std::vector<uint8_t>(bytes.begin(), bytes.begin() + cut));
    EXPECT_FALSE(damaged.is_ok()) << "cut at " << cut;
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  auto trailing = decode_round_plan(longer);
  ASSERT_FALSE(trailing.is_ok());
  EXPECT_NE(trailing.status().message().find("trailing"), std::string::npos) << trailing.status().message();
  std::vector<uint8_t> magic = bytes;
  magic[0] ^= 1;
  EXPECT_FALSE(decode_round_plan(magic).is_ok());
}

}  // namespace
}  // namespace dsv41::serve
