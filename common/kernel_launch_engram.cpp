// common/kernel_launch_engram.cpp — launches of the Engram ops; the grids match the comments atop
// kernels/engram_*.cuh.
#include "common/kernel_launch_ops.h"

namespace dsv41 {

Result<LaunchDims> launch_engram_hash(const Call& call, const CallEnv& env) {
  (void)call;  // kernels/engram_hash.cuh: one warp per row, columns strided over its threads
  return one_block_per_row(env, 32);
}

Result<LaunchDims> launch_engram_lookback(const Call& call, const CallEnv& env) {
  (void)call;  // kernels/engram_lookback.cuh: one warp per row
  return one_block_per_row(env, 32);
}

Result<LaunchDims> launch_engram_gather(const Call& call, const CallEnv& env) {
  // kernels/engram_gather.cuh: one block per (row, column)
  const int64_t columns = call.constant("columns");
  if (columns < 1 || columns > kMaxGridYZ)
    return Status::errorf("op engram_gather: columns {} outside 1..{}", columns, kMaxGridYZ);
  LaunchDims d = one_block_per_row(env, 256);
  d.grid[1] = columns;
  return d;
}

Result<LaunchDims> launch_engram_gate(const Call& call, const CallEnv& env) {
  // kernels/engram_gate.cuh: one block per (row, stream)
  LaunchDims d = one_block_per_row(env, 256);
  d.grid[1] = call.constant("streams");
  return d;
}

}  // namespace dsv41
