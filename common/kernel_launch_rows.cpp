// common/kernel_launch_rows.cpp — launches of the row-wise ops (rmsnorm, rope, window_store) and the
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
  constexpr int64_t kThreads = 256;  // kernels/rope.cuh: one block per row, the cos/sin table in one pass
  const int64_t rope_dim = call.constant("rope_dim");
  if (rope_dim / 2 > kThreads)
    return Status::errorf("op rope: rope_dim {} is above the kernel's limit {}", rope_dim, 2 * kThreads);
  LaunchDims d;
  d.block = kThreads;
  d.grid[0] = env.rows;
  return d;
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
