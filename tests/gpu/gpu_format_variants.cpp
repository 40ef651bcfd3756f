// tests/gpu/gpu_format_variants.cpp — binds and compiles one call's variant per weight format.
#include "tests/gpu/gpu_format_variants.h"

namespace dsv41::gpu_test {

Result<FormatVariants> compile_per_format(const Call& call, const std::vector<WeightFormat>& formats,
                                          const std::function<CallEnv(WeightFormat)>& env_for, const std::string& arch,
                                          const std::string& cache_dir) {
  FormatVariants out;
  for (WeightFormat f : formats) {
    CallEnv env = env_for(f);
    DSV41_ASSIGN_OR_RETURN(Variant variant, variant_of(call, env, arch));
    DSV41_ASSIGN_OR_RETURN(auto dims, launch_dims(call, env));
    out.jobs.push_back({variant, dims.block});
    out.envs.push_back(std::move(env));
  }
  BuildOptions options;
  options.cache_dir = cache_dir;
  DSV41_ASSIGN_OR_RETURN(out.built, build_kernels(out.jobs, options));
  return out;
}

}  // namespace dsv41::gpu_test
