// tests/cuda/cuda_test_device.cpp — the skip decision and the kernel cache folder of the CUDA backend tests.
#include "tests/cuda/cuda_test_device.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::cuda_test {

TestDevice open_test_device() {
  TestDevice d;
  auto driver = gpu::CudaDriver::open();
  if (!driver.is_ok()) return {nullptr, driver.status().message()};
  auto count = (*driver)->device_count();
  if (!count.is_ok() || *count < 1) return {nullptr, count.is_ok() ? "the CUDA driver reports no device" : count.status().message()};
  const Status used = (*driver)->use_device(0);
  if (!used.is_ok()) return {nullptr, used.message()};
  auto arch = (*driver)->device_arch();
  if (!arch.is_ok() || *arch != "sm_90")
    return {nullptr, "the tests plan for target h200 (sm_90a); this device is " + (*driver)->describe_device()};
  static bool said = false;
  if (!said) std::printf("device: %s\n", (*driver)->describe_device().c_str());
  said = true;
  d.driver = *driver;
  return d;
}

std::string kernel_cache_dir() {
  if (const char* env = std::getenv("DSV41_CACHE"); env && *env) return env;
  return (std::filesystem::temp_directory_path() / ("dsv41_cuda_test_cache_" + std::to_string(getpid()))).string();
}

void plan_h200(const std::filesystem::path& pack, int world, const ServingSettings& settings,
               const std::filesystem::path& dir, const std::vector<int32_t>& engram_token_map) {
  test::write_programs(dir, pack, world, settings, engram_token_map, {"h200", kernel_cache_dir()});
}

ServingSettings test_settings(DType activations) {
  ServingSettings settings;
  settings.context = 128;
  settings.slots = 2;
  settings.prefill_rows = {16};
  settings.decode_rows = {1};
  settings.activations = activations;
  return settings;
}

void plan_world(const std::filesystem::path& pack, int world, DType activations, const std::filesystem::path& dir) {
  plan_h200(pack, world, test_settings(activations), dir);
}

std::vector<int32_t> prompt() {
  std::vector<int32_t> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(3 + (i * 97) % 1270);
  return ids;
}

GenerateOptions options_for(const std::filesystem::path& programs, const std::filesystem::path& pack) {
  GenerateOptions o;
  o.program_dir = programs.string();
  o.model_dir = pack.string();
  o.prompt = prompt();
  o.max_tokens = kDecoded;
  o.stop_at_eos = false;
  return o;
}

float max_abs(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

Result<GenerateResult> generate_on_cuda(GenerateOptions o, const gpu::CudaBackendOptions& cuda) {
  o.backend = [cuda](int world) -> Result<std::unique_ptr<Backend>> {
    DSV41_ASSIGN_OR_RETURN(auto backend, gpu::CudaBackend::open(world, cuda));
    return std::unique_ptr<Backend>(std::move(backend));
  };
  return generate(o);
}

double expect_check_mode(const GenerateResult& cpu, const GenerateResult& graphs, const GenerateResult& eager) {
  double worst = 0;
  EXPECT_EQ(graphs.logits.size(), cpu.logits.size());
  EXPECT_EQ(eager.logits.size(), graphs.logits.size());
  const size_t steps = std::min({cpu.logits.size(), graphs.logits.size(), eager.logits.size()});
  for (size_t step = 0; step < steps; ++step) {
    const std::vector<float>& c = cpu.logits[step];
    const std::vector<float>& g = graphs.logits[step];
    if (g.size() != c.size() || eager.logits[step].size() != g.size()) {
      ADD_FAILURE() << "step " << step << ": " << g.size() << " cuda, " << c.size() << " cpu and "
                    << eager.logits[step].size() << " eager logits";
      return worst;
    }
    const float bound = 1e-3f * max_abs(c);
    for (size_t v = 0; v < c.size(); ++v) {
      worst = std::max(worst, static_cast<double>(std::fabs(g[v] - c[v]) / max_abs(c)));
      if (std::fabs(g[v] - c[v]) > bound) {
        ADD_FAILURE() << "step " << step << " id " << v << ": cuda " << g[v] << ", cpu " << c[v] << ", max|cpu| "
                      << max_abs(c);
        return worst;
      }
    }
    if (std::memcmp(g.data(), eager.logits[step].data(), g.size() * sizeof(float)) != 0) {
      ADD_FAILURE() << "step " << step << ": graph replay and --eager differ";
      return worst;
    }
  }
  return worst;
}

}  // namespace dsv41::cuda_test
