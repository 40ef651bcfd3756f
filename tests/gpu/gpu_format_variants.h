// tests/gpu/gpu_format_variants.h — one call compiled once per weight format (the decode test and the speed benchmark
// share it).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/kernel_launch.h"
#include "common/status.h"
#include "common/weight_format.h"
#include "compiler/kernels/kernel_build.h"

namespace dsv41::gpu_test {

struct FormatVariants {
  std::vector<KernelJob> jobs;        // one per format, in the order given
  std::vector<CallEnv> envs;          // the environment each was bound with
  std::vector<CompiledKernel> built;  // NVRTC's cubins, same order
};

// Binds `call` under env_for(format) for every format (variant and launch shape), then compiles all
// of them for `arch` with the cache in `cache_dir`.
Result<FormatVariants> compile_per_format(const Call& call, const std::vector<WeightFormat>& formats,
                                          const std::function<CallEnv(WeightFormat)>& env_for, const std::string& arch,
                                          const std::string& cache_dir);

}  // namespace dsv41::gpu_test
