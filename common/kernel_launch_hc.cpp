// common/kernel_launch_hc.cpp — launches of the embedding and hyper-connection ops (embed, hc_pre_init,
// hc_collapse_norm, hc_mix, hc_post); the grids match the comments atop their kernels/<op>.cuh.
#include <algorithm>

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

// kernels/hc_mix.cuh kMixRows: phases of at most this many rows split a row (hc_collapse_norm likewise).
constexpr int64_t kSplitRows = 16;

// kernels/hc_mix.cuh: blocks of 512; at decode a row's S·D inputs in chunks of 128 vectors of four (a
// block's column groups take one chunk a turn), as many chunks a block as keep the phase's blocks within
// kResident (two blocks of 512 an SM fit its registers; 132 SMs on the H200: 8 rows in 40 blocks each
// took a second wave, 10.6 µs against 8.6 with 20 blocks of two chunks: docs/perf.md, "hcmix"), and at
// most kMixSplits<M> blocks (its table and gather hold no more); else one block a row.
Result<LaunchDims> launch_hc_mix(const Call& call, const CallEnv& env) {
  constexpr int64_t kLanes = 128, kResident = 256;
  const int64_t streams = call.constant("streams"), mix = (2 + streams) * streams;
  const int64_t chunks = ceil_div(ceil_div(streams * call.constant("hidden"), 4), kLanes);
  LaunchDims d = one_block_per_row(env, 512);
  if (env.rows < 1 || env.rows > kSplitRows) return d;
  const int64_t most = std::min<int64_t>(64, 4096 / (mix + 1));
  int64_t per_block = std::max<int64_t>(ceil_div(chunks * env.rows, kResident), ceil_div(chunks, most));
  d.grid[1] = ceil_div(chunks, per_block);
  return d;
}

// kernels/hc_collapse_norm.cuh takes any split: 16 blocks of 512 a row at decode, else one a row.
Result<LaunchDims> launch_hc_collapse_norm(const Call& call, const CallEnv& env) {
  (void)call;
  constexpr int64_t kSplits = 16;
  LaunchDims d = one_block_per_row(env, 512);
  if (env.rows >= 1 && env.rows <= kSplitRows) d.grid[1] = kSplits;
  return d;
}

Result<LaunchDims> launch_hc_post(const Call& call, const CallEnv& env) {
  // kernels/hc_post.cuh: one thread per column, every stream
  return row_by_columns(env, call.constant("hidden"), 256);
}

}  // namespace dsv41
