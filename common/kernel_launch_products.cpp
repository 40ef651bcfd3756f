// common/kernel_launch_products.cpp — launches of the product ops (linear, grouped_linear); the
// grids match the comments atop kernels/linear.cuh and kernels/grouped_linear.cuh.
#include <algorithm>

#include "common/kernel_launch_ops.h"
#include "common/weight_format.h"

namespace dsv41 {
namespace {

// kernels/gemv.cuh's grid: 8 warps a block, each serving a group of 16 columns over a K slice; `split`
// warps share a group (split-K) until the grid has kTargetBlocks blocks; 16 rows a block. gemv_split /
// gemv_columns_per_block there compute the same numbers on the device: keep them equal (the GPU op tests fail
// otherwise).
//
// kernels/gemv_kparts.cuh: at 16 rows or fewer, a grid that split 8 leaves short of the target is split
// over K across blocks too: grid z = the most K parts (at most 8) that keep y·z within kTargetBlocks and
// give every warp slice a K block (4 chunks) or more. The kernel reads the count from gridDim.z.
LaunchDims gemv_grid(const Call& call, const CallEnv& env, int64_t columns, int64_t n) {
  constexpr int64_t kWarps = 8, kGroup = 16, kRows = 16, kTargetBlocks = 264, kMaxParts = 8;
  int64_t split = 1;
  while (split < kWarps && ceil_div(columns * split, kWarps * kGroup) < kTargetBlocks) split *= 2;
  LaunchDims d;
  d.block = 32 * kWarps;
  d.grid[0] = ceil_div(env.rows, kRows);
  d.grid[1] = ceil_div(columns, kWarps * kGroup / split);
  const WeightFormat f = env.weight_format ? env.weight_format(call.arg("w").ints[0]).value_or(WeightFormat::F32)
                                            : WeightFormat::F32;
  const int64_t chunk = f == WeightFormat::BF16                                        ? 8  // elements a 16-byte chunk
                        : f == WeightFormat::FP8Tile32 || f == WeightFormat::FP8Row32 ? 16
                        : f == WeightFormat::FP4Row32                                  ? 32
                                                                                       : 0;
  if (env.rows <= kRows && split == kWarps && chunk > 0) {
    const int64_t parts = std::min({kMaxParts, kTargetBlocks / d.grid[1], n / chunk / 4 / kWarps});
    if (parts >= 2) d.grid[2] = parts;
  }
  return d;
}

// kernels/linear.cuh tiled_takes: above 16 rows (kManyRowsAbove: the variants with many_rows = 1), bf16 x,
// a weight format the tile decodes, K (n) of whole 32-column steps and every 128-column tile within one x
// range run the tiled tensor-core GEMM: grid (ceil(R / BM), ceil(columns / 128)); BM (kernels/gemm_tile.cuh
// tile_rows) 128 for BF16 weights with kWideGemmSmemBytes of dynamic shared memory, else 64 with
// kGemmSmemBytes (common/kernel_launch_ops.h).
constexpr int64_t kTileCols = 128, kTileK = 32;

// The weight format when the tiled GEMM takes the call, else nothing.
std::optional<WeightFormat> tiled(const Call& call, const CallEnv& env, int64_t n, bool one_x_range) {
  if (env.rows <= kManyRowsAbove || n % kTileK != 0 || !one_x_range) return std::nullopt;
  const BufferDecl* x = env.buffer ? env.buffer(call.arg("x")) : nullptr;
  const std::optional<WeightFormat> f = env.weight_format ? env.weight_format(call.arg("w").ints[0]) : std::nullopt;
  if (!x || x->dtype != DType::BF16 || !f) return std::nullopt;
  if (*f == WeightFormat::BF16 || *f == WeightFormat::FP8Tile32 || *f == WeightFormat::FP8Row32 ||
      *f == WeightFormat::FP4Row32)
    return f;
  return std::nullopt;
}

LaunchDims product_grid(const Call& call, const CallEnv& env, int64_t columns, int64_t n, bool one_x_range) {
  const std::optional<WeightFormat> f = tiled(call, env, n, one_x_range);
  if (!f) return gemv_grid(call, env, columns, n);
  const bool wide = *f == WeightFormat::BF16;
  LaunchDims d;
  d.block = 256;
  d.grid[0] = ceil_div(env.rows, wide ? 128 : 64);
  d.grid[1] = ceil_div(columns, kTileCols);
  d.dynamic_shared = wide ? kWideGemmSmemBytes : kGemmSmemBytes;
  return d;
}

}  // namespace

Result<LaunchDims> launch_linear(const Call& call, const CallEnv& env) {
  return product_grid(call, env, call.constant("out_features"), call.constant("in_features"), true);
}

Result<LaunchDims> launch_grouped_linear(const Call& call, const CallEnv& env) {
  const int64_t groups = call.constant("groups"), out_per_group = call.constant("out_per_group");
  return product_grid(call, env, groups * out_per_group, call.constant("in_per_group"),
                      groups == 1 || out_per_group % kTileCols == 0);
}

}  // namespace dsv41
