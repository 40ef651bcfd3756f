// tests/cuda/cuda_cache_format_test.cpp — the official cache format (packed FP8 window rows, FP4
// compressed rows and index keys) end to end on the CUDA backend against the CPU backend (label gpu;
// skips without a driver): the tiny release-format pack at worlds 1 and 3, check mode (activations
// f32), the CUDA backend tests' prompt (the window wraps, top-k truncates, the candidate mask acts).
// Check mode's bound holds (logits within 1e-3·max|logit| of the CPU at every step, tokens identical):
// the packed rows are a function of values both backends compute to fp32 accuracy, and a code flips
// only where a value sits on a rounding boundary.
//
// Environment: DSV41_CACHE is the NVRTC cache folder the plans compile into.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "runtime/gpu/cuda_backend.h"
#include "tests/cuda/cuda_test_device.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::cuda_test {
namespace {

namespace fs = std::filesystem;

using CudaCacheFormat = DeviceTest;

TEST_F(CudaCacheFormat, OfficialCachesInCheckModeMatchTheCpu) {
  test::TempDir dir("cuda_cache_format");
  const fs::path& pack = test::tiny_pack("release");
  for (int world : {1, 3}) {
    SCOPED_TRACE(::testing::Message() << "release pack, world " << world << ", f32, --cache-format official");
    ServingSettings settings = test_settings(DType::F32);
    settings.cache_format = CacheFormat::Official;
    const fs::path programs = dir / ("official-w" + std::to_string(world));
    plan_h200(pack, world, settings, programs);
    GenerateOptions o = options_for(programs, pack);
    auto cpu = generate(o);
    ASSERT_TRUE(cpu.is_ok()) << cpu.status().message();
    gpu::CudaBackendOptions cuda;
    cuda.model_dir = o.model_dir;
    o.backend = [cuda](int w) -> Result<std::unique_ptr<Backend>> {
      DSV41_ASSIGN_OR_RETURN(auto backend, gpu::CudaBackend::open(w, cuda));
      return std::unique_ptr<Backend>(std::move(backend));
    };
    auto gpu_run = generate(o);
    ASSERT_TRUE(gpu_run.is_ok()) << gpu_run.status().message();
    EXPECT_EQ(gpu_run->tokens, cpu->tokens);
    ASSERT_EQ(gpu_run->logits.size(), cpu->logits.size());
    double worst = 0;
    for (size_t step = 0; step < cpu->logits.size(); ++step) {
      const std::vector<float>& c = cpu->logits[step];
      const std::vector<float>& g = gpu_run->logits[step];
      ASSERT_EQ(g.size(), c.size());
      for (size_t v = 0; v < c.size(); ++v) {
        worst = std::max(worst, static_cast<double>(std::fabs(g[v] - c[v]) / max_abs(c)));
        ASSERT_LE(std::fabs(g[v] - c[v]), 1e-3f * max_abs(c))
            << "step " << step << " id " << v << ": cuda " << g[v] << ", cpu " << c[v] << ", max|cpu| " << max_abs(c);
      }
    }
    std::printf("official caches, world %d f32: %zu tokens identical, worst |cuda-cpu|/max|cpu| %.2e\n", world,
                gpu_run->tokens.size(), worst);
  }
}

}  // namespace
}  // namespace dsv41::cuda_test
