// compiler/kernel_build_variants.cpp — build_kernels: each variant's NVRTC source from the kernel
// contract (variant_source), the embedded kernels/ headers (kernel_sources), then the parallel,
// cached build of kernel_build.cpp. Kept apart so that code compiling explicit sources (the tests)
// links without the kernel table.
#include "compiler/kernel_build.h"

namespace dsv41 {

Result<std::vector<CompiledKernel>> build_kernels(const std::vector<KernelJob>& jobs, const BuildOptions& options) {
  std::vector<std::string> sources;
  sources.reserve(jobs.size());
  for (const auto& job : jobs) sources.push_back(variant_source(job.variant, job.threads));
  return build_kernel_sources(jobs, sources, kernel_sources(), options);
}

}  // namespace dsv41
