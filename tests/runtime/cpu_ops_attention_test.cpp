// tests/runtime/cpu_ops_attention_test.cpp — compressor, indexer selection, sparse attention and the window ring against direct evaluation.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

#include "runtime/cpu/rope_math.h"
#include "tests/runtime/fake_op_context.h"

namespace dsv41::cpu::testing {
namespace {

constexpr double kBf16Rel = 1.0 / 128;

// RMSNorm then RoPE of the last `rope_dim` dims at `position`, in double (no rounding).
std::vector<double> norm_rope(std::vector<double> v, const std::vector<float>& w, int64_t rope_dim,
                              const std::vector<double>& freqs, int64_t position, bool round_norm) {
  double sq = 0;
  for (double x : v) sq += x * x;
  const double inv = 1.0 / std::sqrt(sq / double(v.size()) + 1e-20);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = v[i] * inv * w[i];
    if (round_norm) v[i] = bf16_round(float(v[i]));
  }
  const size_t o = v.size() - rope_dim;
  for (int64_t i = 0; i < rope_dim / 2; ++i) {
    const double a = position * freqs[i], e = v[o + 2 * i], f = v[o + 2 * i + 1];
    v[o + 2 * i] = e * std::cos(a) - f * std::sin(a);
    v[o + 2 * i + 1] = f * std::cos(a) + e * std::sin(a);
  }
  return v;
}

struct CompressCase {
  DType act = DType::BF16;  // F32: the check mode
  int64_t ratio = 1, dh = 16, di = 8, rope = 4, entries = 4;
  std::vector<float> norm, wk, k_norm;
};

FakeContext compress_call(const CompressCase& c, const std::vector<RowStatic>& rows, const std::vector<float>& raw,
                          const std::vector<float>& gate) {
  FakeContext ctx("compress", {{"ratio", c.ratio}, {"head_dim", c.dh}, {"index_head_dim", c.di}, {"rope_dim", c.rope}});
  const auto n = static_cast<int64_t>(rows.size());
  ctx.set_rows(rows);
  fill(ctx.add_scratch("raw", DType::F32, {n, c.dh}), raw);
  if (c.ratio >= 2) fill(ctx.add_scratch("gate", DType::F32, {n, c.dh}), gate);
  ctx.add_weight("norm", {c.dh}, c.norm);
  ctx.add_weight("wk", {c.di, c.dh}, c.wk);
  ctx.add_weight("k_norm", {c.di}, c.k_norm);
  ctx.add_float("eps", 1e-20);
  ctx.add_rope(160000.0, 16.0, 256, 32, 1);
  if (c.ratio >= 2) ctx.add_state("tail", DType::F32, {c.ratio, 2 * c.dh}, 1);
  ctx.add_state("cache", c.act, {c.entries, c.dh}, 1);
  ctx.add_state("index_cache", c.act, {c.entries, c.di}, 1);
  return ctx;
}

// Checks entry j of the caches against the latent (pre-norm, fp64) that closed it.
void expect_entry(FakeContext& ctx, const CompressCase& c, int64_t j, const std::vector<double>& pooled) {
  const std::vector<double> freqs = rope_frequencies(c.rope, RopeParams{160000.0, 16.0, 256, 32, 1});
  const bool round = c.act == DType::BF16;
  const double rel = round ? kBf16Rel : 1e-5;
  std::vector<double> latent = norm_rope(pooled, c.norm, 0, freqs, 0, round);
  const std::vector<double> row = norm_rope(pooled, c.norm, c.rope, freqs, j * c.ratio, round);
  TensorView cache = ctx.slot_state("cache", 0), index_cache = ctx.slot_state("index_cache", 0);
  for (int64_t d = 0; d < c.dh; ++d)
    EXPECT_NEAR(cache.get(j * c.dh + d), row[d], rel * std::fabs(row[d]) + (round ? 1e-3 : 1e-5))
        << "entry " << j << " dim " << d;
  std::vector<double> key(c.di, 0.0);
  for (int64_t k = 0; k < c.di; ++k)
    for (int64_t d = 0; d < c.dh; ++d) key[k] += double(c.wk[k * c.dh + d]) * latent[d];
  key = norm_rope(key, c.k_norm, c.rope, freqs, j * c.ratio, false);
  for (int64_t k = 0; k < c.di; ++k)
    EXPECT_NEAR(index_cache.get(j * c.di + k), key[k], 2 * rel * std::fabs(key[k]) + (round ? 2e-2 : 1e-4))
        << "entry " << j << " key dim " << k;
}

class CompressByActivation : public ::testing::TestWithParam<DType> {};
INSTANTIATE_TEST_SUITE_P(Modes, CompressByActivation, ::testing::Values(DType::BF16, DType::F32),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST_P(CompressByActivation, CompressPoolsGroupsAcrossSteps) {
  std::mt19937 rng(11);
  CompressCase c;
  c.act = GetParam();
  c.ratio = 2;
  c.norm = random_values(rng, c.dh, 0.5f, 1.5f);
  c.wk = random_values(rng, c.di * c.dh);
  c.k_norm = random_values(rng, c.di, 0.5f, 1.5f);
  const std::vector<float> raw = random_values(rng, 4 * c.dh, -2, 2), gate = random_values(rng, 4 * c.dh, -2, 2);
  // Step 1: positions 0, 1, 2 (closes group 0, opens group 1) and an unused row; step 2: position 3.
  std::vector<RowStatic> step1 = {{0, 0, 0, 0}, {0, 0, 1, 0}, {0, 0, 2, 0}, {0, -1, 0, 0}};
  FakeContext ctx = compress_call(c, step1, raw, gate);
  ASSERT_TRUE(ctx.run().is_ok());
  FakeContext step2 = compress_call(c, {{0, 0, 3, 0}}, std::vector<float>(raw.begin() + 3 * c.dh, raw.end()),
                                    std::vector<float>(gate.begin() + 3 * c.dh, gate.end()));
  // Carry the slot's state into the second step.
  for (const char* name : {"tail", "cache", "index_cache"}) {
    TensorView from = ctx.slot_state(name, 0), to = step2.slot_state(name, 0);
    fill(to, values_of(from));
  }
  ASSERT_TRUE(step2.run().is_ok());
  for (int64_t j = 0; j < 2; ++j) {
    std::vector<double> pooled(c.dh);
    for (int64_t d = 0; d < c.dh; ++d) {
      const double g0 = gate[(2 * j) * c.dh + d], g1 = gate[(2 * j + 1) * c.dh + d];
      const double a0 = 1.0 / (1.0 + std::exp(g1 - g0));
      pooled[d] = a0 * raw[(2 * j) * c.dh + d] + (1 - a0) * raw[(2 * j + 1) * c.dh + d];
    }
    expect_entry(j == 0 ? ctx : step2, c, j, pooled);
  }
  // Entries past the closed ones are untouched.
  for (int64_t d = 0; d < c.dh; ++d) EXPECT_EQ(step2.slot_state("cache", 0).get(2 * c.dh + d), 0.0f);
}

TEST(CpuAttentionOps, CompressRatioOneWritesEveryPositionAndRefusesOverflow) {
  std::mt19937 rng(12);
  CompressCase c;
  c.ratio = 1;
  c.norm = random_values(rng, c.dh, 0.5f, 1.5f);
  c.wk = random_values(rng, c.di * c.dh);
  c.k_norm = random_values(rng, c.di, 0.5f, 1.5f);
  const std::vector<float> raw = random_values(rng, 3 * c.dh, -2, 2);
  FakeContext ctx = compress_call(c, sequence_rows(3, 1), raw, {});
  ASSERT_TRUE(ctx.run().is_ok());
  for (int64_t r = 0; r < 3; ++r)
    expect_entry(ctx, c, r + 1, std::vector<double>(raw.begin() + r * c.dh, raw.begin() + (r + 1) * c.dh));
  FakeContext full = compress_call(c, sequence_rows(3, 2), raw, {});  // position 4 needs entry 4 of 4
  const Status s = full.run();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("position 4"), std::string::npos) << s.message();
}

struct IndexCase {
  int64_t heads = 2, width = 8, ratio = 1, topk = 3, blocks = 2, block = 2, entries = 16;
};

FakeContext index_call(const IndexCase& c, int64_t mode, const std::vector<RowStatic>& rows,
                       const std::vector<float>& iq, const std::vector<float>& iw, const std::vector<float>& keys) {
  FakeContext ctx("index_select", {{"index_heads", c.heads}, {"index_head_dim", c.width}, {"ratio", c.ratio},
                                   {"topk", c.topk}, {"mode", mode}, {"cand_blocks", c.blocks},
                                   {"cand_block_size", c.block}});
  const auto n = static_cast<int64_t>(rows.size());
  ctx.set_rows(rows);
  fill(ctx.add_scratch("iq", DType::F32, {n, c.heads * c.width}), iq);
  fill(ctx.add_scratch("iw", DType::F32, {n, c.heads}), iw);
  ctx.add_state("index_cache", DType::BF16, {c.entries, c.width}, 1);
  fill(ctx.slot_state("index_cache", 0), keys);
  if (mode != 0) ctx.add_scratch("candidates", DType::I32, {n, c.blocks});
  ctx.add_scratch("out", DType::I32, {n, c.topk});
  return ctx;
}

// I[s] of docs/model.md §6.3 in double.
std::vector<double> index_scores(const IndexCase& c, const float* iq, const float* iw, const std::vector<float>& keys,
                                 int64_t n) {
  std::vector<double> score(n, 0.0);
  for (int64_t s = 0; s < n; ++s)
    for (int64_t h = 0; h < c.heads; ++h) {
      double q = 0;
      for (int64_t d = 0; d < c.width; ++d) q += double(iq[h * c.width + d]) * bf16_round(keys[s * c.width + d]);
      score[s] += iw[h] / std::sqrt(double(c.width)) / std::sqrt(double(c.heads)) * std::max(0.0, q);
    }
  return score;
}

// The `count` best ids by higher value then lower id, ascending.
std::vector<int64_t> best_ids(const std::vector<double>& value, int64_t count) {
  std::vector<int64_t> ids(value.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) { return value[a] > value[b]; });
  ids.resize(std::min<size_t>(ids.size(), count));
  std::erase_if(ids, [&](int64_t s) { return value[s] == -INFINITY; });
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<int64_t> listed(const TensorView& v, int64_t row, int64_t width) {
  std::vector<int64_t> ids;
  for (int64_t k = 0; k < width; ++k)
    if (v.get_int(row * width + k) != -1) ids.push_back(v.get_int(row * width + k));
  for (int64_t k = static_cast<int64_t>(ids.size()); k < width; ++k) EXPECT_EQ(v.get_int(row * width + k), -1);
  return ids;
}

TEST(CpuAttentionOps, IndexSelectPicksTheTrueTopKOfVisibleEntries) {
  IndexCase c;
  c.ratio = 2;
  std::mt19937 rng(13);
  const int64_t rows = 12;
  const std::vector<float> iq = random_values(rng, rows * c.heads * c.width), iw = random_values(rng, rows * c.heads, 0.1f, 1);
  std::vector<float> keys = random_values(rng, c.entries * c.width);
  // Entries never visible to these rows score far higher: visibility alone keeps them out.
  for (int64_t i = 7 * c.width; i < c.entries * c.width; ++i) keys[i] = 50.0f;
  FakeContext ctx = index_call(c, 0, sequence_rows(rows - 1, 0, 1), iq, iw, keys);
  ASSERT_TRUE(ctx.run().is_ok());
  TensorView out = ctx.buffer("out");
  for (int64_t r = 0; r < rows - 1; ++r) {
    const int64_t n = (r + 1) / c.ratio;
    const std::vector<double> score = index_scores(c, iq.data() + r * c.heads * c.width, iw.data() + r * c.heads, keys, n);
    EXPECT_EQ(listed(out, r, c.topk), best_ids(score, c.topk)) << "row " << r << " n " << n;
  }
  for (int64_t k = 0; k < c.topk; ++k) EXPECT_EQ(out.get_int((rows - 1) * c.topk + k), 0);
}

TEST(CpuAttentionOps, CandidateBlocksPinTheNewestAndMaskTheRest) {
  IndexCase c;
  std::mt19937 rng(14);
  const int64_t rows = 12;
  const std::vector<float> iq = random_values(rng, rows * c.heads * c.width), iw = random_values(rng, rows * c.heads, 0.1f, 1);
  const std::vector<float> keys = random_values(rng, c.entries * c.width);
  const std::vector<RowStatic> statics = sequence_rows(rows, 0);
  FakeContext source = index_call(c, 1, statics, iq, iw, keys);
  ASSERT_TRUE(source.run().is_ok());
  FakeContext masked = index_call(c, 2, statics, iq, iw, keys);
  fill(masked.buffer("candidates"), values_of(source.buffer("candidates")));
  ASSERT_TRUE(masked.run().is_ok());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r + 1, nb = (n + c.block - 1) / c.block;
    std::vector<double> score = index_scores(c, iq.data() + r * c.heads * c.width, iw.data() + r * c.heads, keys, n);
    std::vector<double> best(nb, -INFINITY);
    for (int64_t s = 0; s < n; ++s) best[s / c.block] = std::max(best[s / c.block], score[s]);
    best[nb - 1] = INFINITY;
    const std::vector<int64_t> blocks = best_ids(best, c.blocks);
    EXPECT_EQ(listed(source.buffer("candidates"), r, c.blocks), blocks) << "row " << r;
    EXPECT_EQ(listed(source.buffer("out"), r, c.topk), best_ids(score, c.topk)) << "row " << r;
    for (int64_t s = 0; s < n; ++s)
      if (!std::binary_search(blocks.begin(), blocks.end(), s / c.block)) score[s] = -INFINITY;
    EXPECT_EQ(listed(masked.buffer("out"), r, c.topk), best_ids(score, c.topk)) << "row " << r;
  }
}

struct AttentionCase {
  int64_t heads = 2, dh = 8, window = 4, topk = 0, entries = 6;
};

// Rows: slot 1 at positions 5, 6, 7 (its first three rows are earlier steps' ring rows), slot 0
// at position 2, one unused row. Rings hold bf16 rows for the earlier positions.
TEST(CpuAttentionOps, SparseAttentionEqualsADirectSoftmaxWithSink) {
  for (int64_t topk : {0, 3}) {
    AttentionCase c;
    c.topk = topk;
    std::mt19937 rng(15 + topk);
    const std::vector<RowStatic> statics = {{0, 1, 5, 0}, {0, 1, 6, 0}, {0, 1, 7, 0}, {0, 0, 2, 3}, {0, -1, 0, 0}};
    const int64_t rows = 5;
    const std::vector<float> q = random_values(rng, rows * c.heads * c.dh, -2, 2, true);  // act: kv's dtype
    const std::vector<float> kv = random_values(rng, rows * c.dh, -2, 2, true);
    const std::vector<float> sink = random_values(rng, c.heads);
    FakeContext ctx("sparse_attention",
                    {{"heads", c.heads}, {"head_dim", c.dh}, {"window", c.window}, {"topk", topk}, {"rope_dim", 0}});
    ctx.set_rows(statics);
    fill(ctx.add_scratch("q", DType::BF16, {rows, c.heads * c.dh}), q);
    fill(ctx.add_scratch("kv", DType::BF16, {rows, c.dh}), kv);
    ctx.add_state("ring", DType::BF16, {c.window, c.dh}, 2);
    std::vector<std::vector<float>> rings = {random_values(rng, c.window * c.dh, -2, 2, true),
                                             random_values(rng, c.window * c.dh, -2, 2, true)};
    fill(ctx.slot_state("ring", 0), rings[0]);
    fill(ctx.slot_state("ring", 1), rings[1]);
    std::vector<std::vector<float>> caches;
    std::vector<int32_t> selected = {4, 0, -1, 1, 2, 5, 0, -1, -1, 3, 3, -1, 0, 0, 0};
    if (topk > 0) {
      ctx.add_state("cache", DType::BF16, {c.entries, c.dh}, 2);
      for (int slot = 0; slot < 2; ++slot) {
        caches.push_back(random_values(rng, c.entries * c.dh, -2, 2, true));
        fill(ctx.slot_state("cache", slot), caches.back());
      }
      TensorView sel = ctx.add_scratch("selected", DType::I32, {rows, topk});
      for (int64_t i = 0; i < rows * topk; ++i) sel.set_int(i, selected[i]);
    }
    ctx.add_weight("sink", {c.heads}, sink);
    const double scale = 1.0 / std::sqrt(double(c.dh));
    ctx.add_float("scale", scale);
    ctx.add_rope(10000.0, 1.0, 0, 32, 1);  // rope_dim 0: no inverse rope
    TensorView out = ctx.add_scratch("out", DType::BF16, {rows, c.heads * c.dh});
    ASSERT_TRUE(ctx.run().is_ok());

    for (int64_t r = 0; r < rows; ++r) {
      if (statics[r].slot < 0) {
        for (int64_t i = 0; i < c.heads * c.dh; ++i) EXPECT_EQ(out.get(r * c.heads * c.dh + i), 0.0f);
        continue;
      }
      const int slot = statics[r].slot;
      const int64_t p = statics[r].position, first = statics[r].first_row, p0 = statics[first].position;
      std::vector<const float*> keys;
      for (int64_t t = std::max<int64_t>(0, p - c.window + 1); t <= p; ++t)
        keys.push_back(t >= p0 ? kv.data() + (first + t - p0) * c.dh : rings[slot].data() + (t % c.window) * c.dh);
      for (int64_t k = 0; k < topk; ++k)
        if (selected[r * topk + k] >= 0) keys.push_back(caches[slot].data() + selected[r * topk + k] * c.dh);
      for (int64_t h = 0; h < c.heads; ++h) {
        std::vector<double> o(c.dh, 0.0);
        double denominator = std::exp(double(sink[h]));
        for (const float* key : keys) {
          double l = 0;
          for (int64_t d = 0; d < c.dh; ++d) l += double(q[(r * c.heads + h) * c.dh + d]) * key[d];
          const double e = std::exp(l * scale);
          denominator += e;
          for (int64_t d = 0; d < c.dh; ++d) o[d] += e * key[d];
        }
        for (int64_t d = 0; d < c.dh; ++d) {
          const double expected = o[d] / denominator;
          EXPECT_NEAR(out.get((r * c.heads + h) * c.dh + d), expected, kBf16Rel * std::fabs(expected) + 1e-5)
              << "topk " << topk << " row " << r << " head " << h << " dim " << d;
        }
      }
    }
  }
}

TEST(CpuAttentionOps, WindowStoreKeepsTheLastWindowOfEachSlot) {
  const int64_t window = 4, dh = 4, rows = 7;
  std::mt19937 rng(16);
  const std::vector<float> kv = random_values(rng, rows * dh, -1, 1, true);
  // Slot 0: positions 3..8 (wraps the ring); slot 1: position 0; one unused row.
  std::vector<RowStatic> statics;
  for (int32_t i = 0; i < 5; ++i) statics.push_back({0, 0, 3 + i, 0});
  statics.push_back({0, 1, 0, 5});
  statics.push_back({0, -1, 9, 0});
  FakeContext ctx("window_store", {{"window", window}, {"head_dim", dh}});
  ctx.set_rows(statics);
  fill(ctx.add_scratch("kv", DType::BF16, {rows, dh}), kv);
  ctx.add_state("ring", DType::BF16, {window, dh}, 2);
  ASSERT_TRUE(ctx.run().is_ok());
  for (int64_t r = 1; r < 6; ++r) {
    const TensorView ring = ctx.slot_state("ring", statics[r].slot);
    for (int64_t d = 0; d < dh; ++d) EXPECT_EQ(ring.get((statics[r].position % window) * dh + d), kv[r * dh + d]) << r;
  }
}

TEST(CpuAttentionOps, StaticsOrIndicesPastTheStateAreRefused) {
  auto attention = [](std::vector<RowStatic> statics, int32_t selected) {
    FakeContext ctx("sparse_attention", {{"heads", 1}, {"head_dim", 8}, {"window", 4}, {"topk", 1}, {"rope_dim", 0}});
    ctx.set_rows(statics);
    const auto rows = static_cast<int64_t>(statics.size());
    ctx.add_scratch("q", DType::BF16, {rows, 8});
    ctx.add_scratch("kv", DType::BF16, {rows, 8});
    ctx.add_state("ring", DType::BF16, {4, 8}, 1);
    ctx.add_state("cache", DType::BF16, {3, 8}, 1);
    TensorView sel = ctx.add_scratch("selected", DType::I32, {rows, 1});
    for (int64_t r = 0; r < rows; ++r) sel.set_int(r, selected);
    ctx.add_weight("sink", {1}, {0.0f});
    ctx.add_float("scale", 0.35);
    ctx.add_rope(10000.0, 1.0, 0, 32, 1);  // rope_dim 0: no inverse rope
    ctx.add_scratch("out", DType::BF16, {rows, 8});
    return ctx.run();
  };
  EXPECT_TRUE(attention({{0, 0, 5, 0}, {0, 0, 6, 0}}, 2).is_ok());
  EXPECT_FALSE(attention({{0, 0, 5, 0}, {0, 0, 6, 0}}, 3).is_ok()) << "entry 3 of a 3-entry cache";
  EXPECT_FALSE(attention({{0, 0, 5, 0}, {0, 0, 7, 0}}, 0).is_ok()) << "positions not consecutive";
  EXPECT_FALSE(attention({{0, 0, 5, 1}, {0, 0, 6, 1}}, 0).is_ok()) << "first row after the row";
  EXPECT_FALSE(attention({{0, 0, -1, 0}}, 0).is_ok()) << "negative position";

  IndexCase c;
  c.entries = 4;
  std::mt19937 rng(17);
  FakeContext index = index_call(c, 0, sequence_rows(1, 4), random_values(rng, c.heads * c.width),
                                 random_values(rng, c.heads), random_values(rng, c.entries * c.width));
  const Status s = index.run();  // position 4 sees 5 entries of 4
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("holds 4"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace dsv41::cpu::testing
