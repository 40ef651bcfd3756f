// tests/cuda/cuda_engram_test.cpp — the tiny Engram fixture on the CUDA backend against the CPU backend (label gpu;
// skips without a driver): worlds 1-4 as threads on device 0, check mode (activations f32), the 40-token prompt
// in prefill segments of 16 (so the lookback carries across segments and into decode) and 32 decoded tokens:
// logits within 1e-3·max|logit| of the CPU at every step, greedy tokens identical, graph replay equal to
// --eager bit for bit. And --synthetic-weights with Engram (its host tables made row by row from the seed)
// boots without the shards and runs cleanly.
//
// The token map: the fixture's own comes from its tokenizer.json through ICU (compiler/tokens), which this
// binary cannot carry to the GPU machine (no Debian shared libraries there). A stand-in map of the same
// size into the same compressed range is planned instead: both backends run the same program, so the
// CUDA path is tested exactly as with the real map (whose hash tests/engram pins on the CPU).
#include <cmath>
#include <cstdio>
#include <optional>

#include <gtest/gtest.h>

#include "compiler/program/rank_planner.h"
#include "runtime/generate.h"
#include "tests/cuda/cuda_test_device.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::cuda_test {
namespace {

namespace fs = std::filesystem;

// vocab_size 1280 ids into engram_compressed_vocab_size 1070 compressed ids, with collisions as a
// real map has (distinct spellings that normalise alike).
std::vector<int32_t> stand_in_token_map() {
  std::vector<int32_t> map(1280);
  for (int32_t t = 0; t < 1280; ++t) map[t] = (t * 7 + 3) % 1070;
  return map;
}

void plan_engram_world(int world, const fs::path& dir) {
  plan_h200(test::fixture_pack("dsv41-tiny-engram", "release"), world, test_settings(DType::F32), dir,
            stand_in_token_map());
}

// `log`: the boot reports (with the line naming the Engram rows' source and buffers), or null.
Result<GenerateResult> on_cuda(GenerateOptions o, bool eager, std::FILE* log,
                               std::optional<uint64_t> synthetic_seed = std::nullopt) {
  gpu::CudaBackendOptions cuda;
  cuda.model_dir = o.model_dir;
  cuda.eager = eager;
  cuda.synthetic_seed = synthetic_seed;
  cuda.log = log;
  return generate_on_cuda(std::move(o), cuda);
}

using CudaEngram = DeviceTest;

TEST_F(CudaEngram, CheckModeMatchesTheCpuAtEveryStepAndGraphsEqualEagerAtWorldsOneToFour) {
  test::TempDir dir("cuda_engram");
  const fs::path& pack = test::fixture_pack("dsv41-tiny-engram", "release");
  for (int world = 1; world <= 4; ++world) {
    SCOPED_TRACE(::testing::Message() << "dsv41-tiny-engram, world " << world << ", activations f32");
    const fs::path programs = dir / ("w" + std::to_string(world));
    plan_engram_world(world, programs);
    const GenerateOptions o = options_for(programs, pack);
    auto cpu = generate(o);
    ASSERT_TRUE(cpu.is_ok()) << cpu.status().message();
    auto graphs = on_cuda(o, false, world == 4 ? stdout : nullptr);
    ASSERT_TRUE(graphs.is_ok()) << graphs.status().message();
    auto eager = on_cuda(o, true, nullptr);
    ASSERT_TRUE(eager.is_ok()) << eager.status().message();
    ASSERT_EQ(graphs->tokens.size(), static_cast<size_t>(kDecoded));
    EXPECT_EQ(graphs->tokens, cpu->tokens);
    EXPECT_EQ(eager->tokens, graphs->tokens);
    const double worst = expect_check_mode(*cpu, *graphs, *eager);
    std::printf(
        "[measured] dsv41-tiny-engram world %d f32: %zu tokens identical to the CPU's, worst "
        "|cuda-cpu|/max|cpu| %.2e over %zu steps, graphs == eager\n",
        world, graphs->tokens.size(), worst, cpu->logits.size());
  }
}

// The host tables synthesised from the seed (no shard exists in the folder): every phase runs without
// an error word and the logits are finite.
TEST_F(CudaEngram, SyntheticWeightsSynthesiseTheHostTablesAndRunCleanly) {
  test::TempDir dir("cuda_engram_synthetic");
  plan_engram_world(2, dir / "programs");
  GenerateOptions o = options_for(dir / "programs", dir / "no-shards-here");
  o.max_tokens = 4;
  auto result = on_cuda(o, false, stdout, 11);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  ASSERT_EQ(result->tokens.size(), 4u);
  for (const auto& row : result->logits)
    for (float v : row) ASSERT_TRUE(std::isfinite(v));
  std::printf("[measured] dsv41-tiny-engram synthetic weights and tables, world 2: tokens %d %d %d %d\n",
              result->tokens[0], result->tokens[1], result->tokens[2], result->tokens[3]);
}

}  // namespace
}  // namespace dsv41::cuda_test
