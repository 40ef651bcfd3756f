// tests/draft/draft_serve_e2e.cpp — the scheduler with drafting (DSpark's drafts and planted ones): 1 and 8 concurrent streams, greedy and seeded sampling, equal serial decoding token for token.
#include <gtest/gtest.h>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/generate.h"
#include "runtime/serve/scheduler.h"
#include "runtime/world.h"
#include "tests/draft/oracle_drafter.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::test {
namespace {

struct Served {
  std::vector<std::vector<int32_t>> tokens;  // per request, in submission order
  uint64_t rounds = 0, drafted = 0, accepted = 0;
  std::string metrics;
};

std::vector<int32_t> prompt_of(int i) {
  std::vector<int32_t> p;
  for (int t = 0; t < 5 + i % 3; ++t) p.push_back(20 + 7 * i + t);
  return p;
}

// Serves `count` requests at once (all submitted before the first round ends) with up to `drafts`
// drafts per round from `drafter`, on a world shared by every run (a new request resets its slot).
Served serve(World& world, int count, int64_t drafts, const Drafter& drafter, bool sampled, const DsparkPlan& dspark = {}) {
  Served out;
  serve::Metrics metrics;
  serve::SchedulerOptions options;
  options.draft_tokens = drafts;
  options.drafter = drafter;
  options.dspark = dspark;
  std::vector<std::shared_ptr<serve::RequestStream>> streams;
  {
    serve::Scheduler scheduler(world, metrics, options);
    for (int i = 0; i < count; ++i) {
      serve::GenerationRequest r;
      r.prompt = prompt_of(i);
      r.max_tokens = 6 + i % 3;
      r.ignore_eos = true;
      r.sampling.temperature = sampled ? 0.9f : 0.0f;
      r.sampling.top_k = sampled ? 40 : 0;
      r.sampling.seed = 1000 + i;
      auto submitted = scheduler.submit(r);
      EXPECT_TRUE(std::holds_alternative<std::shared_ptr<serve::RequestStream>>(submitted));
      if (auto* s = std::get_if<std::shared_ptr<serve::RequestStream>>(&submitted)) streams.push_back(*s);
    }
    for (const auto& stream : streams) {
      std::vector<int32_t> ids;
      std::optional<serve::Finish> finished;
      while (!finished)
        for (const auto& t : stream->wait(std::chrono::milliseconds(200), finished)) ids.push_back(t.id);
      EXPECT_EQ(finished->reason, "length") << finished->error;
      out.tokens.push_back(ids);
    }
  }
  out.rounds = metrics.draft_rounds, out.drafted = metrics.drafted_tokens, out.accepted = metrics.accepted_tokens;
  out.metrics = metrics.render();
  return out;
}

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
    const Served serial = serve(**world, count, 0, {}, sampled);
    ASSERT_EQ(serial.tokens.size(), static_cast<size_t>(count));
    EXPECT_EQ(serial.rounds, 0u);
    std::vector<std::vector<int32_t>> whole;
    for (int i = 0; i < count; ++i) {
      whole.push_back(prompt_of(i));
      whole.back().insert(whole.back().end(), serial.tokens[i].begin(), serial.tokens[i].end());
    }
    uint64_t accepted = 0, rejected = 0, dspark_drafted = 0;
    for (int64_t k = 1; k <= 5; ++k) {
      // The programs' own DSpark draft phase (no drafter given): one Draft phase for every stream a round.
      const Served by_dspark = serve(**world, count, k, {}, sampled, *dspark);
      EXPECT_EQ(by_dspark.tokens, serial.tokens) << count << " streams, dspark drafts, draft tokens " << k;
      dspark_drafted += by_dspark.drafted;
      const Served drafted = serve(**world, count, k, oracle_drafter(whole, 1280), sampled);
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
