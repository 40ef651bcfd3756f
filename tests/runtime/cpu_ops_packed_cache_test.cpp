// tests/runtime/cpu_ops_packed_cache_test.cpp — the cache ops on packed (official-format) caches: each
// against the same op on activation caches holding the values the packed rows decode to.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "common/cache_format.h"
#include "tests/runtime/fake_op_context.h"

namespace dsv41::cpu::testing {
namespace {

// A packed state buffer of `rows` random rows of `dim` values for `role`; returns the decoded values.
std::vector<float> fill_packed(FakeContext& ctx, const std::string& name, CacheRole role, int64_t rows, int64_t dim,
                               std::mt19937& rng, int slots = 1) {
  const int64_t width = packed_row_bytes(role, dim);
  ctx.add_state(name, kPackedCacheDType, {rows, width}, slots);
  std::vector<float> decoded;
  for (int s = 0; s < slots; ++s) {
    const TensorView view = ctx.slot_state(name, s);
    const std::vector<float> values = random_values(rng, rows * dim, -2.0f, 2.0f, false);
    for (int64_t r = 0; r < rows; ++r) {
      pack_cache_row(role, values.data() + r * dim, dim, view.data + r * width);
      std::vector<float> back(static_cast<size_t>(dim));
      unpack_cache_row(role, view.data + r * width, dim, back.data());
      decoded.insert(decoded.end(), back.begin(), back.end());
    }
  }
  return decoded;
}

TEST(CpuPackedCaches, WindowStorePacksEachRowAsTheOfficialFp8Format) {
  const int64_t window = 4, dh = 64, rows = 6;
  std::mt19937 rng(2024);
  const std::vector<float> kv = random_values(rng, rows * dh, -3.0f, 3.0f, true);
  std::vector<RowStatic> statics;
  for (int32_t i = 0; i < rows; ++i) statics.push_back({0, 0, 2 + i, 0});  // positions 2..7 wrap the ring
  FakeContext ctx("window_store", {{"window", window}, {"head_dim", dh}});
  ctx.set_rows(statics);
  fill(ctx.add_scratch("kv", DType::BF16, {rows, dh}), kv);
  const int64_t width = packed_row_bytes(CacheRole::Window, dh);
  ctx.add_state("ring", kPackedCacheDType, {window, width}, 1);
  ASSERT_TRUE(ctx.run().is_ok());
  const TensorView ring = ctx.slot_state("ring", 0);
  for (int64_t r = 2; r < rows; ++r) {  // the last `window` rows survive
    std::vector<uint8_t> expected(static_cast<size_t>(width));
    pack_cache_row(CacheRole::Window, kv.data() + r * dh, dh, expected.data());
    const int64_t entry = (2 + r) % window;
    EXPECT_EQ(0, std::memcmp(ring.data + entry * width, expected.data(), expected.size())) << "row " << r;
  }
}

// sparse_attention over packed rows equals sparse_attention over f32 rows holding the decoded values,
// with this step's kv rows rounded through the window format.
TEST(CpuPackedCaches, SparseAttentionReadsTheDecodedRowsAndRoundsThisStepsRows) {
  const int64_t heads = 2, dh = 64, window = 4, topk = 3, entries = 5, rows = 3;
  std::mt19937 rng(77);
  const std::vector<float> q = random_values(rng, rows * heads * dh, -1.0f, 1.0f, false);
  const std::vector<float> kv = random_values(rng, rows * dh, -2.0f, 2.0f, false);
  std::vector<RowStatic> statics = {{0, 0, 6, 0}, {0, 0, 7, 0}, {0, 0, 8, 0}};
  const std::vector<int32_t> selected = {4, 0, -1, 1, 2, 3, -1, -1, 0};
  std::vector<float> outs[2];
  std::vector<float> ring_values, cache_values;
  for (int packed = 1; packed >= 0; --packed) {
    FakeContext ctx("sparse_attention",
                    {{"heads", heads}, {"head_dim", dh}, {"window", window}, {"topk", topk}, {"rope_dim", 0}});
    ctx.set_rows(statics);
    fill(ctx.add_scratch("q", DType::F32, {rows, heads * dh}), q);
    std::vector<float> step = kv;
    if (!packed)
      for (int64_t r = 0; r < rows; ++r) round_cache_row(CacheRole::Window, kv.data() + r * dh, dh, step.data() + r * dh);
    fill(ctx.add_scratch("kv", DType::F32, {rows, dh}), step);
    if (packed) {
      ring_values = fill_packed(ctx, "ring", CacheRole::Window, window, dh, rng);
      cache_values = fill_packed(ctx, "cache", CacheRole::Compressed, entries, dh, rng);
    } else {
      ctx.add_state("ring", DType::F32, {window, dh}, 1);
      fill(ctx.slot_state("ring", 0), ring_values);
      ctx.add_state("cache", DType::F32, {entries, dh}, 1);
      fill(ctx.slot_state("cache", 0), cache_values);
    }
    TensorView sel = ctx.add_scratch("selected", DType::I32, {rows, topk});
    for (int64_t i = 0; i < rows * topk; ++i) sel.set_int(i, selected[i]);
    ctx.add_weight("sink", {heads}, {0.25f, -0.5f});
    ctx.add_float("scale", 0.125);
    ctx.add_rope(10000.0, 1.0, 0, 32, 1);  // rope_dim 0: no inverse rope
    const TensorView out = ctx.add_scratch("out", DType::F32, {rows, heads * dh});
    ASSERT_TRUE(ctx.run().is_ok()) << (packed ? "packed" : "f32");
    for (int64_t i = 0; i < rows * heads * dh; ++i) outs[packed].push_back(out.get(i));
  }
  ASSERT_EQ(outs[0].size(), outs[1].size());
  for (size_t i = 0; i < outs[0].size(); ++i) ASSERT_EQ(outs[1][i], outs[0][i]) << "element " << i;
  // The step rows' rounding is no identity on these values (else the comparison would not see it).
  std::vector<float> rounded(static_cast<size_t>(dh));
  round_cache_row(CacheRole::Window, kv.data(), dh, rounded.data());
  EXPECT_NE(rounded, std::vector<float>(kv.begin(), kv.begin() + dh));
}

// index_select over packed index keys equals index_select over f32 keys holding the decoded values.
TEST(CpuPackedCaches, IndexSelectScoresTheDecodedKeys) {
  const int64_t heads = 2, di = 32, entries = 12, topk = 4, rows = 2;
  std::mt19937 rng(5);
  const std::vector<float> iq = random_values(rng, rows * heads * di, -1.0f, 1.0f, false);
  const std::vector<float> iw = random_values(rng, rows * heads, -1.0f, 1.0f, false);
  std::vector<RowStatic> statics = {{0, 0, 10, 0}, {0, 0, 11, 0}};
  std::vector<int32_t> outs[2];
  std::vector<float> keys;
  for (int packed = 1; packed >= 0; --packed) {
    FakeContext ctx("index_select", {{"index_heads", heads}, {"index_head_dim", di}, {"ratio", 1}, {"topk", topk},
                                     {"mode", 0}, {"cand_blocks", 0}, {"cand_block_size", 0}});
    ctx.set_rows(statics);
    fill(ctx.add_scratch("iq", DType::F32, {rows, heads * di}), iq);
    fill(ctx.add_scratch("iw", DType::F32, {rows, heads}), iw);
    if (packed) {
      keys = fill_packed(ctx, "index_cache", CacheRole::IndexKey, entries, di, rng);
    } else {
      ctx.add_state("index_cache", DType::F32, {entries, di}, 1);
      fill(ctx.slot_state("index_cache", 0), keys);
    }
    const TensorView out = ctx.add_scratch("out", DType::I32, {rows, topk});
    ASSERT_TRUE(ctx.run().is_ok()) << (packed ? "packed" : "f32");
    for (int64_t i = 0; i < rows * topk; ++i) outs[packed].push_back(out.get_int(i));
  }
  EXPECT_EQ(outs[1], outs[0]);
}

// compress with packed caches stores exactly the packed form of what it stores in bf16 caches (both
// round the latent and the rows to bf16 first).
TEST(CpuPackedCaches, CompressPacksTheRowsItWouldStoreAsBf16) {
  const int64_t dh = 64, di = 32, rope = 16, ratio = 2, entries = 4, rows = 6;
  std::mt19937 rng(31);
  const std::vector<float> raw = random_values(rng, rows * dh, -2.0f, 2.0f, false);
  const std::vector<float> gate = random_values(rng, rows * dh, -2.0f, 2.0f, false);
  const std::vector<float> norm = random_values(rng, dh, 0.5f, 1.5f, false);
  const std::vector<float> wk = random_values(rng, di * dh, -0.2f, 0.2f, false);
  const std::vector<float> k_norm = random_values(rng, di, 0.5f, 1.5f, false);
  std::vector<RowStatic> statics;
  for (int32_t i = 0; i < rows; ++i) statics.push_back({0, 0, i, 0});  // positions 0..5 close entries 0, 1, 2
  std::vector<std::vector<float>> cache(2), index(2);
  std::vector<uint8_t> packed_cache, packed_index;
  for (int packed = 0; packed < 2; ++packed) {
    FakeContext ctx("compress", {{"ratio", ratio}, {"head_dim", dh}, {"index_head_dim", di}, {"rope_dim", rope}});
    ctx.set_rows(statics);
    fill(ctx.add_scratch("raw", DType::F32, {rows, dh}), raw);
    fill(ctx.add_scratch("gate", DType::F32, {rows, dh}), gate);
    ctx.add_weight("norm", {dh}, norm);
    ctx.add_weight("wk", {di, dh}, wk);
    ctx.add_weight("k_norm", {di}, k_norm);
    ctx.add_float("eps", 1e-6);
    ctx.add_rope(160000.0, 16.0, 256, 32, 1);
    ctx.add_state("tail", DType::F32, {ratio, 2 * dh}, 1);
    if (packed) {
      ctx.add_state("cache", kPackedCacheDType, {entries, packed_row_bytes(CacheRole::Compressed, dh)}, 1);
      ctx.add_state("index_cache", kPackedCacheDType, {entries, packed_row_bytes(CacheRole::IndexKey, di)}, 1);
    } else {
      ctx.add_state("cache", DType::BF16, {entries, dh}, 1);
      ctx.add_state("index_cache", DType::BF16, {entries, di}, 1);
    }
    ASSERT_TRUE(ctx.run().is_ok()) << (packed ? "packed" : "bf16");
    const TensorView c = ctx.slot_state("cache", 0), k = ctx.slot_state("index_cache", 0);
    if (packed) {
      packed_cache.assign(c.data, c.data + c.numel());
      packed_index.assign(k.data, k.data + k.numel());
    } else {
      for (int64_t i = 0; i < entries * dh; ++i) cache[0].push_back(c.get(i));
      for (int64_t i = 0; i < entries * di; ++i) index[0].push_back(k.get(i));
    }
  }
  const int64_t cw = packed_row_bytes(CacheRole::Compressed, dh), kw = packed_row_bytes(CacheRole::IndexKey, di);
  for (int64_t j = 0; j < 3; ++j) {
    std::vector<uint8_t> expect_c(static_cast<size_t>(cw)), expect_k(static_cast<size_t>(kw));
    pack_cache_row(CacheRole::Compressed, cache[0].data() + j * dh, dh, expect_c.data());
    pack_cache_row(CacheRole::IndexKey, index[0].data() + j * di, di, expect_k.data());
    EXPECT_EQ(0, std::memcmp(packed_cache.data() + j * cw, expect_c.data(), expect_c.size())) << "entry " << j;
    EXPECT_EQ(0, std::memcmp(packed_index.data() + j * kw, expect_k.data(), expect_k.size())) << "entry " << j;
  }
}

}  // namespace
}  // namespace dsv41::cpu::testing
