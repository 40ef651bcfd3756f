// common/kernel_launch_draft.cpp — launches of the DSpark ops (stream_mean, block_attention,
// markov_logits, markov_pick); the grids match the comments atop their kernels/<op>.cuh.
#include <algorithm>

#include "common/kernel_launch_ops.h"

namespace dsv41 {

Result<LaunchDims> launch_stream_mean(const Call& call, const CallEnv& env) {
  return row_by_columns(env, call.constant("hidden"), 256);  // a thread per column of a row
}

// One block per (row, head); a logit and a key row pointer per key in dynamic shared memory.
Result<LaunchDims> launch_block_attention(const Call& call, const CallEnv& env) {
  LaunchDims d;
  d.block = 256;
  d.grid[0] = std::max<int64_t>(1, env.rows);
  d.grid[1] = call.constant("heads");
  const int64_t keys = call.constant("window") + env.rows;
  d.dynamic_shared = ceil_div(4 * keys, 16) * 16 + 8 * keys;
  d.bounds.push_back({"block_attention shared memory", d.dynamic_shared + 4 * call.constant("head_dim") + 256 + 8, 0});
  return d;
}

// A thread per vocabulary row of each phase row (the rows at other steps return at once).
Result<LaunchDims> launch_markov_logits(const Call& call, const CallEnv& env) {
  LaunchDims d;
  d.block = 256;
  d.grid[0] = ceil_div(call.constant("vocab"), 256);
  d.grid[1] = std::max<int64_t>(1, env.rows);
  if (d.grid[1] > kMaxGridYZ)
    return Status::errorf("op markov_logits: {} rows, above the grid's {} in y", env.rows, kMaxGridYZ);
  return d;
}

// One block per row.
Result<LaunchDims> launch_markov_pick(const Call& call, const CallEnv& env) {
  (void)call;
  return one_block_per_row(env, 1024);
}

}  // namespace dsv41
