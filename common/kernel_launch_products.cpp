// common/kernel_launch_products.cpp — launches of the product ops (linear, grouped_linear); the
// grids match the comments atop kernels/linear.cuh and kernels/grouped_linear.cuh.
#include "common/kernel_launch_ops.h"

namespace dsv41 {

Result<LaunchDims> launch_linear(const Call& call, const CallEnv& env) {
  constexpr int64_t kWarps = 8, kRowsPerWarp = 4;  // kernels/linear.cuh
  LaunchDims d;
  d.block = 32 * kWarps;
  d.grid[0] = ceil_div(call.constant("out_features"), kWarps);
  d.grid[1] = ceil_div(env.rows, kRowsPerWarp);
  return d;
}

Result<LaunchDims> launch_grouped_linear(const Call& call, const CallEnv& env) {
  constexpr int64_t kWarps = 8, kRowsPerWarp = 4;  // kernels/grouped_linear.cuh
  LaunchDims d;
  d.block = 32 * kWarps;
  d.grid[0] = ceil_div(call.constant("groups") * call.constant("out_per_group"), kWarps);
  d.grid[1] = ceil_div(env.rows, kRowsPerWarp);
  return d;
}

}  // namespace dsv41
