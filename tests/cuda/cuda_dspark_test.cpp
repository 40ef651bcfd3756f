// tests/cuda/cuda_dspark_test.cpp — DSpark drafting on the CUDA backend (label gpu; skips without a
// driver): the tiny draft fixture planned for h200 with --draft-tokens 5 carries Draft phases (the
// stream_mean, block_attention and markov_logits kernels), and the model's own drafts, 1..5 a round,
// give serial decoding's tokens: through generate at worlds 1 and 2 (rank threads; check mode, logits
// within 1e-3·max|logit| of serial decoding on the CPU), and through the scheduler at world 2 with 1
// and 8 concurrent streams, greedy and seeded sampling (bf16 activations, as served).
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "runtime/dspark_drafter.h"
#include "runtime/generate.h"
#include "runtime/gpu/cuda_backend.h"
#include "tests/cuda/cuda_test_device.h"
#include "tests/draft/served_requests.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::cuda_test {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kDrafts = 5;

gpu::CudaBackendOptions cuda_options(const fs::path& pack) {
  gpu::CudaBackendOptions cuda;
  cuda.model_dir = pack.string();
  cuda.log = nullptr;
  return cuda;
}

class CudaDspark : public DeviceTest {};

TEST_F(CudaDspark, TheModelsOwnDraftsGiveSerialDecodingsTokensAtWorldsOneAndTwo) {
  test::TempDir dir("cuda_dspark");
  const fs::path& pack = test::fixture_pack("dsv41-tiny-draft", "release");
  for (int world : {1, 2}) {
    ServingSettings s = test_settings(DType::F32);  // check mode: compared with the CPU below
    s.decode_rows = {1, 2, 4, 8};
    s.draft_tokens = kDrafts;
    const fs::path programs = dir / ("w" + std::to_string(world));
    plan_h200(pack, world, s, programs);
    auto plans = load_world_programs(programs.string());
    ASSERT_TRUE(plans.is_ok()) << plans.status().message();
    auto dspark = dspark_plan(plans->front());
    ASSERT_TRUE(dspark.is_ok()) << dspark.status().message();
    ASSERT_TRUE(dspark->enabled()) << "an h200 plan of a model with draft blocks has Draft phases";
    GenerateOptions o = options_for(programs, pack);
    o.max_tokens = 16;
    auto cpu = generate(o);  // serial decoding on the CPU: the oracle
    ASSERT_TRUE(cpu.is_ok()) << cpu.status().message();
    auto serial = generate_on_cuda(o, cuda_options(pack));
    ASSERT_TRUE(serial.is_ok()) << "world " << world << ": " << serial.status().message();
    EXPECT_EQ(serial->tokens, cpu->tokens) << "world " << world << ", serial decoding on the GPU";
    int64_t drafted = 0;
    for (int64_t k = 1; k <= kDrafts; ++k) {
      o.draft_tokens = k;  // no drafter given: the programs' Draft phases
      auto run = generate_on_cuda(o, cuda_options(pack));
      ASSERT_TRUE(run.is_ok()) << "world " << world << ", " << k << " drafts: " << run.status().message();
      EXPECT_EQ(run->drafter, "dspark") << "world " << world;
      EXPECT_EQ(run->tokens, serial->tokens) << "world " << world << ", " << k << " drafts";
      ASSERT_EQ(run->logits.size(), cpu->logits.size());
      double worst = 0;
      for (size_t i = 0; i < cpu->logits.size(); ++i)
        for (size_t v = 0; v < cpu->logits[i].size(); ++v)
          worst = std::max(
              worst, static_cast<double>(std::fabs(run->logits[i][v] - cpu->logits[i][v]) / max_abs(cpu->logits[i])));
      EXPECT_LE(worst, 1e-3) << "world " << world << ", " << k << " drafts";
      drafted += run->drafting.drafted;
      std::printf(
          "[measured] world %d, DSpark on the GPU, %lld drafts a round: %zu tokens equal to serial decoding, "
          "worst |diff|/max|logit| against the CPU %.2e, %lld rounds, %lld drafted, %lld accepted\n",
          world, static_cast<long long>(k), run->tokens.size(), worst, static_cast<long long>(run->drafting.rounds),
          static_cast<long long>(run->drafting.drafted), static_cast<long long>(run->drafting.accepted));
    }
    EXPECT_GT(drafted, 0) << "world " << world << ": the Draft phases proposed nothing";
  }
}

TEST_F(CudaDspark, OneAndEightStreamsGreedyAndSeededEqualSerialDecodingForEveryDraftCount) {
  test::TempDir dir("cuda_dspark_serve");
  const fs::path& pack = test::fixture_pack("dsv41-tiny-draft", "release");
  ServingSettings s;
  s.context = 16;
  s.slots = 8;
  s.prefill_rows = {8, 4};
  s.decode_rows = {1, 2, 4, 8, 16};
  s.draft_tokens = kDrafts;
  plan_h200(pack, 2, s, dir.path());
  auto programs = load_world_programs(dir.path().string());
  ASSERT_TRUE(programs.is_ok()) << programs.status().message();
  auto dspark = dspark_plan(programs->front());
  ASSERT_TRUE(dspark.is_ok()) << dspark.status().message();
  ASSERT_TRUE(dspark->enabled());
  auto backend = gpu::CudaBackend::open(2, cuda_options(pack));
  ASSERT_TRUE(backend.is_ok()) << backend.status().message();
  auto world = World::start(std::move(programs).value(), std::move(backend).value());
  ASSERT_TRUE(world.is_ok()) << world.status().message();
  for (bool sampled : {false, true})
    for (int count : {1, 8}) {
      const test::Served serial = test::serve_requests(**world, count, 0, {}, sampled);
      ASSERT_EQ(serial.tokens.size(), static_cast<size_t>(count));
      uint64_t drafted = 0;
      for (int64_t k = 1; k <= kDrafts; ++k) {
        const test::Served run = test::serve_requests(**world, count, k, {}, sampled, *dspark);
        EXPECT_EQ(run.tokens, serial.tokens)
            << count << " streams, " << (sampled ? "seeded" : "greedy") << ", " << k << " drafts";
        EXPECT_NE(run.metrics.find("dsv41_request_acceptance_length_count " + std::to_string(count)), std::string::npos)
            << run.metrics;
        drafted += run.drafted;
        std::printf(
            "[measured] world 2 on the GPU, %d stream%s, %s, %lld drafts: %llu rounds, %llu drafted, %llu "
            "accepted\n",
            count, count == 1 ? "" : "s", sampled ? "seeded" : "greedy", static_cast<long long>(k),
            static_cast<unsigned long long>(run.rounds), static_cast<unsigned long long>(run.drafted),
            static_cast<unsigned long long>(run.accepted));
      }
      EXPECT_GT(drafted, 0u) << count << " streams";
    }
}

}  // namespace
}  // namespace dsv41::cuda_test
