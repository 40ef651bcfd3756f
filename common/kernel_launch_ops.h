// common/kernel_launch_ops.h — private to kernel_launch*.cpp: one launch function per op, and helpers.
#pragma once

#include "common/kernel_launch.h"

namespace dsv41 {

// ceil(a / b) for a >= 0, b > 0.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Dynamic shared memory of the tiled tensor-core GEMM (kernels/gemm_tile.cuh smem_bytes): stages of a
// BM-row A tile and a 128-row B tile; the 64-row tile (experts, FP8 / FP4 products) in three stages of
// 32 + 8 bf16 a row, the 128-row one (BF16 products) in four such stages (81,920 bytes) or two of 64 + 8
// (73,728): the constant is the larger.
constexpr int64_t kGemmSmemBytes = 3 * (64 + 128) * (32 + 8) * 2;
constexpr int64_t kWideGemmSmemBytes = 4 * (128 + 128) * (32 + 8) * 2;

// The two common shapes: one block of `threads` per phase row, or one thread per element.
inline LaunchDims one_block_per_row(const CallEnv& env, int64_t threads) {
  LaunchDims d;
  d.block = threads;
  d.grid[0] = env.rows;
  return d;
}
// One block row per phase row, `threads`-wide blocks across `columns` (grid (R, ceil(columns/threads))).
inline LaunchDims row_by_columns(const CallEnv& env, int64_t columns, int64_t threads) {
  LaunchDims d;
  d.block = threads;
  d.grid[0] = env.rows;
  d.grid[1] = ceil_div(columns, threads);
  return d;
}
inline LaunchDims one_thread_per_element(int64_t elements, int64_t threads) {
  LaunchDims d;
  d.block = threads;
  d.grid[0] = ceil_div(elements, threads);
  return d;
}

// The first dimension of a weight or state argument (a table's rows, a cache's capacity).
Result<int64_t> arg_rows(const Call& call, const CallEnv& env, const std::string& arg);

#define DSV41_LAUNCH_OPS(X)                                                                          \
  X(embed) X(hc_pre_init) X(hc_collapse_norm) X(hc_mix) X(hc_post) X(linear)                       \
  X(grouped_linear) X(rmsnorm) X(rope) X(rmsnorm_rope) X(compress) X(index_select)                 \
  X(sparse_attention) X(window_store) X(exchange_sum)                                               \
  X(exchange_gather) X(router) X(moe_experts) X(shared_expert)                                      \
  X(engram_hash) X(engram_lookback) X(engram_gather) X(engram_gate)                                 \
  X(stream_mean) X(block_attention) X(markov_logits) X(markov_pick)

#define DSV41_DECLARE_LAUNCH(op) Result<LaunchDims> launch_##op(const Call& call, const CallEnv& env);
DSV41_LAUNCH_OPS(DSV41_DECLARE_LAUNCH)
#undef DSV41_DECLARE_LAUNCH

}  // namespace dsv41
