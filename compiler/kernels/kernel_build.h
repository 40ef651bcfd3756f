// compiler/kernels/kernel_build.h — the NVRTC step: every kernel variant a program launches compiled to a cubin
// for its arch, in parallel, through a content-addressed cache (compiler/kernels/kernel_cache.h), and the
// check that a compiled kernel fits its target.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/kernel_contract.h"
#include "common/status.h"
#include "compiler/plan/targets.h"

namespace dsv41 {

struct KernelJob {
  Variant variant;
  int64_t threads = 0;  // threads per block the variant is launched with
};

// What ptxas reports for the entry and its module (--ptxas-options=-v).
struct KernelResources {
  int registers = 0;          // per thread
  int64_t static_shared = 0;  // bytes per block ("smem")
  int64_t local_bytes = 0;    // bytes per thread (stack frame, or "lmem" when larger)
  // Bytes of the module's __device__ variables ("bytes gmem"): device memory the driver allocates
  // once per module load, beside any buffer dsv41 allocates.
  int64_t module_globals = 0;
};

struct CompiledKernel {
  Variant variant;
  int64_t threads = 0;
  std::vector<uint8_t> cubin;  // an ELF image for variant.arch
  KernelResources resources;
  bool from_cache = false;
};

struct BuildOptions {
  std::string cache_dir;  // empty: no cache
  int jobs = 0;           // 0: hardware threads
  bool progress = false;  // \r progress line on stderr
};

// Compiles every job (distinct keys; same order out as in) with NVRTC to a cubin for
// job.variant.arch, in parallel, reusing the content-addressed cache. Refuses a compile error with
// the variant key and NVRTC's log. Source per job: variant_source(job.variant, job.threads); headers:
// every entry of kernel_sources().
Result<std::vector<CompiledKernel>> build_kernels(const std::vector<KernelJob>& jobs, const BuildOptions& options);

// Refuses a kernel whose resources exceed the target: names the variant key, the resource and both
// numbers (registers*threads vs 65536 registers per block, registers vs 255, threads vs 1024, static
// shared vs target.shared_memory_per_block; a limit of 0 is unchecked).
Status check_resources(const CompiledKernel& kernel, const Target& target);

// The cache folder BuildOptions::cache_dir should name: `asked` (dsv41c's --cache), else `env_cache`
// ($DSV41_CACHE), else `home`/.cache/dsv41; "" (no cache) when all are empty. The library reads no
// environment: main() passes what it found there.
std::string default_cache_dir(const std::string& asked, const std::string& env_cache, const std::string& home);

// NVRTC's version, "13.0" (this and the NVRTC compile below: compiler/kernels/nvrtc_compile.cpp).
std::string nvrtc_version();

// ---- lower level: what build_kernels does with explicit sources and headers (tests use it) ----

// The NVRTC options for an arch, in order (they are part of the cache key).
std::vector<std::string> nvrtc_options(const std::string& arch);

// build_kernels with sources[i] as job i's source and `headers` as NVRTC's headers.
Result<std::vector<CompiledKernel>> build_kernel_sources(const std::vector<KernelJob>& jobs,
                                                         const std::vector<std::string>& sources,
                                                         const std::vector<KernelSource>& headers,
                                                         const BuildOptions& options);

// One NVRTC compile, no cache: the cubin must hold the extern "C" symbol `entry`, whose resources
// are read from ptxas's report. Failures name `name_for_errors` (a variant key).
Result<CompiledKernel> compile_source(const std::string& source, const std::string& entry, const std::string& arch,
                                      const std::string& name_for_errors,
                                      const std::vector<KernelSource>& headers = {});

}  // namespace dsv41
