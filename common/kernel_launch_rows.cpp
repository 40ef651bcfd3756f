// common/kernel_launch_rows.cpp — launches of the row-wise ops (rmsnorm, rope, rmsnorm_rope, window_store) and the
// exchanges' device halves (exchange_sum, exchange_gather); the grids match the comments atop their
// kernels/<op>.cuh.
#include <algorithm>

#include "common/kernel_launch_ops.h"

namespace dsv41 {

Result<LaunchDims> launch_rmsnorm(const Call& call, const CallEnv& env) {
  (void)call;  // kernels/rmsnorm.cuh: one block per row
  return one_block_per_row(env, 256);
}

Result<LaunchDims> launch_rope(const Call& call, const CallEnv& env) {
  constexpr int64_t kThreads = 256;  // kernels/rope.cuh: blocks of whole heads, the cos/sin table in one pass
  const int64_t rope_dim = call.constant("rope_dim");
  if (rope_dim / 2 > kThreads)
    return Status::errorf("op rope: rope_dim {} is above the kernel's limit {}", rope_dim, 2 * kThreads);
  // Blocks of whole heads, about 2048 elements each (rope_detail::heads_per_block).
  const int64_t head_dim = call.constant("head_dim"), heads = call.constant("heads");
  const int64_t per_block = head_dim >= 2048 ? 1 : 2048 / std::max<int64_t>(1, head_dim);
  LaunchDims d;
  d.block = kThreads;
  d.grid[0] = env.rows;
  d.grid[1] = ceil_div(heads, per_block);
  return d;
}

Result<LaunchDims> launch_rmsnorm_rope(const Call& call, const CallEnv& env) {
  constexpr int64_t kThreads = 256;  // kernels/rmsnorm_rope.cuh: one block per row, pairs in registers
  const int64_t width = call.constant("width"), rope_dim = call.constant("rope_dim");
  if (width % 2 != 0 || width > 8192 || rope_dim / 2 > kThreads)
    return Status::errorf("op rmsnorm_rope: width {} (even, at most 8192) or rope_dim {} (at most {}) is above the "
                          "kernel's limits", width, rope_dim, 2 * kThreads);
  return one_block_per_row(env, kThreads);
}

Result<LaunchDims> launch_window_store(const Call& call, const CallEnv& env) {
  (void)call;  // kernels/window_store.cuh: one block per row
  return one_block_per_row(env, 256);
}

Result<LaunchDims> launch_exchange_sum(const Call& call, const CallEnv& env) {
  // kernels/exchange_sum.cuh: one thread per element
  return one_thread_per_element(env.rows * call.constant("width"), 256);
}

Result<LaunchDims> launch_exchange_gather(const Call& call, const CallEnv& env) {
  constexpr int64_t kThreads = 256;  // kernels/exchange_gather.cuh: columns over x, rows strided over y
  const Arg* widths = call.find_arg("widths");
  if (!widths) return Status::errorf("op exchange_gather: argument widths missing");
  int64_t total = 0;
  for (int64_t w : widths->ints) {
    if (w < 0) return Status::errorf("op exchange_gather: widths hold {}", w);
    total += w;
  }
  LaunchDims d;
  d.block = kThreads;
  d.grid[0] = ceil_div(total, kThreads);
  d.grid[1] = std::min(env.rows, kMaxGridYZ);
  return d;
}

}  // namespace dsv41
