// compiler/kernels/kernel_build.cpp — the parallel build of every variant through the kernel cache (each miss
// one NVRTC compile, compiler/kernels/nvrtc_compile.cpp), the resource check against a target, and the cache
// folder's default.
#include "compiler/kernels/kernel_build.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

#include "compiler/kernels/kernel_cache.h"

namespace dsv41 {
namespace {

constexpr int kMaxRegistersPerThread = 255;
constexpr int64_t kRegistersPerBlock = 65536;
constexpr int64_t kMaxThreadsPerBlock = 1024;

// What one worker produced for one job.
struct JobOutcome {
  std::optional<Status> error;
  CompiledKernel kernel;
};

}  // namespace

std::string default_cache_dir(const std::string& asked, const std::string& env_cache, const std::string& home) {
  if (!asked.empty()) return asked;
  if (!env_cache.empty()) return env_cache;
  if (!home.empty()) return home + "/.cache/dsv41";
  return "";
}

Result<std::vector<CompiledKernel>> build_kernel_sources(const std::vector<KernelJob>& jobs,
                                                         const std::vector<std::string>& sources,
                                                         const std::vector<KernelSource>& headers,
                                                         const BuildOptions& options) {
  DSV41_CHECK(sources.size() == jobs.size());
  {
    std::set<std::string_view> keys;
    for (const auto& job : jobs)
      if (!keys.insert(job.variant.key).second)
        return Status::errorf("kernel {}: listed twice in one build", job.variant.key);
  }
  const size_t total = jobs.size();
  if (total == 0) return std::vector<CompiledKernel>{};

  // The cache is an optimization: a folder that cannot be made or written is reported once, and the
  // build goes on without it.
  std::string cache_dir = options.cache_dir;
  std::vector<std::string> cache_warnings;
  if (!cache_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(cache_dir, ec);
    if (ec) {
      cache_warnings.push_back(fmt::format("{}: cannot create the kernel cache: {}", cache_dir, ec.message()));
      cache_dir.clear();
    }
  }

  std::vector<JobOutcome> outcomes(total);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;  // guards done, cached, cache_warnings and stderr
  size_t done = 0, cached = 0;
  auto report_progress = [&] {
    if (options.progress) {
      std::fprintf(stderr, "\rdsv41c: kernels %zu/%zu (%zu cached)", done, total, cached);
      std::fflush(stderr);
    }
  };

  auto run_job = [&](size_t index) {
    const KernelJob& job = jobs[index];
    const std::string& source = sources[index];
    JobOutcome& outcome = outcomes[index];
    const uint64_t key = kernel_cache_key(source, headers, nvrtc_options(job.variant.arch), job.variant.arch);
    bool hit = false;
    if (!cache_dir.empty()) {
      if (auto entry = load_cached_kernel(cache_dir, key, job.variant.entry)) {
        outcome.kernel.cubin = std::move(entry->cubin);
        outcome.kernel.resources = entry->resources;
        hit = true;
      }
    }
    if (!hit) {
      auto compiled = compile_source(source, job.variant.entry, job.variant.arch, job.variant.key, headers);
      if (!compiled.is_ok()) {
        outcome.error = compiled.status();
        failed = true;
      } else {
        outcome.kernel.cubin = std::move(compiled->cubin);
        outcome.kernel.resources = compiled->resources;
        if (!cache_dir.empty()) {
          Status stored = store_cached_kernel(cache_dir, key, job.variant.key, outcome.kernel.cubin,
                                              outcome.kernel.resources);
          if (!stored.is_ok()) {
            std::lock_guard<std::mutex> lock(mutex);
            cache_warnings.push_back(stored.message());
          }
        }
      }
    }
    outcome.kernel.variant = job.variant;
    outcome.kernel.threads = job.threads;
    outcome.kernel.from_cache = hit;
    std::lock_guard<std::mutex> lock(mutex);
    ++done;
    if (hit) ++cached;
    report_progress();
  };

  // Workers take jobs in order; after a failure none takes a new one. Every job before a failed one
  // was taken before it, so the first failure in job order is always found.
  auto worker = [&] {
    for (;;) {
      if (failed) return;
      const size_t index = next.fetch_add(1);
      if (index >= total) return;
      run_job(index);
    }
  };
  size_t threads = options.jobs > 0 ? static_cast<size_t>(options.jobs)
                                    : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, total);
  {
    std::lock_guard<std::mutex> lock(mutex);
    report_progress();
  }
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& thread : pool) thread.join();
  }
  if (options.progress) std::fprintf(stderr, "\n");
  if (!cache_warnings.empty()) {
    std::fprintf(stderr, "dsv41c: warning: kernel cache not written: %s", cache_warnings.front().c_str());
    if (cache_warnings.size() > 1) std::fprintf(stderr, " (and %zu more)", cache_warnings.size() - 1);
    std::fprintf(stderr, "\n");
  }

  for (auto& outcome : outcomes)
    if (outcome.error) return *outcome.error;
  std::vector<CompiledKernel> kernels;
  kernels.reserve(total);
  for (auto& outcome : outcomes) kernels.push_back(std::move(outcome.kernel));
  return kernels;
}

Result<std::vector<CompiledKernel>> build_kernels(const std::vector<KernelJob>& jobs, const BuildOptions& options) {
  std::vector<std::string> sources;
  sources.reserve(jobs.size());
  for (const auto& job : jobs) sources.push_back(variant_source(job.variant, job.threads));
  return build_kernel_sources(jobs, sources, kernel_sources(), options);
}

Status check_resources(const CompiledKernel& kernel, const Target& target) {
  const std::string& key = kernel.variant.key;
  const KernelResources& r = kernel.resources;
  if (r.registers > kMaxRegistersPerThread)
    return Status::errorf("kernel {}: {} registers per thread exceed the limit of {}", key, r.registers,
                          kMaxRegistersPerThread);
  if (kernel.threads > kMaxThreadsPerBlock)
    return Status::errorf("kernel {}: {} threads per block exceed the limit of {}", key, kernel.threads,
                          kMaxThreadsPerBlock);
  const int64_t block_registers = static_cast<int64_t>(r.registers) * kernel.threads;
  if (block_registers > kRegistersPerBlock)
    return Status::errorf("kernel {}: {} registers x {} threads = {} registers per block exceed the limit of {}", key,
                          r.registers, kernel.threads, block_registers, kRegistersPerBlock);
  if (target.shared_memory_per_block > 0 && r.static_shared > target.shared_memory_per_block)
    return Status::errorf("kernel {}: {} bytes of static shared memory exceed target {}'s {} bytes per block", key,
                          r.static_shared, target.name, target.shared_memory_per_block);
  return Status::ok();
}

}  // namespace dsv41
