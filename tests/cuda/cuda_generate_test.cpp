// tests/cuda/cuda_generate_test.cpp — `generate` on the CUDA backend against the CPU backend, end to end
// on the tiny fixture (label gpu; skips without a driver): worlds 1-4 as threads on device 0, both pack
// formats, a 40-token prompt (the 16-row window wraps, compressed entries outnumber index_topk 8 and
// the candidate mask is active) and 32 decoded tokens. Check mode (activations f32): logits within
// 1e-3·max|logit| of the CPU at every step, greedy tokens identical. BF16 mode: first token identical
// and the first step close (see that test for why not more). Graph replay equals --eager bit for bit, and every
// rank holds the same bits after the exchanges.
//
// Environment: DSV41_CACHE is the NVRTC cache folder the plans compile into.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "compiler/program/rank_planner.h"
#include "compiler/plan/targets.h"
#include "runtime/generate.h"
#include "runtime/gpu/cuda_backend.h"
#include "tests/cuda/cuda_test_device.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::cuda_test {
namespace {

namespace fs = std::filesystem;

Result<GenerateResult> on_cuda(GenerateOptions o, bool eager, std::FILE* log) {
  gpu::CudaBackendOptions cuda;
  cuda.model_dir = o.model_dir;
  cuda.eager = eager;
  cuda.log = log;
  o.backend = [cuda](int world) -> Result<std::unique_ptr<Backend>> {
    DSV41_ASSIGN_OR_RETURN(auto backend, gpu::CudaBackend::open(world, cuda));
    return std::unique_ptr<Backend>(std::move(backend));
  };
  return generate(o);
}

class CudaGenerate : public ::testing::Test {
 protected:
  void SetUp() override {
    device_ = open_test_device();
    if (!device_.driver) GTEST_SKIP() << device_.skip;
  }
  TestDevice device_;
};

TEST_F(CudaGenerate, CheckModeMatchesTheCpuAtEveryStepAndGraphsEqualEager) {
  test::TempDir dir("cuda_check");
  for (const std::string format : {"release", "bf16"}) {
    const fs::path& pack = test::tiny_pack(format);
    for (int world = 1; world <= 4; ++world) {
      SCOPED_TRACE(::testing::Message() << "pack " << format << ", world " << world << ", activations f32");
      const fs::path programs = dir / (format + "-f32-w" + std::to_string(world));
      plan_world(pack, world, DType::F32, programs);
      const GenerateOptions o = options_for(programs, pack);
      auto cpu = generate(o);
      ASSERT_TRUE(cpu.is_ok()) << cpu.status().message();
      auto graphs = on_cuda(o, false, world == 4 && format == "release" ? stdout : nullptr);
      ASSERT_TRUE(graphs.is_ok()) << graphs.status().message();
      auto eager = on_cuda(o, true, nullptr);
      ASSERT_TRUE(eager.is_ok()) << eager.status().message();
      ASSERT_EQ(graphs->tokens.size(), static_cast<size_t>(kDecoded));
      EXPECT_EQ(graphs->tokens, cpu->tokens);
      ASSERT_EQ(graphs->logits.size(), cpu->logits.size());
      double worst = 0;
      for (size_t step = 0; step < cpu->logits.size(); ++step) {
        const std::vector<float>& c = cpu->logits[step];
        const std::vector<float>& g = graphs->logits[step];
        ASSERT_EQ(g.size(), c.size());
        const float bound = 1e-3f * max_abs(c);
        for (size_t v = 0; v < c.size(); ++v) {
          worst = std::max(worst, static_cast<double>(std::fabs(g[v] - c[v]) / max_abs(c)));
          ASSERT_LE(std::fabs(g[v] - c[v]), bound) << "step " << step << " id " << v << ": cuda " << g[v] << ", cpu "
                                                   << c[v] << ", max|cpu| " << max_abs(c);
        }
        ASSERT_EQ(0, std::memcmp(g.data(), eager->logits[step].data(), g.size() * sizeof(float)))
            << "step " << step << ": graph replay and --eager differ";
      }
      EXPECT_EQ(eager->tokens, graphs->tokens);
      std::printf("pack %s world %d f32: %zu tokens identical, worst |cuda-cpu|/max|cpu| %.2e, graphs == eager\n",
                  format.c_str(), world, graphs->tokens.size(), worst);
    }
  }
}

// BF16 mode rounds where docs/model.md says, and the GPU sums in another order than the CPU, so a
// value near a rounding boundary can round the other way and the two drift apart, as the CPU's own
// worlds do: on the bf16 pack and generate_test's 11-token prompt the CPU's world 4 picks another
// second token than its worlds 1-3 (318 against 1023, a near tie), and the GPU lands on either side
// too. So a token after the first is not a criterion; checked per configuration and prompt (generate_test's
// 11 tokens with 5 decoded, and this test's 40 with 32): the first token identical, and the first
// step's logits within 0.1·max|logit| (measured on the H200: up to 0.197 at max|logit| 3.1 on the bf16
// pack; the CPU tests' own 2e-2 holds on the release pack only, see docs/perf.md). The numbers of
// every configuration are printed, with the steps whose history is identical.
TEST_F(CudaGenerate, Bf16ModeFirstTokenIdenticalAndFirstStepClose) {
  test::TempDir dir("cuda_bf16");
  for (const std::string format : {"release", "bf16"}) {
    const fs::path& pack = test::tiny_pack(format);
    for (int world = 1; world <= 4; ++world) {
      const fs::path programs = dir / (format + "-bf16-w" + std::to_string(world));
      plan_world(pack, world, DType::BF16, programs);
      for (const bool short_prompt : {true, false}) {
        SCOPED_TRACE(::testing::Message() << "pack " << format << ", world " << world << ", activations bf16, "
                                          << (short_prompt ? "11" : "40") << "-token prompt");
        GenerateOptions o = options_for(programs, pack);
        if (short_prompt) {
          o.prompt = {5, 6, 7, 8, 9, 10, 300, 301, 1000, 17, 4};  // generate_test's
          o.max_tokens = 5;
        }
        auto cpu = generate(o);
        ASSERT_TRUE(cpu.is_ok()) << cpu.status().message();
        auto gpu = on_cuda(o, false, nullptr);
        ASSERT_TRUE(gpu.is_ok()) << gpu.status().message();
        ASSERT_FALSE(gpu->tokens.empty());
        ASSERT_EQ(gpu->logits.size(), cpu->logits.size());
        EXPECT_EQ(gpu->tokens[0], cpu->tokens[0]);
        size_t same = 0;
        while (same < gpu->tokens.size() && gpu->tokens[same] == cpu->tokens[same]) ++same;
        double first = 0, worst_same_history = 0;
        for (size_t step = 0; step <= std::min(same, cpu->logits.size() - 1); ++step)
          for (size_t v = 0; v < cpu->logits[step].size(); ++v) {
            const double d = std::fabs(gpu->logits[step][v] - cpu->logits[step][v]);
            worst_same_history = std::max(worst_same_history, d);
            if (step == 0) first = std::max(first, d);
          }
        const double scale = max_abs(cpu->logits[0]);
        EXPECT_LE(first, 0.1 * scale);
        std::printf("pack %s world %d bf16, %s-token prompt: first token identical: %s; %zu of %zu tokens identical; "
                    "first step max|cuda-cpu| %.4f (max|cpu| %.3f); steps with identical history max|cuda-cpu| %.4f\n",
                    format.c_str(), world, short_prompt ? "11" : "40",
                    gpu->tokens[0] == cpu->tokens[0] ? "yes" : "NO", same, gpu->tokens.size(), first, scale,
                    worst_same_history);
      }
    }
  }
}

// Every rank's copy of each exchange's output (the last layer's "sub", and the gathered logits) holds
// the same bits after a prefill segment.
TEST_F(CudaGenerate, EveryRankHoldsTheSameBitsAfterTheExchanges) {
  test::TempDir dir("cuda_ranks");
  const fs::path& pack = test::tiny_pack("release");
  const int world = 3;
  plan_world(pack, world, DType::BF16, dir.path());
  auto programs = load_world_programs(dir.path().string());
  ASSERT_TRUE(programs.is_ok()) << programs.status().message();
  gpu::CudaBackendOptions cuda;
  cuda.model_dir = pack.string();
  cuda.log = nullptr;
  auto backend = gpu::CudaBackend::open(world, cuda);
  ASSERT_TRUE(backend.is_ok()) << backend.status().message();
  std::vector<std::map<std::string, std::vector<uint8_t>>> held(world);
  std::vector<std::string> failures(world);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank)
    threads.emplace_back([&, rank] {
      auto session = (*backend)->create((*programs)[rank]);
      if (!session.is_ok()) {
        failures[rank] = session.status().message();
        (*backend)->abort(failures[rank]);
        return;
      }
      auto* gpu_session = static_cast<gpu::GpuSession*>(session->get());
      const Phase* phase = gpu_session->find_phase("prefill.n16");
      std::vector<int32_t> statics(16 * kStaticsFields);
      for (int r = 0; r < 16; ++r) {
        statics[r * kStaticsFields + kStaticToken] = prompt()[r];
        statics[r * kStaticsFields + kStaticPosition] = r;
      }
      Status run = phase ? gpu_session->run(*phase, statics) : Status::error("no phase prefill.n16");
      for (const char* name : {"sub", "logits", "x.norm"}) {
        if (!run.is_ok()) break;
        auto bytes = gpu_session->read_buffer(*phase, name);
        if (!bytes.is_ok()) run = bytes.status();
        else held[rank][name] = std::move(bytes).value();
      }
      if (!run.is_ok()) {
        failures[rank] = run.message();
        (*backend)->abort(failures[rank]);
      }
    });
  for (std::thread& t : threads) t.join();
  for (int rank = 0; rank < world; ++rank) ASSERT_EQ(failures[rank], "") << "rank " << rank;
  for (const auto& [name, bytes] : held[0]) {
    ASSERT_FALSE(bytes.empty()) << name;
    for (int rank = 1; rank < world; ++rank)
      EXPECT_TRUE(held[rank][name] == bytes) << name << ": rank " << rank << " differs from rank 0";
  }
}

// Statics whose positions are not consecutive within one sequence: sparse_attention reports
// ERR_STATICS, and the run fails naming the phase, the call and the op.
TEST_F(CudaGenerate, AKernelErrorWordFailsTheRunNamingPhaseCallAndOp) {
  test::TempDir dir("cuda_error");
  const fs::path& pack = test::tiny_pack("release");
  plan_world(pack, 1, DType::BF16, dir.path());
  auto programs = load_world_programs(dir.path().string());
  ASSERT_TRUE(programs.is_ok()) << programs.status().message();
  gpu::CudaBackendOptions cuda;
  cuda.model_dir = pack.string();
  cuda.log = nullptr;
  auto backend = gpu::CudaBackend::open(1, cuda);
  ASSERT_TRUE(backend.is_ok()) << backend.status().message();
  auto session = (*backend)->create((*programs)[0]);
  ASSERT_TRUE(session.is_ok()) << session.status().message();
  const Phase* phase = (*session)->find_phase("prefill.n16");
  ASSERT_NE(phase, nullptr);
  std::vector<int32_t> statics(16 * kStaticsFields);
  for (int r = 0; r < 16; ++r) {
    statics[r * kStaticsFields + kStaticToken] = 5 + r;
    statics[r * kStaticsFields + kStaticPosition] = r == 0 ? 0 : r + 4;  // row 1 jumps from position 0 to 5
  }
  const Status run = (*session)->run(*phase, statics);
  ASSERT_FALSE(run.is_ok());
  EXPECT_NE(run.message().find("phase prefill.n16 call #"), std::string::npos) << run.message();
  EXPECT_NE(run.message().find("(sparse_attention)"), std::string::npos) << run.message();
  EXPECT_NE(run.message().find("ERR_STATICS"), std::string::npos) << run.message();
  std::printf("refused as expected: %s\n", run.message().c_str());
  // The session stays usable: consistent statics run cleanly afterwards.
  for (int r = 0; r < 16; ++r) statics[r * kStaticsFields + kStaticPosition] = r;
  (*session)->reset_slot(0);
  const Status again = (*session)->run(*phase, statics);
  EXPECT_TRUE(again.is_ok()) << again.message();
}

// --synthetic-weights: no weight file is read (the pack folder is empty of shards), every phase
// runs without an error word, and the logits are finite.
TEST_F(CudaGenerate, SyntheticWeightsBootWithoutTheShardsAndRunCleanly) {
  test::TempDir dir("cuda_synthetic");
  const fs::path& pack = test::tiny_pack("release");
  plan_world(pack, 2, DType::BF16, dir / "programs");
  GenerateOptions o = options_for(dir / "programs", dir / "no-shards-here");
  o.prompt = {5, 6, 7, 8, 9, 10, 300, 301, 1000, 17, 4, 12, 13, 14, 15, 16, 17, 18};  // two prefill segments
  o.max_tokens = 4;
  gpu::CudaBackendOptions cuda;
  cuda.model_dir = o.model_dir;
  cuda.log = nullptr;
  cuda.synthetic_seed = 11;
  o.backend = [cuda](int world) -> Result<std::unique_ptr<Backend>> {
    DSV41_ASSIGN_OR_RETURN(auto backend, gpu::CudaBackend::open(world, cuda));
    return std::unique_ptr<Backend>(std::move(backend));
  };
  auto result = generate(o);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  ASSERT_EQ(result->tokens.size(), 4u);
  for (const auto& row : result->logits)
    for (float v : row) ASSERT_TRUE(std::isfinite(v));
  std::printf("synthetic weights, world 2: tokens %d %d %d %d, max|logit| %.4f\n", result->tokens[0], result->tokens[1],
              result->tokens[2], result->tokens[3], max_abs(result->logits.back()));
}

}  // namespace
}  // namespace dsv41::cuda_test
