// common/kernel_launch_draft.cpp — launches of the DSpark ops (stream_mean, block_attention,
// markov_logits); the grids match the comments atop kernels/stream_mean.cuh, kernels/block_attention.cuh
// and kernels/markov_logits.cuh.
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

// One block per row; the block of a sequence's first row walks the sequence.
Result<LaunchDims> launch_markov_logits(const Call& call, const CallEnv& env) {
  (void)call;
  return one_block_per_row(env, 1024);
}

}  // namespace dsv41
