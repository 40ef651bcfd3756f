// tests/reference/reference_model_test.cpp — the reference forward runs every path of the tiny model, causally and deterministically.
#include "tests/reference/reference_model.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>

#include <gtest/gtest.h>
#include <unistd.h>

#include "compiler/synth/synth_pack.h"
#include "tests/reference/reference_hc.h"

namespace dsv41::reference {
namespace {
namespace fs = std::filesystem;

using Logits = std::vector<std::vector<float>>;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

fs::path fixture_dir(const std::string& name) { return fs::path(DSV41_SOURCE_DIR) / "fixtures" / name; }

// Writes the tiny fixture as a synthetic pack (once per process and format) and loads it.
const ReferenceModel& tiny_model(SynthFormat format) {
  static std::unique_ptr<ReferenceModel> models[2];
  auto& slot = models[format == SynthFormat::BF16 ? 0 : 1];
  if (slot) return *slot;
  const fs::path dir = fs::path(testing::TempDir()) /
                       fmt::format("dsv41_reference_tiny_{}_{}", format == SynthFormat::BF16 ? "bf16" : "release",
                                   static_cast<long>(getpid()));
  const std::string text = read_text(fixture_dir("dsv41-tiny") / "config.json");
  auto config = parse_model_config(text, "dsv41-tiny");
  EXPECT_TRUE(config.is_ok()) << config.status().message();
  SynthPackOptions options;
  options.out_dir = dir.string();
  options.format = format;
  options.seed = 41;
  options.shards = 2;
  const Status written = write_synth_pack(*config, text, options);
  EXPECT_TRUE(written.is_ok()) << written.message();
  auto model = ReferenceModel::load(dir.string());
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  fs::remove_all(dir);
  slot = std::make_unique<ReferenceModel>(std::move(model).value());
  return *slot;
}

std::vector<int32_t> prompt(size_t n, uint32_t seed, int32_t vocab) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(3, vocab - 1);
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = pick(rng);
  return ids;
}

Logits run(const ReferenceModel& model, const std::vector<int32_t>& ids, ReferenceStats* stats = nullptr,
           Rounding rounding = Rounding::BF16) {
  auto logits = model.forward(ids, ForwardOptions{rounding, stats});
  EXPECT_TRUE(logits.is_ok()) << logits.status().message();
  return logits.is_ok() ? std::move(logits).value() : Logits{};
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

// The same weights under a config with other attention limits (shapes do not change).
ReferenceModel variant(const ReferenceModel& base, int64_t window, int64_t topk, int64_t candidate_blocks) {
  ModelConfig config = base.config();
  config.sliding_window = window;
  config.index_topk = topk;
  config.candidate_topk_blocks = candidate_blocks;
  return ReferenceModel::assemble(std::move(config), base.weights());
}

// Positions [0, agree_until) must match bit for bit; at least one later position must differ.
void expect_split_at(const Logits& a, const Logits& b, size_t agree_until, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t p = 0; p < agree_until; ++p) EXPECT_EQ(a[p], b[p]) << what << ": position " << p;
  float later = 0.0f;
  for (size_t p = agree_until; p < a.size(); ++p) later = std::max(later, max_abs_diff(a[p], b[p]));
  EXPECT_GT(later, 0.0f) << what << ": no position from " << agree_until << " on changed";
}

TEST(ReferenceRope, YarnRampMatchesReleaseNumbers) {
  auto config = load_model_config((fixture_dir("dsv41-release") / "config.json").string());
  ASSERT_TRUE(config.is_ok()) << config.status().message();
  const Rope compressed(*config, 2), window_only(*config, 0);
  EXPECT_EQ(compressed.ramp_lo(), 15.0);
  EXPECT_EQ(compressed.ramp_hi(), 25.0);
  ASSERT_EQ(compressed.freqs().size(), 32u);
  EXPECT_DOUBLE_EQ(compressed.freqs()[0], 1.0);                                         // ramp 0: unscaled
  EXPECT_DOUBLE_EQ(compressed.freqs()[31], std::pow(160000.0, -62.0 / 64.0) / 16.0);   // ramp 1: / factor
  EXPECT_DOUBLE_EQ(window_only.freqs()[31], std::pow(10000.0, -62.0 / 64.0));
  EXPECT_EQ(window_only.ramp_lo(), -1.0);
  // Inverse RoPE undoes RoPE on the last qk_rope_head_dim dims only.
  std::vector<float> v(512), w;
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i)) + 0.1f;
  w = v;
  compressed.apply(w.data(), 512, 9999);
  EXPECT_EQ(std::vector<float>(w.begin(), w.begin() + 448), std::vector<float>(v.begin(), v.begin() + 448));
  EXPECT_GT(max_abs_diff(v, w), 0.1f);
  compressed.apply(w.data(), 512, 9999, /*inverse=*/true);
  EXPECT_LT(max_abs_diff(v, w), 1e-5f);
}

TEST(ReferenceHc, SinkhornEndsOnColumnsThatSumToOne) {
  const ReferenceModel& model = tiny_model(SynthFormat::BF16);
  const ModelConfig& c = model.config();
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Vec streams(static_cast<size_t>(c.hc_dim));
  for (float& v : streams) v = bf(normal(rng));
  for (const LayerWeights& lw : model.weights().layers) {
    const HcMix mix = hc_mix(c, lw.hc_attn, streams);
    for (int64_t j = 0; j < c.hc_mult; ++j) {
      float column = 0.0f, row = 0.0f;
      for (int64_t i = 0; i < c.hc_mult; ++i) column += mix.comb[i * c.hc_mult + j], row += mix.comb[j * c.hc_mult + i];
      EXPECT_NEAR(column, 1.0f, 1e-5f);
      EXPECT_NEAR(row, 1.0f, 1e-2f);
      EXPECT_GT(mix.pre[j], 0.0f);
      EXPECT_LT(mix.post[j], 2.0f);
    }
  }
}

TEST(ReferenceModel, RunsEveryAttentionPathOnTheTinyModel) {
  const ReferenceModel& model = tiny_model(SynthFormat::BF16);
  const ModelConfig& c = model.config();
  const auto ids = prompt(100, 1, static_cast<int32_t>(c.vocab_size));
  ReferenceStats stats;
  const auto start = std::chrono::steady_clock::now();
  const Logits logits = run(model, ids, &stats);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("reference forward: %zu tokens in %.2f s\n", ids.size(), seconds);
  EXPECT_LT(seconds, 30.0);
  ASSERT_EQ(logits.size(), ids.size());
  float lo = INFINITY, hi = -INFINITY;
  for (const auto& row : logits) {
    ASSERT_EQ(static_cast<int64_t>(row.size()), c.vocab_size);
    for (float v : row) {
      ASSERT_TRUE(std::isfinite(v));
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
  }
  EXPECT_GT(hi - lo, 1.0f);
  EXPECT_GT(max_abs_diff(logits[10], logits[11]), 0.0f);
  // The paths of docs/model.md §6 all ran.
  EXPECT_EQ(stats.max_window_rows, c.sliding_window);          // the window filled ...
  EXPECT_GT(stats.ring_overwrites, 0);                         // ... and wrapped
  EXPECT_GT(stats.groups_closed, 0);                           // ratio-2 pooling
  EXPECT_GT(stats.max_visible, 2 * c.index_topk);              // more visible entries than top-k ...
  EXPECT_GT(stats.topk_truncations, 0);                        // ... so the indexer chose
  EXPECT_EQ(stats.max_selected, c.index_topk);
  EXPECT_GT(stats.candidate_maskings, 0);                      // the candidate mask removed entries
  EXPECT_GT(stats.reused_selections, 0);                       // layers reusing their group's top-k
}

TEST(ReferenceModel, LogitsVaryWithThePrompt) {
  const ReferenceModel& model = tiny_model(SynthFormat::BF16);
  const auto vocab = static_cast<int32_t>(model.config().vocab_size);
  const Logits a = run(model, prompt(24, 2, vocab)), b = run(model, prompt(24, 3, vocab));
  for (size_t p = 0; p < a.size(); ++p) EXPECT_GT(max_abs_diff(a[p], b[p]), 1e-3f) << "position " << p;
}

TEST(ReferenceModel, IsCausalAndDeterministic) {
  const ReferenceModel& model = tiny_model(SynthFormat::BF16);
  const auto vocab = static_cast<int32_t>(model.config().vocab_size);
  auto ids = prompt(64, 4, vocab);
  const Logits base = run(model, ids);
  EXPECT_EQ(run(model, ids), base);
  const size_t cut = 37;
  for (size_t p = cut; p < ids.size(); ++p) ids[p] = (ids[p] + 101) % vocab;
  expect_split_at(base, run(model, ids), cut, "later tokens changed");
  ids.resize(cut);
  const Logits prefix = run(model, ids);
  EXPECT_EQ(prefix, Logits(base.begin(), base.begin() + cut));
}

TEST(ReferenceModel, WindowAndSelectionLimitsActWhereTheyShould) {
  const ReferenceModel& model = tiny_model(SynthFormat::BF16);
  const ModelConfig& c = model.config();
  const Logits base = run(model, prompt(64, 6, static_cast<int32_t>(c.vocab_size)));
  const auto ids = prompt(64, 6, static_cast<int32_t>(c.vocab_size));
  // A wider window changes nothing until the ring would have wrapped.
  expect_split_at(base, run(variant(model, 4096, c.index_topk, c.candidate_topk_blocks), ids),
                  static_cast<size_t>(c.sliding_window), "wider window");
  // Unlimited top-k and candidates change nothing while every visible entry is selected anyway
  // (ratio-1 layers see p + 1 entries).
  expect_split_at(base, run(variant(model, c.sliding_window, 4096, 4096), ids), static_cast<size_t>(c.index_topk),
                  "unlimited top-k");
  // Unlimited candidates change nothing while the candidate source's blocks cover every entry.
  expect_split_at(base, run(variant(model, c.sliding_window, c.index_topk, 4096), ids),
                  static_cast<size_t>(c.candidate_topk_blocks * c.candidate_block_size), "unlimited candidates");
}

TEST(ReferenceModel, Fp32CheckModeOnlyDropsTheRounding) {
  const ReferenceModel& model = tiny_model(SynthFormat::BF16);
  const auto ids = prompt(20, 9, static_cast<int32_t>(model.config().vocab_size));
  const Logits rounded = run(model, ids), exact = run(model, ids, nullptr, Rounding::None);
  ASSERT_EQ(rounded.size(), exact.size());
  float worst = 0.0f, top = 0.0f;
  for (size_t p = 0; p < exact.size(); ++p) {
    worst = std::max(worst, max_abs_diff(rounded[p], exact[p]));
    for (float v : exact[p]) top = std::max(top, std::fabs(v));
  }
  EXPECT_GT(worst, 0.0f);        // the mode changes the numbers ...
  EXPECT_LT(worst, 0.5f * top);  // ... but not the model
  EXPECT_EQ(bf(1.0f + 0x1p-10f), 1.0f);  // the scope ended: rounding is back on this thread
  EXPECT_EQ(run(model, ids), rounded);
}

TEST(ReferenceModel, ReleaseEncodingsGiveNearbyLogits) {
  const ReferenceModel& bf16 = tiny_model(SynthFormat::BF16);
  const ReferenceModel& release = tiny_model(SynthFormat::Release);
  const auto ids = prompt(20, 8, static_cast<int32_t>(bf16.config().vocab_size));
  const Logits a = run(bf16, ids), b = run(release, ids);
  ASSERT_EQ(a.size(), b.size());
  for (size_t p = 0; p < a.size(); ++p) {
    double dot = 0, na = 0, nb = 0;
    for (size_t v = 0; v < a[p].size(); ++v) {
      ASSERT_TRUE(std::isfinite(b[p][v]));
      dot += a[p][v] * b[p][v], na += a[p][v] * a[p][v], nb += b[p][v] * b[p][v];
    }
    // FP8/FP4 weights are coarser than bf16 ones, but the same synthetic values: strongly correlated.
    EXPECT_GT(dot / std::sqrt(na * nb), 0.8) << "position " << p;
  }
}

}  // namespace
}  // namespace dsv41::reference
