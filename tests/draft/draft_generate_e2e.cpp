// tests/draft/draft_generate_e2e.cpp — drafted generation on the tiny draft fixture gives serial decoding's tokens and logits, drafts accepted or not.
#include <gtest/gtest.h>

#include "runtime/dspark_drafter.h"
#include "runtime/generate.h"
#include "tests/draft/oracle_drafter.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::test {
namespace {

constexpr int64_t kDrafts = 5;

ServingSettings draft_settings(int64_t drafts) {
  ServingSettings s = small_settings();
  s.decode_rows = {1, 2, 4, 8};
  s.draft_tokens = drafts;
  return s;
}

GenerateOptions options(const fs::path& programs, int64_t drafts) {
  GenerateOptions o;
  o.program_dir = programs.string();
  o.model_dir = fixture_pack("dsv41-tiny-draft", "release").string();
  // Repeats, so prompt lookup drafts something from the first round on.
  o.prompt = {5, 6, 7, 8, 9, 5, 6, 7, 8, 9, 5, 6};
  o.max_tokens = 12;
  o.stop_at_eos = false;
  o.draft_tokens = drafts;
  return o;
}

// World 1 (the scheduler's test runs world 2).
TEST(DraftedGeneration, EveryDraftCountGivesSerialDecodingsTokens) {
  TempDir dir("draft_generate");
  const fs::path& pack = fixture_pack("dsv41-tiny-draft", "release");
  write_programs(dir.path() / "serial", pack, 1, draft_settings(0));
  write_programs(dir.path() / "drafting", pack, 1, draft_settings(kDrafts));
  auto serial = generate(options(dir.path() / "serial", 0));
  ASSERT_TRUE(serial.is_ok()) << serial.status().message();
  ASSERT_EQ(serial->tokens.size(), 12u);
  EXPECT_EQ(serial->drafting.rounds, 0);
  std::vector<int32_t> whole = options(dir.path(), 0).prompt;
  whole.insert(whole.end(), serial->tokens.begin(), serial->tokens.end());
  int64_t accepted = 0, rejected = 0;
  // k = 0 through the drafting programs (longer rings), k = 1..5 with planted mistakes, and the
  // programs' own DSpark draft phase (k = 6 below stands for it with 5).
  for (int64_t k = 0; k <= kDrafts + 1; ++k) {
    GenerateOptions o = options(dir.path() / "drafting", std::min(k, kDrafts));
    if (k <= kDrafts) o.drafter = oracle_drafter({whole}, 1280);
    auto drafted = generate(o);
    ASSERT_TRUE(drafted.is_ok()) << "draft tokens " << k << ": " << drafted.status().message();
    EXPECT_EQ(drafted->tokens, serial->tokens) << "draft tokens " << k;
    ASSERT_EQ(drafted->logits.size(), serial->logits.size()) << "draft tokens " << k;
    for (size_t i = 0; i < serial->logits.size(); ++i)
      EXPECT_EQ(drafted->logits[i], serial->logits[i]) << "draft tokens " << k << ", logits of token " << i;
    const DraftStats& d = drafted->drafting;
    EXPECT_EQ(d.accepted + d.rounds, k == 0 ? 0 : 11) << "every token after the first comes from a round";
    accepted += d.accepted;
    rejected += d.drafted - d.accepted;
  }
  // Both paths ran: drafts kept (rows already in the state) and drafts rewound.
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

// The model's own draft blocks propose (no drafter given), at worlds 1 and 3 (an uneven split of the
// draft blocks' heads and experts): every draft count keeps serial decoding's tokens and logits, and
// the acceptance is reported.
TEST(DraftedGeneration, DsparkDraftsKeepSerialDecodingsTokens) {
  TempDir dir("draft_dspark");
  const fs::path& pack = fixture_pack("dsv41-tiny-draft", "release");
  for (int world : {1, 3}) {
    const fs::path serial_dir = dir.path() / ("serial" + std::to_string(world));
    const fs::path drafting_dir = dir.path() / ("drafting" + std::to_string(world));
    write_programs(serial_dir, pack, world, draft_settings(0));
    write_programs(drafting_dir, pack, world, draft_settings(kDrafts));
    auto rank0 = ProgramFile::load((drafting_dir / "rank0.fb").string());
    ASSERT_TRUE(rank0.is_ok()) << rank0.status().message();
    auto dspark = dspark_plan(*rank0);
    ASSERT_TRUE(dspark.is_ok()) << dspark.status().message();
    EXPECT_STREQ(dspark->drafter(), "dspark");  // generate drafts with the Draft phases when there are some
    EXPECT_EQ(dspark->rows, (std::vector<int64_t>{5, 10})) << "one and both slots (small settings: 2)";
    auto serial = generate(options(serial_dir, 0));
    ASSERT_TRUE(serial.is_ok()) << serial.status().message();
    for (int64_t k = 1; k <= kDrafts; ++k) {
      auto drafted = generate(options(drafting_dir, k));
      ASSERT_TRUE(drafted.is_ok()) << "world " << world << ", draft tokens " << k << ": " << drafted.status().message();
      EXPECT_EQ(drafted->tokens, serial->tokens) << "world " << world << ", draft tokens " << k;
      EXPECT_EQ(drafted->logits, serial->logits) << "world " << world << ", draft tokens " << k;
      const DraftStats& d = drafted->drafting;
      EXPECT_EQ(d.accepted + d.rounds, 11) << "every token after the first comes from a round";
      EXPECT_GT(d.drafted, 0) << "world " << world << ", draft tokens " << k;
      std::printf("dspark drafts, world %d, k %lld: %lld rounds, %lld drafted, %lld accepted, acceptance length %.2f\n",
                  world, static_cast<long long>(k), static_cast<long long>(d.rounds), static_cast<long long>(d.drafted),
                  static_cast<long long>(d.accepted), d.acceptance_length());
    }
  }
}

TEST(DraftedGeneration, RefusesMoreDraftsThanPlanned) {
  TempDir dir("draft_refuse");
  write_programs(dir.path(), fixture_pack("dsv41-tiny-draft", "release"), 1, draft_settings(2));
  auto result = generate(options(dir.path(), 3));
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("draft tokens 3: must be between 0 and the 2 planned"), std::string::npos)
      << result.status().message();
}

}  // namespace
}  // namespace dsv41::test
