// common/kernel_launch_products.cpp — launches of the product ops (linear, grouped_linear); the
// grids match the comments atop kernels/linear.cuh and kernels/grouped_linear.cuh.
#include "common/kernel_launch_ops.h"

namespace dsv41 {
namespace {

// kernels/gemv.cuh's grid: 8 warps a block, each serving a group of 16 columns over a K slice; `split`
// warps share a group (split-K) until the grid has kTargetBlocks blocks; 16 rows a block. gemv_split /
// gemv_columns_per_block there compute the same numbers on the device: keep them equal (the GPU op tests fail
// otherwise).
LaunchDims gemv_grid(int64_t columns, const CallEnv& env) {
  constexpr int64_t kWarps = 8, kGroup = 16, kRows = 16, kTargetBlocks = 264;
  int64_t split = 1;
  while (split < kWarps && ceil_div(columns * split, kWarps * kGroup) < kTargetBlocks) split *= 2;
  LaunchDims d;
  d.block = 32 * kWarps;
  d.grid[0] = ceil_div(env.rows, kRows);
  d.grid[1] = ceil_div(columns, kWarps * kGroup / split);
  return d;
}

}  // namespace

Result<LaunchDims> launch_linear(const Call& call, const CallEnv& env) {
  return gemv_grid(call.constant("out_features"), env);
}

Result<LaunchDims> launch_grouped_linear(const Call& call, const CallEnv& env) {
  return gemv_grid(call.constant("groups") * call.constant("out_per_group"), env);
}

}  // namespace dsv41
