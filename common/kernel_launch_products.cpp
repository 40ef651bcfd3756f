// common/kernel_launch_products.cpp — launches of the product ops (linear, grouped_linear); the
// grids match the comments atop kernels/linear.cuh and kernels/grouped_linear.cuh.
#include "common/kernel_launch_ops.h"

namespace dsv41 {
namespace {

// kernels/linear.cuh's scheme: 8 warps a block, a warp per output column and kRowsPerWarp rows.
LaunchDims warp_per_column(int64_t columns, const CallEnv& env) {
  constexpr int64_t kWarps = 8, kRowsPerWarp = 4;
  LaunchDims d;
  d.block = 32 * kWarps;
  d.grid[0] = ceil_div(columns, kWarps);
  d.grid[1] = ceil_div(env.rows, kRowsPerWarp);
  return d;
}

}  // namespace

Result<LaunchDims> launch_linear(const Call& call, const CallEnv& env) {
  return warp_per_column(call.constant("out_features"), env);
}

Result<LaunchDims> launch_grouped_linear(const Call& call, const CallEnv& env) {
  return warp_per_column(call.constant("groups") * call.constant("out_per_group"), env);
}

}  // namespace dsv41
