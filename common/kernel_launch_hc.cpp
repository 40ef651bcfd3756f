// common/kernel_launch_hc.cpp — launches of the embedding and hyper-connection ops (embed, hc_pre_init,
// hc_mix, hc_collapse_norm, hc_post); the grids match the comments atop their kernels/<op>.cuh.
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

namespace {

constexpr int64_t kSplitRows = 16;  // kernels/hc_mix.cuh kMixRows: phases of at most this many rows split a row

// Blocks of 512, 16 a row in phases of at most 16 rows, else one a row.
LaunchDims split_at_decode(const CallEnv& env) {
  constexpr int64_t kSplits = 16;
  LaunchDims d = one_block_per_row(env, 512);
  if (env.rows >= 1 && env.rows <= kSplitRows) d.grid[1] = kSplits;
  return d;
}

}  // namespace

// kernels/hc_mix.cuh: at decode, G input slices (at most its kMixSplits = 64) times Z groups of its kCols = 12
// fn columns a row, about 128 blocks in all at 1-8 rows (one wave: a block of 512 holds a SM's registers)
// and never fewer than 8 slices a row. The kernel
// takes any Z (a block loops over the column groups it owns), so Z only tunes the spread.
Result<LaunchDims> launch_hc_mix(const Call& call, const CallEnv& env) {
  constexpr int64_t kCols = 12, kMaxSlices = 64, kMinSlices = 8, kTargetBlocks = 128;
  const int64_t streams = call.constant("streams"), mix = (2 + streams) * streams;
  LaunchDims d = one_block_per_row(env, 512);
  if (env.rows >= 1 && env.rows <= kSplitRows) {
    const int64_t groups = (mix + kCols - 1) / kCols;
    d.grid[1] = std::clamp(kTargetBlocks / (env.rows * groups), kMinSlices, kMaxSlices);
    d.grid[2] = groups;
  }
  return d;
}

// kernels/hc_collapse_norm.cuh takes any split.
Result<LaunchDims> launch_hc_collapse_norm(const Call& call, const CallEnv& env) {
  (void)call;
  return split_at_decode(env);
}

// kernels/hc_step.cuh: blocks of 256; at decode G blocks a row, each a slice of the hidden columns, about
// 128 blocks in all at 1 row (its kStepSplits = 64 at most, 8 at least), else one a row.
Result<LaunchDims> launch_hc_step(const Call& call, const CallEnv& env) {
  (void)call;
  constexpr int64_t kMaxSlices = 64, kMinSlices = 8, kTargetBlocks = 128;
  LaunchDims d = one_block_per_row(env, 256);
  if (env.rows >= 1 && env.rows <= kSplitRows) d.grid[1] = std::clamp(kTargetBlocks / env.rows, kMinSlices, kMaxSlices);
  return d;
}

Result<LaunchDims> launch_hc_post(const Call& call, const CallEnv& env) {
  // kernels/hc_post.cuh: one thread per column, every stream
  return row_by_columns(env, call.constant("hidden"), 256);
}

}  // namespace dsv41
