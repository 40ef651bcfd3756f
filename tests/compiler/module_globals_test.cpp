// tests/compiler/module_globals_test.cpp — a real NVRTC cubin's module globals: a variant with a known
// __device__ array reports at least its bytes, through the compile and through the kernel cache.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/hashing.h"
#include "compiler/kernels/kernel_build.h"
#include "compiler/kernels/kernel_cache.h"
#include "tests/support/test_support.h"

namespace dsv41 {
namespace {
using test::TempDir;

constexpr const char* kArch = "sm_90a";
constexpr int64_t kPartials = 300000;  // floats: 1.2 MB, the size of a split kernel's partials

// A kernel in the style of kernels/ with module-scope partials and a counter, as the split kernels
// (sparse_attention, index_merge, moe_slices) keep them.
constexpr std::string_view kHeader = R"(#pragma once
namespace dsv41k { namespace probe {
template <long long n>
__device__ float g_partials[n];
__device__ unsigned g_finished = 7;
template <long long n>
__device__ __forceinline__ void run(float* p) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) g_partials<n>[i] = p[i] * 2.0f;
  if (i == 0) p[0] = g_partials<n>[n - 1] + atomicAdd(&g_finished, 1u);
}
}}
)";

struct Probe {
  Variant variant;
  std::string source;
};

Probe probe() {
  Probe p;
  p.variant.op = "probe";
  p.variant.arch = kArch;
  p.variant.key = fmt::format("probe{{n={}}}@{}", kPartials, kArch);
  p.variant.id = hash_text(p.variant.key);
  p.variant.entry = "dsv41_" + hex64(p.variant.id);
  p.source = fmt::format(
      "#include \"probe.cuh\"\nextern \"C\" __global__ void {}(float* p) {{ dsv41k::probe::run<{}>(p); }}\n",
      p.variant.entry, kPartials);
  return p;
}

const std::vector<KernelSource>& headers() {
  static const std::vector<KernelSource> h = {{"probe.cuh", kHeader}};
  return h;
}

Result<CompiledKernel> build_probe(const std::string& cache_dir) {
  const Probe p = probe();
  BuildOptions options;
  options.cache_dir = cache_dir;
  auto built = build_kernel_sources({{p.variant, 128}}, {p.source}, headers(), options);
  if (!built.is_ok()) return built.status();
  return std::move((*built)[0]);
}

TEST(ModuleGlobals, ACompiledVariantReportsItsDeviceArrays) {
  const Probe p = probe();
  auto kernel = compile_source(p.source, p.variant.entry, kArch, p.variant.key, headers());
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  // The array and the initialised counter; the driver may round, the ledger counts the sections.
  EXPECT_GE(kernel->resources.module_globals, kPartials * 4 + 4);
  EXPECT_LT(kernel->resources.module_globals, kPartials * 4 + 4096) << "only the probe's globals";
}

TEST(ModuleGlobals, TheCacheKeepsThem) {
  TempDir dir;
  const std::string cache = dir.path().string();
  auto first = build_probe(cache);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  ASSERT_FALSE(first->from_cache);
  const int64_t globals = first->resources.module_globals;
  ASSERT_GE(globals, kPartials * 4);

  const Probe p = probe();
  const uint64_t key = kernel_cache_key(p.source, headers(), nvrtc_options(kArch), kArch);
  const auto meta_path = kernel_cache_path(cache, key, ".json");
  nlohmann::json meta = nlohmann::json::parse(test::read_file(meta_path));
  EXPECT_EQ(meta.at("module_globals").get<int64_t>(), globals);

  auto hit = build_probe(cache);
  ASSERT_TRUE(hit.is_ok()) << hit.status().message();
  EXPECT_TRUE(hit->from_cache);
  EXPECT_EQ(hit->resources.module_globals, globals);

}

}  // namespace
}  // namespace dsv41
