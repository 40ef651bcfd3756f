// common/kernel_launch_moe.cpp — launches of the MoE ops (router, moe_experts, shared_expert); the
// grids match the comments atop kernels/router.cuh, kernels/moe_experts.cuh and
// kernels/shared_expert.cuh: one block of 256 threads per row, no dynamic shared memory.
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

int64_t expert_shared(const Call& call) {
  const int64_t f = call.constant("width");
  return 4 * call.constant("hidden") + 4 * std::max<int64_t>(1, f);
}

}  // namespace

Result<LaunchDims> launch_router(const Call& call, const CallEnv& env) {
  return per_row(env, 4 * call.constant("hidden") + 9 * call.constant("experts") + 512);
}

Result<LaunchDims> launch_moe_experts(const Call& call, const CallEnv& env) {
  return per_row(env, expert_shared(call));
}

Result<LaunchDims> launch_shared_expert(const Call& call, const CallEnv& env) {
  return per_row(env, expert_shared(call));
}

}  // namespace dsv41
