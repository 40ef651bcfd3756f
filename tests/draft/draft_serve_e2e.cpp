// tests/draft/draft_serve_e2e.cpp — the scheduler with drafting (DSpark's drafts and planted ones): 1 and 8 concurrent streams, greedy and seeded sampling, equal serial decoding token for token.
#include <gtest/gtest.h>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/generate.h"
#include "runtime/serve/scheduler.h"
#include "runtime/world.h"
#include "tests/draft/oracle_drafter.h"
#include "tests/draft/served_requests.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::test {
namespace {

class DraftedServing : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(Sampling, DraftedServing, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "seeded" : "greedy"; });

TEST_P(DraftedServing, OneAndEightStreamsEqualSerialDecodingForEveryDraftCount) {
  TempDir dir("draft_serve");
  const fs::path& pack = fixture_pack("dsv41-tiny-draft", "release");
  ServingSettings s = small_settings();
  s.context = 16;
  s.slots = 8;
  s.decode_rows = {1, 2, 4, 8, 16};
  s.draft_tokens = 5;
  write_programs(dir.path(), pack, 2, s);
  auto programs = load_world_programs(dir.path().string());
  ASSERT_TRUE(programs.is_ok()) << programs.status().message();
  auto dspark = dspark_plan(programs->front());
  ASSERT_TRUE(dspark.is_ok()) << dspark.status().message();
  ASSERT_TRUE(dspark->enabled()) << "the drafting programs of the tiny draft model have Draft phases";
  auto backend = cpu::make_backend({}, pack.string(), 2);
  ASSERT_TRUE(backend.is_ok()) << backend.status().message();
  auto world = World::start(std::move(programs).value(), std::move(backend).value());
  ASSERT_TRUE(world.is_ok()) << world.status().message();
  const bool sampled = GetParam();
  for (int count : {1, 8}) {
    const Served serial = serve_requests(**world, count, 0, {}, sampled);
    ASSERT_EQ(serial.tokens.size(), static_cast<size_t>(count));
    EXPECT_EQ(serial.rounds, 0u);
    std::vector<std::vector<int32_t>> whole;
    for (int i = 0; i < count; ++i) {
      whole.push_back(served_prompt(i));
      whole.back().insert(whole.back().end(), serial.tokens[i].begin(), serial.tokens[i].end());
    }
    uint64_t accepted = 0, rejected = 0, dspark_drafted = 0;
    for (int64_t k = 1; k <= 5; ++k) {
      // The programs' own DSpark draft phase (no drafter given): one Draft phase for every stream a round.
      const Served by_dspark = serve_requests(**world, count, k, {}, sampled, *dspark);
      EXPECT_EQ(by_dspark.tokens, serial.tokens) << count << " streams, dspark drafts, draft tokens " << k;
      dspark_drafted += by_dspark.drafted;
      const Served drafted = serve_requests(**world, count, k, oracle_drafter(whole, 1280), sampled);
      EXPECT_EQ(drafted.tokens, serial.tokens) << count << " streams, draft tokens " << k;
      accepted += drafted.accepted;
      rejected += drafted.drafted - drafted.accepted;
      EXPECT_NE(drafted.metrics.find("dsv41_request_acceptance_length_count " + std::to_string(count)), std::string::npos)
          << drafted.metrics;
    }
    EXPECT_GT(accepted, 0u) << count << " streams";
    EXPECT_GT(rejected, 0u) << count << " streams";
    EXPECT_GT(dspark_drafted, 0u) << count << " streams";
  }
}

}  // namespace
}  // namespace dsv41::test
