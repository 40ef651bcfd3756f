// common/kernel_launch_hc.cpp — launches of the embedding and hyper-connection ops (embed, hc_pre_init,
// hc_mix, hc_collapse_norm, hc_post); the grids match the comments atop their kernels/<op>.cuh.
#include "common/kernel_launch_ops.h"

namespace dsv41 {

Result<LaunchDims> launch_embed(const Call& call, const CallEnv& env) {
  // kernels/embed.cuh: one thread per column, every stream
  return row_by_columns(env, call.constant("hidden"), 256);
}

Result<LaunchDims> launch_hc_pre_init(const Call& call, const CallEnv& env) {
  // kernels/hc_pre_init.cuh: one thread per element of out
  return one_thread_per_element(env.rows * call.constant("mix"), 256);
}

namespace {

// Blocks of 512, 16 a row in phases of at most 16 rows (kernels/hc_mix.cuh kMixRows and kMixSplits: its
// table holds no more), else one a row.
LaunchDims split_at_decode(const CallEnv& env) {
  constexpr int64_t kSplitRows = 16, kSplits = 16;
  LaunchDims d = one_block_per_row(env, 512);
  if (env.rows >= 1 && env.rows <= kSplitRows) d.grid[1] = kSplits;
  return d;
}

}  // namespace

Result<LaunchDims> launch_hc_mix(const Call& call, const CallEnv& env) {
  (void)call;
  return split_at_decode(env);
}

// kernels/hc_collapse_norm.cuh takes any split; it uses hc_mix's.
Result<LaunchDims> launch_hc_collapse_norm(const Call& call, const CallEnv& env) {
  (void)call;
  return split_at_decode(env);
}

Result<LaunchDims> launch_hc_post(const Call& call, const CallEnv& env) {
  // kernels/hc_post.cuh: one thread per column, every stream
  return row_by_columns(env, call.constant("hidden"), 256);
}

}  // namespace dsv41
