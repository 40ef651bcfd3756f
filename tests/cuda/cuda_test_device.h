// tests/cuda/cuda_test_device.h — device 0 for the CUDA backend tests, or why they skip (no driver, no
// device, a device the h200 target's cubins do not load on), and the NVRTC cache their plans use.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/dtype.h"
#include "runtime/generate.h"

#include "compiler/plan/serving_settings.h"
#include "runtime/gpu/cuda_backend.h"
#include "runtime/gpu/cuda_driver.h"

namespace dsv41::cuda_test {

struct TestDevice {
  gpu::CudaDriver* driver = nullptr;  // null: skip, for `skip`
  std::string skip;
};
// Opens the driver and makes device 0 current on the calling thread (DeviceTest's SetUp; tests use
// the fixture).
TestDevice open_test_device();

// A suite on device 0: each test skips, saying why, where there is none.
class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    device_ = open_test_device();
    if (!device_.driver) GTEST_SKIP() << device_.skip;
  }
  TestDevice device_;
};

// $DSV41_CACHE, else a folder of this process under the temp directory.
std::string kernel_cache_dir();

// test::write_programs for target h200: every rank of `world` of the model folder `pack` planned with
// `settings` into DIR/rank{N}.fb, compiling into kernel_cache_dir(); a failure is reported through gtest.
// `engram_token_map`, when given, is the map the Engram calls hash with (else none: a config with
// Engram then plans calls the runtime refuses to run).
void plan_h200(const std::filesystem::path& pack, int world, const ServingSettings& settings,
               const std::filesystem::path& dir, const std::vector<int32_t>& engram_token_map = {});

// The CUDA backend tests' settings: context 128, 2 slots, prefill segments of 16, decode bucket 1,
// activations as given.
ServingSettings test_settings(DType activations);
// plan_h200 with test_settings(activations).
void plan_world(const std::filesystem::path& pack, int world, DType activations, const std::filesystem::path& dir);

float max_abs(const std::vector<float>& v);

// generate() on the CUDA backend that `cuda` describes.
Result<GenerateResult> generate_on_cuda(GenerateOptions o, const gpu::CudaBackendOptions& cuda);
// Check mode's verdict, reported through gtest: every step's logits of `graphs` within
// 1e-3·max|logit| of `cpu`'s and bit-equal to `eager`'s. Returns the worst |cuda − cpu|/max|cpu|.
double expect_check_mode(const GenerateResult& cpu, const GenerateResult& graphs, const GenerateResult& eager);

// 40 ids: longer than the window (16) and than index_topk (8) compressed entries at ratio 2.
std::vector<int32_t> prompt();
constexpr int kDecoded = 32;
// Greedy generation of prompt() for kDecoded tokens (eos ignored) on the programs in `programs`.
GenerateOptions options_for(const std::filesystem::path& programs, const std::filesystem::path& pack);

}  // namespace dsv41::cuda_test
