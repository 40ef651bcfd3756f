// tests/runtime/bench_draft_test.cpp — `dsv41-rt bench --draft K` without a GPU: the phases a round takes, their
// statics, the round's cost and tokens/s, and the option checks.
#include <gtest/gtest.h>

#include "runtime/gpu/bench_draft.h"
#include "runtime/gpu/bench_runner.h"

namespace dsv41::gpu {
namespace {

Phase phase(const std::string& name, int64_t rows) {
  Phase p;
  p.name = name;
  p.rows = rows;
  p.kind = PhaseKind::Decode;
  return p;
}

BenchOptions draft_options(int64_t drafts) {
  BenchOptions o;
  o.program = "rank0.fb";
  o.synthetic_seed = 7;
  o.rows = {1};
  o.prefill = {};
  o.draft = drafts;
  return o;
}

TEST(BenchDraft, TheRoundIsTheSmallestDraftPhaseAndTheVerificationWindow) {
  const std::vector<Phase> phases = {phase("decode.r1", 1), phase("decode.r8", 8), phase("draft.r10", 10),
                                     phase("draft.r5", 5), phase("prefill.n16", 16)};
  auto draft = draft_phase_of(phases, 5);
  ASSERT_TRUE(draft.is_ok()) << draft.status().message();
  EXPECT_EQ((*draft)->name, "draft.r5");
  EXPECT_NE(draft_phase_of(phases, 6).status().message().find("at most 5"), std::string::npos);
  const std::vector<Phase> serial = {phase("decode.r1", 1), phase("decode.r8", 8)};
  const Status none = draft_phase_of(serial, 3).status();
  EXPECT_NE(none.message().find("no Draft phase (planned: decode.r1, decode.r8)"), std::string::npos) << none.message();
  // The bench picks decode.r1 (--rows), then draft.r5 and the verification window decode.r{K+1}.
  std::vector<Phase> with_verify = phases;
  with_verify.push_back(phase("decode.r4", 4));
  auto picked = pick_bench_phases(with_verify, draft_options(3));
  ASSERT_TRUE(picked.is_ok()) << picked.status().message();
  ASSERT_EQ(picked->size(), 3u);
  EXPECT_EQ((*picked)[1]->name, "draft.r5");
  EXPECT_EQ((*picked)[2]->name, "decode.r4");
  // Without decode.r4 the round verifies in decode.r8, the smallest bucket that holds its rows.
  auto in_eight = pick_bench_phases(phases, draft_options(3));
  ASSERT_TRUE(in_eight.is_ok()) << in_eight.status().message();
  EXPECT_EQ(in_eight->back()->name, "decode.r8");
  const std::vector<Phase> small = {phase("decode.r1", 1), phase("decode.r4", 4), phase("draft.r5", 5)};
  EXPECT_NE(pick_bench_phases(small, draft_options(5)).status().message().find("no decode phase holds the 6 rows"),
            std::string::npos);
}

TEST(BenchDraft, RoundPhasesAreOneSequenceEach) {
  const BenchOptions o = draft_options(5);
  const std::vector<Phase> phases = {phase("decode.r1", 1), phase("decode.r6", 6), phase("decode.r8", 8),
                                     phase("draft.r5", 5)};
  EXPECT_EQ(draft_sequence_rows(phases[3], phases, o), 5);
  EXPECT_EQ(draft_sequence_rows(phases[1], phases, o), 6);
  EXPECT_EQ(draft_sequence_rows(phases[2], phases, o), 0);
  EXPECT_EQ(draft_sequence_rows(phases[1], phases, draft_options(0)), 0);
  auto statics = bench_statics(phase("decode.r6", 6), 100, 16, 4096, 1000, 6);
  ASSERT_TRUE(statics.is_ok()) << statics.status().message();
  for (int64_t r = 0; r < 6; ++r) {
    EXPECT_EQ((*statics)[r * kStaticsFields + kStaticSlot], 0) << "row " << r;
    EXPECT_EQ((*statics)[r * kStaticsFields + kStaticPosition], 100 + r) << "row " << r;
    EXPECT_EQ((*statics)[r * kStaticsFields + kStaticFirstRow], 0) << "row " << r;
  }
  auto spread = bench_statics(phase("decode.r6", 6), 100, 16, 4096, 1000);  // the usual layout: a slot a row
  ASSERT_TRUE(spread.is_ok());
  EXPECT_EQ((*spread)[5 * kStaticsFields + kStaticSlot], 5);
}

TEST(BenchDraft, TokensPerSecondAreAcceptanceOverTheRoundTime) {
  BenchOptions o = draft_options(5);
  o.acceptance = 3;
  std::vector<PhaseMeasure> measured(3);
  measured[0].phase = "decode.r1", measured[0].ms.median = 2.0;
  measured[1].phase = "draft.r5", measured[1].ms.median = 1.5;
  measured[2].phase = "decode.r6", measured[2].ms.median = 2.5;
  auto round = draft_round(measured, o, "draft.r5", "decode.r6");
  ASSERT_TRUE(round.is_ok()) << round.status().message();
  EXPECT_DOUBLE_EQ(round->round_ms(), 4.0);
  EXPECT_DOUBLE_EQ(round->tokens_per_s(3), 750.0);  // 3 tokens every 4 ms
  EXPECT_DOUBLE_EQ(round->serial_ms, 2.0);
  EXPECT_DOUBLE_EQ(round->break_even, 2.0);  // 2 tokens a round match 1 token every 2 ms
  BenchReport report;
  report.draft = *round;
  const std::string text = draft_text(report);
  EXPECT_NE(text.find("draft.r5 1.500 ms + decode.r6 2.500 ms = 4.000 ms a round"), std::string::npos) << text;
  EXPECT_NE(text.find("at A = 3.00 (--acceptance): 750.0 tokens/s, against serial decode.r1 2.000 ms = 500.0 tokens/s "
                      "(1.50x)"),
            std::string::npos)
      << text;
  measured[2].error = "boom";
  EXPECT_NE(draft_round(measured, o, "draft.r5", "decode.r6").status().message().find("decode.r6 failed: boom"),
            std::string::npos);
  measured.pop_back();
  EXPECT_NE(draft_round(measured, o, "draft.r5", "decode.r6").status().message().find("decode.r6 was not measured"),
            std::string::npos);
}

TEST(BenchDraft, OptionsAreCheckedNamingTheFlag) {
  EXPECT_TRUE(check_bench_options(draft_options(5)).is_ok());
  EXPECT_NE(check_bench_options(draft_options(-1)).message().find("--draft -1"), std::string::npos);
  BenchOptions o = draft_options(2);
  o.acceptance = 3.5;
  EXPECT_NE(check_bench_options(o).message().find("--acceptance 3.5: a round of 2 drafts yields 1 to 3"),
            std::string::npos)
      << check_bench_options(o).message();
  o.acceptance = 0.5;
  EXPECT_FALSE(check_bench_options(o).is_ok());
}

}  // namespace
}  // namespace dsv41::gpu
