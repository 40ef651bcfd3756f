// common/kernel_launch_attention.cpp — launches of the compressed-attention ops (compress,
// index_select, sparse_attention); the grids match the comments atop kernels/compress.cuh,
// kernels/index_select.cuh and kernels/sparse_attention.cuh.
#include <algorithm>

#include "common/kernel_launch_ops.h"

namespace dsv41 {
namespace {

constexpr int64_t kThreads = 256;  // every kernel of this file
// The most shared memory one block may use on the release target (sm_90: 227 KiB opt-in); sizes the
// "index entries" bound of index_select.
constexpr int64_t kSharedPerBlock = 227 * 1024;

// Mirrors index_select_detail of kernels/index_select.cuh.
int64_t index_q_stride(int64_t di) { return (di + 31) / 32 * 32 + 8; }
int64_t index_static_shared(int64_t hi, int64_t di) { return 4 * hi * index_q_stride(di) + 4 * hi + 256; }
int64_t index_dynamic_shared(int64_t entries, int64_t mode, int64_t block) {
  const int64_t nb = mode == 0 ? 0 : (entries + block - 1) / block;
  return 4 * entries + (mode == 1 ? 4 * nb : mode == 2 ? (nb + 3) / 4 * 4 : 0);
}

}  // namespace

// One block walks every row in row order (kernels/compress.cuh).
Result<LaunchDims> launch_compress(const Call& call, const CallEnv& env) {
  LaunchDims d;
  d.block = kThreads;
  const int64_t dh = call.constant("head_dim"), di = call.constant("index_head_dim");
  const int64_t rope = call.constant("rope_dim");
  d.bounds.push_back({"static shared memory", 4 * (dh + di + 32) + 8 * (rope / 2), 48 * 1024});
  return d;
}

// One block per row; the scores of every visible entry in dynamic shared memory.
Result<LaunchDims> launch_index_select(const Call& call, const CallEnv& env) {
  DSV41_ASSIGN_OR_RETURN(const int64_t capacity, arg_rows(call, env, "index_cache"));
  const int64_t hi = call.constant("index_heads"), di = call.constant("index_head_dim");
  const int64_t mode = call.constant("mode");
  const int64_t block = mode == 0 ? 1 : std::max<int64_t>(1, call.constant("cand_block_size"));
  LaunchDims d;
  d.block = kThreads;
  d.grid[0] = std::max<int64_t>(1, env.rows);
  d.dynamic_shared = index_dynamic_shared(capacity, mode, block);
  const int64_t fixed = index_static_shared(hi, di);
  // The largest capacity whose scores fit beside the queries.
  int64_t max_entries = 0;
  if (kSharedPerBlock > fixed) {
    max_entries = (kSharedPerBlock - fixed) / 4;
    while (max_entries > 0 && fixed + index_dynamic_shared(max_entries, mode, block) > kSharedPerBlock) --max_entries;
  }
  d.bounds.push_back({"index entries", capacity, std::max<int64_t>(1, max_entries)});
  d.bounds.push_back({"shared memory", fixed + d.dynamic_shared, 0});
  return d;
}

// One block per (row, head).
Result<LaunchDims> launch_sparse_attention(const Call& call, const CallEnv& env) {
  LaunchDims d;
  d.block = kThreads;
  d.grid[0] = std::max<int64_t>(1, env.rows);
  d.grid[1] = call.constant("heads");
  const int64_t dh = call.constant("head_dim"), window = call.constant("window"), topk = call.constant("topk");
  d.bounds.push_back({"static shared memory", 4 * dh + 12 * (window + topk) + 256, 46 * 1024});
  return d;
}

}  // namespace dsv41
