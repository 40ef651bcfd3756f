// common/kernel_launch_attention.cpp — launches of the compressed-attention ops (compress,
// index_select, sparse_attention); the grids match the comments atop kernels/compress.cuh,
// kernels/index_select.cuh and kernels/sparse_attention.cuh.
#include <algorithm>

#include "common/kernel_launch_ops.h"

namespace dsv41 {
namespace {

constexpr int64_t kThreads = 256;  // every kernel of this file
// The most shared memory one block may use on the release target (sm_90: 227 KiB opt-in); sizes the
// "index entries" bound of index_select (mode 2: the candidate bitmap grows with the capacity).
constexpr int64_t kSharedPerBlock = 227 * 1024;

// Mirrors index_select_detail of kernels/index_select.cuh.
constexpr int64_t kIndexChunk = 4096;    // entries scored per pass
constexpr int64_t kIndexMaxList = 4096;  // the most topk and cand_blocks
constexpr int64_t kIndexShInts = 256 + 64;
constexpr int64_t kIndexSplitRows = 16, kIndexSplitBlocks = 128, kIndexMinSlice = 64;
int64_t index_q_stride(int64_t di) { return (di + 31) / 32 * 32 + 8; }
// kernels/index_scores.cuh: the register path's head terms (64 entries a pass) for its shapes.
int64_t index_term_floats(int64_t hi, int64_t di) { return di % 8 == 0 && di <= 128 && hi <= 32 ? hi * 64 : 1; }
int64_t index_static_shared(int64_t hi, int64_t di) {
  return 4 * hi * index_q_stride(di) + 4 * hi + 4 * kIndexShInts + 4 * (kIndexSplitBlocks + 2) +
         4 * index_term_floats(hi, di);
}
// Blocks per row: decode phases spread each row's entries over blocks (partial top-k lists merged by
// the row's last block); S·R stays within the kernel's partial lists.
int64_t index_splits(int64_t rows, int64_t capacity, int64_t mode, int64_t block) {
  if (rows < 1 || rows > kIndexSplitRows || (mode == 1 && block > kIndexChunk)) return 1;
  return std::clamp<int64_t>(ceil_div(capacity, kIndexMinSlice), 1, kIndexSplitBlocks / rows);
}
int64_t index_chunk_blocks(int64_t mode, int64_t block) {
  return mode != 1 ? 0 : block <= kIndexChunk ? kIndexChunk / block : 1;
}
int64_t index_dynamic_shared(int64_t entries, int64_t topk, int64_t mode, int64_t cand_blocks, int64_t block) {
  const int64_t nb = mode == 2 ? (entries + block - 1) / block : 0;
  return 8 * (topk + kIndexChunk) + (mode == 1 ? 8 * (cand_blocks + index_chunk_blocks(mode, block)) : 0) +
         (mode == 2 ? 4 * ((nb + 31) / 32) : 0);
}

// Mirrors sparse_attention_detail of kernels/sparse_attention.cuh.
constexpr int64_t kAttnTile = 32, kAttnMaxGroup = 8, kAttnMaxSplits = 32, kAttnMaxPartials = 4096;
constexpr int64_t kAttnMaxHeadDim = 2048, kAttnMaxRopeDim = 64;
// Its static arrays, about 10 KiB, and the row's rope table (cos and sin of rope_dim / 2 pairs).
constexpr int64_t kAttnStaticShared = 4 * (32 * 8 + 8 * 8 * 32 + 3 * 8 + 8 * 32) + 12 * 32 + 16;
int64_t rope_table_bytes(const Call& call) { return 8 * (call.constant("rope_dim") / 2); }
constexpr int64_t kAttnSplitRows = kManyRowsAbove;  // phases of at most this many rows split their keys
constexpr int64_t kAttnTargetBlocks = 264;  // two blocks per SM of the H200's 132
constexpr int64_t kAttnCombineSplits = 64;  // (head, split) partials one combining block reads at most

// Mirrors sparse_attention_prefill of kernels/sparse_attention_prefill.cuh: phases of more than
// kManyRowsAbove rows (the variants with many_rows = 1) with bf16 kv and ring (the cache is then bf16
// too) and head_dim a multiple of 16 up to 512 run on tensor cores, a block a (row, 16 heads), 32-key
// tiles.
constexpr int64_t kPrefillHeads = 16, kPrefillKeys = 32, kPrefillMaxDim = 512;
bool prefill_attention(const Call& call, const CallEnv& env, int64_t dh) {
  if (env.rows <= kManyRowsAbove || dh % 16 != 0 || dh > kPrefillMaxDim || !env.buffer) return false;
  const BufferDecl* kv = env.buffer(call.arg("kv"));
  const BufferDecl* ring = env.buffer(call.arg("ring"));
  return kv && ring && kv->dtype == DType::BF16 && ring->dtype == DType::BF16;
}
int64_t prefill_shared(int64_t dh) {  // 2 key tiles, 4 warps' logit parts, weights hi/lo, 2 tiles' key rows, head stats
  const int64_t parts = kPrefillKeys + 8;
  return 2 * 2 * kPrefillKeys * (dh + 8) + 4 * 4 * kPrefillHeads * parts + 2 * 2 * kPrefillHeads * parts +
         2 * 12 * kPrefillKeys + 12 * kPrefillHeads;
}

}  // namespace

// A block per closing row, rows grid-strided over at most kCompressBlocks blocks (kernels/compress.cuh).
constexpr int64_t kCompressBlocks = 2048;

Result<LaunchDims> launch_compress(const Call& call, const CallEnv& env) {
  LaunchDims d;
  d.block = kThreads;
  d.grid[0] = std::clamp<int64_t>(env.rows, 1, kCompressBlocks);
  const int64_t dh = call.constant("head_dim"), di = call.constant("index_head_dim");
  const int64_t rope = call.constant("rope_dim");
  d.bounds.push_back({"static shared memory", 4 * (dh + di + 32) + 8 * (rope / 2), 48 * 1024});
  return d;
}

// Grid (R, S): S blocks per row at decode (index_splits), one otherwise; each block streams its entries
// in chunks, so shared memory does not grow with the capacity except for mode 2's bitmap of candidate
// blocks.
Result<LaunchDims> launch_index_select(const Call& call, const CallEnv& env) {
  DSV41_ASSIGN_OR_RETURN(const int64_t capacity, arg_rows(call, env, "index_cache"));
  const int64_t hi = call.constant("index_heads"), di = call.constant("index_head_dim");
  const int64_t mode = call.constant("mode"), topk = call.constant("topk");
  const int64_t cand_blocks = mode == 0 ? 0 : call.constant("cand_blocks");
  const int64_t block = mode == 0 ? 1 : std::max<int64_t>(1, call.constant("cand_block_size"));
  LaunchDims d;
  d.block = kThreads;
  d.grid[0] = std::max<int64_t>(1, env.rows);
  d.grid[1] = index_splits(env.rows, capacity, mode, block);
  d.dynamic_shared = index_dynamic_shared(capacity, topk, mode, cand_blocks, block);
  const int64_t fixed = index_static_shared(hi, di);
  // The running lists live in shared memory (static_asserts of the kernel).
  d.bounds.push_back({"index_select topk", topk, kIndexMaxList});
  if (mode != 0) d.bounds.push_back({"index_select cand_blocks", cand_blocks, kIndexMaxList});
  // The largest capacity the kernel takes: entry indices are 32-bit; in mode 2 the bitmap of candidate
  // blocks (4 bytes per 32 blocks) must fit beside everything else.
  int64_t max_entries = (int64_t{1} << 31) - 1;
  if (mode == 2) {
    const int64_t rest = fixed + index_dynamic_shared(0, topk, mode, cand_blocks, block);
    const int64_t words = kSharedPerBlock > rest ? (kSharedPerBlock - rest) / 4 : 0;
    max_entries = std::min(max_entries, words * 32 * block);
  }
  d.bounds.push_back({"index entries", capacity, std::max<int64_t>(1, max_entries)});
  d.bounds.push_back({"index_select shared memory", fixed + d.dynamic_shared, 0});
  return d;
}

// Prefill phases in bf16 (prefill_attention): grid (R, ⌈H/16⌉), kernels/sparse_attention_prefill.cuh.
// Else grid (R, ⌈H/G⌉, S), kernels/sparse_attention.cuh: G heads a block share each key read; decode phases
// split a row's key slots over S blocks (whole tiles each, within the kernel's partial arrays), larger
// phases take a block a (row, group) over every key with G = 8. At decode each G of 2, 4, 8 gets the
// most splits that keep the launch within kAttnTargetBlocks (one wave: a second wave of a few blocks
// doubled the time) and the combining block within kAttnCombineSplits (head, split) partials; the G
// whose blocks walk the fewest tiles wins, the smaller G on a tie (docs/perf.md "sattn": the sweep).
Result<LaunchDims> launch_sparse_attention(const Call& call, const CallEnv& env) {
  const int64_t heads = call.constant("heads"), dh = call.constant("head_dim");
  const int64_t window = call.constant("window"), topk = call.constant("topk");
  const int64_t rows = std::max<int64_t>(1, env.rows);
  if (prefill_attention(call, env, dh)) {
    LaunchDims d;
    d.block = kThreads;
    d.grid[0] = rows;
    d.grid[1] = ceil_div(heads, kPrefillHeads);
    d.dynamic_shared = prefill_shared(dh);
    d.bounds.push_back({"sparse_attention rope_dim", call.constant("rope_dim"), kAttnMaxRopeDim});
    // Its own variant: of the decode path's static arrays only the rope table.
    d.bounds.push_back({"sparse_attention shared memory", rope_table_bytes(call) + d.dynamic_shared, 0});
    return d;
  }
  const int64_t tiles = ceil_div(window + topk, kAttnTile);
  int64_t group = std::min(heads, kAttnMaxGroup), splits = 1;
  if (rows <= kAttnSplitRows) {
    const int64_t most = std::min({kAttnMaxSplits, tiles, kAttnMaxPartials / (rows * heads)});
    int64_t best_walk = 0;
    for (int64_t g = 2; g <= kAttnMaxGroup; g *= 2) {
      const int64_t gg = std::min(heads, g);
      int64_t s = std::min({most, kAttnTargetBlocks / (rows * ceil_div(heads, gg)), kAttnCombineSplits / gg});
      s = std::max<int64_t>(1, s);
      s = ceil_div(tiles, ceil_div(tiles, s));  // no split left without a tile
      const int64_t walk = ceil_div(tiles, s);  // tiles a block walks
      if (best_walk == 0 || walk < best_walk) best_walk = walk, group = gg, splits = s;
      if (gg == heads) break;
    }
  }
  const int64_t groups = ceil_div(heads, group);
  LaunchDims d;
  d.block = kThreads;
  d.grid[0] = rows;
  d.grid[1] = groups;
  d.grid[2] = splits;
  const int64_t dp = (dh + 7) / 8 * 8;
  d.dynamic_shared = 4 * (kAttnTile * (dp + 4) + group * dp);
  d.bounds.push_back({"sparse_attention head_dim", dh, kAttnMaxHeadDim});
  d.bounds.push_back({"sparse_attention rope_dim", call.constant("rope_dim"), kAttnMaxRopeDim});
  d.bounds.push_back({"sparse_attention shared memory", kAttnStaticShared + rope_table_bytes(call) + d.dynamic_shared, 0});
  return d;
}

}  // namespace dsv41
