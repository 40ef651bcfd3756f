// common/kernel_launch_products.cpp — launches of the product ops (linear, grouped_linear); the
// grids match the comments atop kernels/linear.cuh and kernels/grouped_linear.cuh.
#include "common/kernel_launch_ops.h"

namespace dsv41 {
namespace {

// kernels/gemv.cuh's grid: 8 warps a block, each a pair of columns over a K slice; `split` warps share
// a pair (split-K) until the grid has kTargetBlocks blocks. gemv_split / gemv_columns_per_block there
// compute the same numbers on the device: keep them equal (the GPU op tests fail otherwise).
LaunchDims gemv_grid(int64_t columns, const CallEnv& env) {
  constexpr int64_t kWarps = 8, kColsPerWarp = 2, kRows = 8, kTargetBlocks = 264;
  int64_t split = 1;
  while (split < kWarps && ceil_div(columns * split, kWarps * kColsPerWarp) < kTargetBlocks) split *= 2;
  LaunchDims d;
  d.block = 32 * kWarps;
  d.grid[0] = ceil_div(env.rows, kRows);
  d.grid[1] = ceil_div(columns, kWarps * kColsPerWarp / split);
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
