// tests/compiler/kernel_build_test.cpp — the NVRTC step: real cubins with ptxas's resources, the
// content-addressed cache (hits, identical bytes, corrupt entries rebuilt), compile errors naming the
// variant, resource limits, the cache folder's precedence.
#include "compiler/kernels/kernel_build.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <regex>

#include <gtest/gtest.h>

#include "common/hashing.h"
#include "compiler/kernels/kernel_cache.h"
#include "tests/support/test_support.h"

namespace dsv41 {
namespace {
using test::TempDir;
namespace fs = std::filesystem;

constexpr const char* kArch = "sm_90a";

// A header in the style of kernels/: an entry template with a compile-time size and static shared memory.
constexpr std::string_view kTinyHeader = R"(#pragma once
namespace dsv41k { namespace entry {
template <long long n>
__device__ __forceinline__ void tiny(float* p, long long count) {
  __shared__ float s[n];
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  s[threadIdx.x % n] = i < count ? p[i] : 0.0f;
  __syncthreads();
  if (i < count) p[i] = s[(n - 1) - threadIdx.x % n] * 2.0f + 1.0f;
}
}}
)";

const std::vector<KernelSource>& tiny_headers() {
  static const std::vector<KernelSource> headers = {{"tiny.cuh", kTinyHeader}};
  return headers;
}

Variant tiny_variant(int64_t n) {
  Variant v;
  v.op = "tiny";
  v.arch = kArch;
  v.key = fmt::format("tiny{{n={}}}@{}", n, kArch);
  v.id = hash_text(v.key);
  v.entry = "dsv41_" + hex64(v.id);
  return v;
}

std::string tiny_source(const Variant& v, int64_t n) {
  return fmt::format(
      "#include \"tiny.cuh\"\nextern \"C\" __global__ void {}(float* p, long long count) "
      "{{ dsv41k::entry::tiny<{}>(p, count); }}\n",
      v.entry, n);
}

struct TinyBuild {
  std::vector<KernelJob> jobs;
  std::vector<std::string> sources;
};

TinyBuild tiny_build(const std::vector<int64_t>& sizes) {
  TinyBuild b;
  for (int64_t n : sizes) {
    b.jobs.push_back({tiny_variant(n), 128});
    b.sources.push_back(tiny_source(b.jobs.back().variant, n));
  }
  return b;
}

Result<std::vector<CompiledKernel>> build(const TinyBuild& b, const std::string& cache_dir, int jobs = 0) {
  BuildOptions options;
  options.cache_dir = cache_dir;
  options.jobs = jobs;
  return build_kernel_sources(b.jobs, b.sources, tiny_headers(), options);
}

bool is_elf(const std::vector<uint8_t>& bytes) {
  return bytes.size() > 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(KernelBuild, NvrtcVersion) {
  EXPECT_TRUE(std::regex_match(nvrtc_version(), std::regex(R"(\d+\.\d+)"))) << nvrtc_version();
  EXPECT_EQ(nvrtc_version().substr(0, 3), "13.");
}

TEST(KernelBuild, CompilesATinyKernelWithResources) {
  const Variant v = tiny_variant(64);
  const auto start = std::chrono::steady_clock::now();
  auto kernel = compile_source(tiny_source(v, 64), v.entry, kArch, v.key, tiny_headers());
  std::printf("[ timing ] one small kernel, NVRTC: %.3f s\n", seconds_since(start));
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  EXPECT_TRUE(is_elf(kernel->cubin));
  EXPECT_TRUE(looks_like_cubin(kernel->cubin, v.entry));
  EXPECT_GT(kernel->resources.registers, 0);
  EXPECT_EQ(kernel->resources.static_shared, 64 * 4);
  EXPECT_EQ(kernel->resources.local_bytes, 0);
  EXPECT_EQ(kernel->variant.key, v.key);
}

TEST(KernelBuild, BuildsARealVariantFromTheKernelTable) {
  // kernels/linear.cuh through variant_source and the embedded kernel_sources(), as dsv41c builds it.
  Variant v;
  v.op = "linear";
  v.template_args = {{"in_features", 64},
                     {"many_rows", 0},
                     {"dtype_x", 1 /* DT_BF16 */},
                     {"format_w", 2 /* WF_FP8_TILE32 */},
                     {"dtype_out", 0 /* DT_F32 */}};
  v.arch = kArch;
  v.key = "linear{in_features=64,many_rows=0,dtype_x=bf16,format_w=fp8_tile32,dtype_out=f32}@sm_90a";
  v.id = hash_text(v.key);
  v.entry = "dsv41_" + hex64(v.id);
  ASSERT_NE(find_contract("linear"), nullptr);
  TempDir dir;
  BuildOptions options;
  options.cache_dir = dir.path().string();
  auto built = build_kernels({{v, 256}}, options);
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  ASSERT_EQ(built->size(), 1u);
  const CompiledKernel& k = (*built)[0];
  EXPECT_FALSE(k.from_cache);
  EXPECT_EQ(k.threads, 256);
  EXPECT_TRUE(is_elf(k.cubin));
  EXPECT_TRUE(looks_like_cubin(k.cubin, v.entry));
  EXPECT_GT(k.resources.registers, 0);
  auto target = find_target("h200");
  ASSERT_TRUE(target.is_ok());
  EXPECT_TRUE(check_resources(k, *target).is_ok()) << check_resources(k, *target).message();

  auto again = build_kernels({{v, 256}}, options);
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_TRUE((*again)[0].from_cache);
  EXPECT_EQ((*again)[0].cubin, k.cubin);
}

TEST(KernelBuild, SecondBuildHitsTheCacheWithIdenticalBytes) {
  TempDir dir;
  const std::string cache = (dir.path() / "cache").string();  // created by the build
  const TinyBuild b = tiny_build({32, 64, 128});

  auto start = std::chrono::steady_clock::now();
  auto first = build(b, cache, 2);
  const double cold = seconds_since(start);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  ASSERT_EQ(first->size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const CompiledKernel& k = (*first)[i];
    EXPECT_EQ(k.variant.key, b.jobs[i].variant.key) << "order kept";
    EXPECT_EQ(k.threads, 128);
    EXPECT_FALSE(k.from_cache);
    EXPECT_TRUE(is_elf(k.cubin));
    EXPECT_GT(k.resources.registers, 0);
    EXPECT_EQ(k.resources.static_shared, static_cast<int64_t>(std::vector<int64_t>{32, 64, 128}[i] * 4));
  }
  size_t cubins = 0, metas = 0;
  for (const auto& entry : fs::directory_iterator(cache)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(std::regex_match(name, std::regex(R"([0-9a-f]{16}\.(cubin|json))"))) << name;
    cubins += entry.path().extension() == ".cubin";
    metas += entry.path().extension() == ".json";
  }
  EXPECT_EQ(cubins, 3u);
  EXPECT_EQ(metas, 3u);

  start = std::chrono::steady_clock::now();
  auto second = build(b, cache, 1);
  const double warm = seconds_since(start);
  std::printf("[ timing ] 3 small kernels: cold %.3f s (2 jobs), cache hit %.4f s\n", cold, warm);
  ASSERT_TRUE(second.is_ok()) << second.status().message();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE((*second)[i].from_cache);
    EXPECT_EQ((*second)[i].variant.key, b.jobs[i].variant.key);
    EXPECT_EQ((*second)[i].cubin, (*first)[i].cubin);
    EXPECT_EQ((*second)[i].resources.registers, (*first)[i].resources.registers);
    EXPECT_EQ((*second)[i].resources.static_shared, (*first)[i].resources.static_shared);
    EXPECT_EQ((*second)[i].resources.local_bytes, (*first)[i].resources.local_bytes);
  }

  // Without a cache nothing is reused, and the bytes are the same (NVRTC is deterministic).
  auto uncached = build(b, "");
  ASSERT_TRUE(uncached.is_ok()) << uncached.status().message();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE((*uncached)[i].from_cache);
    EXPECT_EQ((*uncached)[i].cubin, (*first)[i].cubin);
  }
}

TEST(KernelBuild, TheKeyCoversSourceHeadersOptionsAndArch) {
  const std::string source = "x";
  const auto base = kernel_cache_key(source, tiny_headers(), nvrtc_options(kArch), kArch);
  EXPECT_EQ(base, kernel_cache_key(source, tiny_headers(), nvrtc_options(kArch), kArch));
  EXPECT_NE(base, kernel_cache_key("y", tiny_headers(), nvrtc_options(kArch), kArch));
  EXPECT_NE(base, kernel_cache_key(source, {{"tiny.cuh", "other"}}, nvrtc_options(kArch), kArch));
  EXPECT_NE(base, kernel_cache_key(source, {{"other.cuh", kTinyHeader}}, nvrtc_options(kArch), kArch));
  EXPECT_NE(base, kernel_cache_key(source, {}, nvrtc_options(kArch), kArch));
  EXPECT_NE(base, kernel_cache_key(source, tiny_headers(), nvrtc_options("sm_100a"), kArch));
  EXPECT_NE(base, kernel_cache_key(source, tiny_headers(), nvrtc_options(kArch), "sm_100a"));
}

TEST(KernelBuild, ACorruptCacheEntryIsRebuilt) {
  TempDir dir;
  const std::string cache = dir.path().string();
  const TinyBuild b = tiny_build({64});
  auto first = build(b, cache);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  const uint64_t key = kernel_cache_key(b.sources[0], tiny_headers(), nvrtc_options(kArch), kArch);
  const fs::path cubin = kernel_cache_path(cache, key, ".cubin");
  const fs::path meta = kernel_cache_path(cache, key, ".json");
  ASSERT_TRUE(fs::exists(cubin));
  ASSERT_TRUE(fs::exists(meta));
  const std::vector<uint8_t> good = (*first)[0].cubin;

  auto expect_rebuilt = [&](const std::string& what) {
    auto again = build(b, cache);
    ASSERT_TRUE(again.is_ok()) << what << ": " << again.status().message();
    EXPECT_FALSE((*again)[0].from_cache) << what;
    EXPECT_EQ((*again)[0].cubin, good) << what;
    // ... and the rebuilt entry is good again.
    auto hit = build(b, cache);
    ASSERT_TRUE(hit.is_ok()) << what;
    EXPECT_TRUE((*hit)[0].from_cache) << what;
    EXPECT_EQ((*hit)[0].cubin, good) << what;
  };

  {  // short cubin
    std::vector<uint8_t> shorter(good.begin(), good.begin() + static_cast<long>(good.size() / 2));
    test::write_bytes(cubin, shorter);
    expect_rebuilt("short cubin");
  }
  {  // same size, not an ELF image
    std::vector<uint8_t> garbage(good.size(), 0xab);
    test::write_bytes(cubin, garbage);
    expect_rebuilt("garbage cubin");
  }
  {  // one flipped byte in the middle: the recorded hash no longer matches
    std::vector<uint8_t> flipped = good;
    flipped[flipped.size() / 2] ^= 0x01;
    test::write_bytes(cubin, flipped);
    expect_rebuilt("flipped cubin byte");
  }
  {  // unreadable metadata
    test::write_file(meta, "{ not json");
    expect_rebuilt("corrupt json");
  }
  {  // metadata missing
    fs::remove(meta);
    expect_rebuilt("missing json");
  }
  {  // cubin missing
    fs::remove(cubin);
    expect_rebuilt("missing cubin");
  }
}

TEST(KernelBuild, ACompileErrorNamesTheVariantAndNvrtcsLog) {
  TinyBuild b = tiny_build({32, 64, 128});
  b.sources[1] = "#include \"tiny.cuh\"\nextern \"C\" __global__ void " + b.jobs[1].variant.entry +
                 "(float* p) { this is not C++; }\n";
  b.sources[2] = "#include \"missing.cuh\"\n";
  TempDir dir;
  auto built = build(b, dir.path().string(), 3);
  ASSERT_FALSE(built.is_ok());
  const std::string& message = built.status().message();
  EXPECT_NE(message.find(b.jobs[1].variant.key), std::string::npos) << message;  // the first failure in job order
  EXPECT_EQ(message.find(b.jobs[2].variant.key), std::string::npos) << message;
  EXPECT_NE(message.find("error"), std::string::npos) << message;              // NVRTC's log
  EXPECT_NE(message.find(b.jobs[1].variant.entry + ".cu"), std::string::npos) << message;

  // Alone, the missing header is reported too.
  TinyBuild only_missing = tiny_build({128});
  only_missing.sources[0] = b.sources[2];
  auto missing = build(only_missing, "");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find(only_missing.jobs[0].variant.key), std::string::npos);
  EXPECT_NE(missing.status().message().find("missing.cuh"), std::string::npos) << missing.status().message();
}

TEST(KernelBuild, RefusesDuplicateKeysAndANonSmArch) {
  TinyBuild b = tiny_build({32, 32});
  auto twice = build(b, "");
  ASSERT_FALSE(twice.is_ok());
  EXPECT_NE(twice.status().message().find(b.jobs[0].variant.key), std::string::npos);

  const Variant v = tiny_variant(32);
  auto virtual_arch = compile_source(tiny_source(v, 32), v.entry, "compute_90", v.key, tiny_headers());
  ASSERT_FALSE(virtual_arch.is_ok());
  EXPECT_NE(virtual_arch.status().message().find(v.key), std::string::npos);
  EXPECT_NE(virtual_arch.status().message().find("compute_90"), std::string::npos);
}

TEST(KernelBuild, ProgressLine) {
  const TinyBuild b = tiny_build({32, 64});
  BuildOptions options;
  options.progress = true;
  options.jobs = 2;
  testing::internal::CaptureStderr();
  auto built = build_kernel_sources(b.jobs, b.sources, tiny_headers(), options);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  EXPECT_NE(err.find("\rdsv41c: kernels 0/2 (0 cached)"), std::string::npos) << err;
  EXPECT_NE(err.find("\rdsv41c: kernels 2/2 (0 cached)\n"), std::string::npos) << err;
}

TEST(KernelBuild, AnUnwritableCacheOnlyWarns) {
  TempDir dir;
  const fs::path file = dir.path() / "a_file";
  test::write_file(file, "x");
  const TinyBuild b = tiny_build({32});
  testing::internal::CaptureStderr();
  auto built = build(b, (file / "cache").string());  // a folder below a file cannot be made
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  EXPECT_FALSE((*built)[0].from_cache);
  EXPECT_NE(err.find("warning: kernel cache"), std::string::npos) << err;
}

CompiledKernel fake_kernel(int registers, int64_t threads, int64_t static_shared) {
  CompiledKernel k;
  k.variant = tiny_variant(7);
  k.threads = threads;
  k.resources.registers = registers;
  k.resources.static_shared = static_shared;
  return k;
}

void expect_refused(const Status& status, const std::vector<std::string>& needles) {
  ASSERT_FALSE(status.is_ok());
  for (const auto& needle : needles)
    EXPECT_NE(status.message().find(needle), std::string::npos) << "'" << needle << "' in: " << status.message();
}

TEST(KernelBuild, CheckResources) {
  auto h200 = find_target("h200");
  ASSERT_TRUE(h200.is_ok());
  const std::string key = tiny_variant(7).key;
  EXPECT_TRUE(check_resources(fake_kernel(64, 1024, 48 * 1024), *h200).is_ok());
  EXPECT_TRUE(check_resources(fake_kernel(255, 256, h200->shared_memory_per_block), *h200).is_ok());

  expect_refused(check_resources(fake_kernel(128, 1024, 0), *h200), {key, "registers", "131072", "65536"});
  expect_refused(check_resources(fake_kernel(300, 32, 0), *h200), {key, "registers", "300", "255"});
  expect_refused(check_resources(fake_kernel(32, 2048, 0), *h200), {key, "threads", "2048", "1024"});
  expect_refused(check_resources(fake_kernel(32, 256, 300000), *h200),
                 {key, "shared", "300000", std::to_string(h200->shared_memory_per_block)});
  auto gb10 = find_target("gb10");
  ASSERT_TRUE(gb10.is_ok());
  expect_refused(check_resources(fake_kernel(32, 256, 100 * 1024), *gb10), {key, "shared", "102400", "101376"});
}

// The asked folder, else $DSV41_CACHE's value, else HOME's .cache/dsv41, else no cache; the values
// are passed in (the library reads no environment).
TEST(KernelBuild, DefaultCacheDirPrecedence) {
  EXPECT_EQ(default_cache_dir("/from/flag", "/from/env", "/home/someone"), "/from/flag");
  EXPECT_EQ(default_cache_dir("", "/from/env", "/home/someone"), "/from/env");
  EXPECT_EQ(default_cache_dir("", "", "/home/someone"), "/home/someone/.cache/dsv41");
  EXPECT_EQ(default_cache_dir("", "", ""), "");
  EXPECT_EQ(default_cache_dir("/from/flag", "", ""), "/from/flag");
}

}  // namespace
}  // namespace dsv41
