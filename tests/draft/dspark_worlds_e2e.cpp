// tests/draft/dspark_worlds_e2e.cpp — the DSpark draft phase in check mode agrees across worlds 1-4 (heads, groups and expert columns split unevenly).
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "common/call_list.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/dspark_drafter.h"
#include "runtime/world.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::test {
namespace {

constexpr int64_t kPrompt = 8, kBlock = 5;  // dsv41-tiny-draft's dspark_block_size
constexpr int32_t kNoise = 1279;             // its dspark_noise_token_id

// Prefills a prompt in slot 0, then runs draft.r5 from a pending token: the block's five rows of
// Markov-adjusted logits (rank 0's).
std::vector<std::vector<float>> draft_logits(int world) {
  const fs::path& pack = fixture_pack("dsv41-tiny-draft", "release");
  ServingSettings s = small_settings();
  s.activations = DType::F32;  // the check mode: no bf16 rounding, so split sums agree closely
  s.decode_rows = {1, 2, 4, 8};
  s.draft_tokens = kBlock;
  std::vector<ProgramFile> programs = plan_programs(pack, world, s);
  if (programs.empty()) return {};
  auto dspark = dspark_plan(programs[0]);
  EXPECT_TRUE(dspark.is_ok() && dspark->block == kBlock && dspark->noise == kNoise && dspark->enabled());
  auto backend = cpu::make_backend({}, pack.string(), world);
  EXPECT_TRUE(backend.is_ok()) << backend.status().message();
  auto started = World::start(std::move(programs), std::move(backend).value());
  EXPECT_TRUE(started.is_ok()) << started.status().message();
  if (!started.is_ok()) return {};
  World& w = **started;
  auto rows_of = [](const std::vector<int32_t>& tokens, int64_t position, int64_t rows) {
    std::vector<int32_t> statics(static_cast<size_t>(rows * kStaticsFields), 0);
    for (int64_t r = 0; r < rows; ++r) {
      int32_t* row = statics.data() + r * kStaticsFields;
      const bool active = r < static_cast<int64_t>(tokens.size());
      row[kStaticToken] = active ? tokens[r] : 0;
      row[kStaticSlot] = active ? 0 : -1;
      row[kStaticPosition] = static_cast<int32_t>(position + r);
    }
    return statics;
  };
  RoundPlan prefill{0, {0}, {PhaseRun{"prefill.n8", rows_of({5, 6, 7, 8, 9, 40, 41, 42}, 0, kPrompt), {}}}};
  auto done = w.run(prefill);
  EXPECT_TRUE(done.is_ok()) << done.status().message();
  RoundPlan draft{1, {}, {PhaseRun{"draft.r5", rows_of({17, kNoise, kNoise, kNoise, kNoise}, kPrompt, kBlock), {0, 1, 2, 3, 4}}}};
  auto logits = w.run(draft);
  EXPECT_TRUE(logits.is_ok()) << logits.status().message();
  return logits.is_ok() ? std::move(logits).value() : std::vector<std::vector<float>>{};
}

TEST(DsparkDraftPhase, AgreesAcrossWorldsInCheckMode) {
  const std::vector<std::vector<float>> one = draft_logits(1);
  ASSERT_EQ(one.size(), static_cast<size_t>(kBlock));
  float top = 0;
  for (const auto& row : one)
    for (float v : row) top = std::max(top, std::fabs(v));
  ASSERT_GT(top, 0.0f);
  for (int world = 2; world <= 4; ++world) {
    const std::vector<std::vector<float>> other = draft_logits(world);
    ASSERT_EQ(other.size(), one.size()) << "world " << world;
    for (size_t r = 0; r < one.size(); ++r) {
      float worst = 0;
      for (size_t v = 0; v < one[r].size(); ++v) worst = std::max(worst, std::fabs(one[r][v] - other[r][v]));
      EXPECT_LE(worst, 1e-4f * top) << "world " << world << ", draft row " << r << " (max |logit| " << top << ")";
    }
  }
}

}  // namespace
}  // namespace dsv41::test
