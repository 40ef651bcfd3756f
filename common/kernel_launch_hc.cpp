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

Result<LaunchDims> launch_hc_mix(const Call& call, const CallEnv& env) {
  (void)call;  // kernels/hc_mix.cuh: blocks of 512, 16 a row at decode (hc_mix_detail::splits), else one
  constexpr int64_t kMixRows = 16, kMixSplits = 16;
  LaunchDims d = one_block_per_row(env, 512);
  if (env.rows >= 1 && env.rows <= kMixRows) d.grid[1] = kMixSplits;
  return d;
}

Result<LaunchDims> launch_hc_collapse_norm(const Call& call, const CallEnv& env) {
  (void)call;  // kernels/hc_collapse_norm.cuh: blocks of 512, 16 a row at decode (hc_collapse_norm_detail), else one
  constexpr int64_t kNormRows = 16, kNormSplits = 16;
  LaunchDims d = one_block_per_row(env, 512);
  if (env.rows >= 1 && env.rows <= kNormRows) d.grid[1] = kNormSplits;
  return d;
}

Result<LaunchDims> launch_hc_post(const Call& call, const CallEnv& env) {
  // kernels/hc_post.cuh: one thread per column, every stream
  return row_by_columns(env, call.constant("hidden"), 256);
}

}  // namespace dsv41
