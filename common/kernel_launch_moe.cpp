// common/kernel_launch_moe.cpp — launches of the MoE ops (router, moe_experts, shared_expert); the
// grids match the comments atop kernels/router.cuh, kernels/moe_experts.cuh and
// kernels/shared_expert.cuh: the router's expert groups, or the experts' blocks of 256 threads (the grouped
// decode launch; above kMoeRows rows the prefill launch with the tile's dynamic shared memory).
#include <algorithm>

#include "common/kernel_launch_ops.h"

namespace dsv41 {
namespace {

constexpr int64_t kThreads = 256;
constexpr int64_t kStaticSharedLimit = 46 * 1024;  // the kernels' static_asserts

LaunchDims per_row(const CallEnv& env, int64_t static_shared) {
  LaunchDims d;
  d.block = kThreads;
  d.grid[0] = std::max<int64_t>(1, env.rows);
  d.bounds.push_back({"static shared memory", static_shared, kStaticSharedLimit});
  return d;
}

// kernels/moe_grouped.cuh: decode phases up to kMoeRows rows (common/kernel_contract.h) run kMoeBlocks
// blocks that claim work items; its tables (shared_bytes there, the pairs' in kernels/moe_pairs.cuh)
// overlay the per-row path's row and activation (kernels/moe_experts.cuh static_shared_bytes), beside
// last_block_of_row's flag.
constexpr int64_t kMoeBlocks = 264, kMoeCols = 16;

int64_t expert_shared(const Call& call, int64_t choices) {
  const int64_t f = call.constant("width"), pairs = kMoeRows * choices;
  const int64_t part = std::max<int64_t>(kMoeCols * pairs, 512), reduce = 8 * kMoeCols * kMoeRows;  // 8 warps
  const int64_t tables = 4 * (5 * pairs + 3) + 4 * part + 4 * reduce + 4;
  return std::max(4 * call.constant("hidden") + 4 * std::max<int64_t>(1, f), tables) + 4;
}

// kernels/moe_prefill.cuh: above kMoeRows rows, at least kPrefillBlocks blocks claiming work items (the
// per-row fallback strides over the rows), with three stages of gemm_tile.cuh's 64 x 128 x 32 bf16 tile.
constexpr int64_t kPrefillBlocks = 264;

LaunchDims experts_launch(const CallEnv& env, int64_t static_shared) {
  LaunchDims d = per_row(env, static_shared);
  if (env.rows <= kMoeRows) {
    d.grid[0] = kMoeBlocks;
  } else {
    d.grid[0] = std::max(kPrefillBlocks, env.rows);
    d.dynamic_shared = kGemmSmemBytes;
  }
  return d;
}

}  // namespace

// kernels/router.cuh (mirrors kernels/router_layout.cuh): blocks of kRouterRowsPerBlock warps, a warp a
// row; decode phases spread each row group's experts over ceil(E / 4) blocks (the group's last block picks
// the top-k), larger phases keep a block a row group. The four staged gate rows (bf16) and the block's rows
// of x (in x's dtype, fp32 when unknown, each padded to 16 bytes) sit in dynamic shared memory; at one row
// with D % 128 == 0, then the products' table of kernels/router_products.cuh (32 rows of product_row
// floats; used with BF16 gates only, given whatever the gate's format).
constexpr int64_t kRouterRowsPerBlock = 4, kRouterExpertsPerBlock = 4, kRouterRows = 16;

static int64_t router_product_bytes(int64_t hidden) { return 32 * 4 * ((hidden / 8 + 31) / 32 * 32 + 4); }

Result<LaunchDims> launch_router(const Call& call, const CallEnv& env) {
  const int64_t experts = call.constant("experts"), hidden = call.constant("hidden");
  const int64_t static_shared = kRouterRowsPerBlock * (8 * experts + 1024);  // router.cuh static_shared_bytes
  LaunchDims d = per_row(env, static_shared);
  d.block = 32 * kRouterRowsPerBlock;
  d.grid[0] = ceil_div(std::max<int64_t>(1, env.rows), kRouterRowsPerBlock);
  if (env.rows <= kRouterRows) d.grid[1] = ceil_div(experts, kRouterExpertsPerBlock);
  const BufferDecl* x = env.buffer ? env.buffer(call.arg("x")) : nullptr;
  const int64_t x_slot = ceil_div(hidden * (x && x->dtype == DType::BF16 ? 2 : 4), 16) * 16;
  d.dynamic_shared = 4 * 2 * (hidden + 8) + std::min(env.rows, kRouterRowsPerBlock) * x_slot;
  if (env.rows == 1 && hidden % 128 == 0) d.dynamic_shared += router_product_bytes(hidden);
  d.bounds.push_back({"router shared memory", d.dynamic_shared + static_shared, 0});
  return d;
}

Result<LaunchDims> launch_moe_experts(const Call& call, const CallEnv& env) {
  // With the shared expert: one more choice a row in the grouped path's tables.
  return experts_launch(env, expert_shared(call, call.constant("topk") + (call.find_arg("shared_w1") ? 1 : 0)));
}

Result<LaunchDims> launch_shared_expert(const Call& call, const CallEnv& env) {
  return experts_launch(env, expert_shared(call, 1));
}

}  // namespace dsv41
