// tests/engram/engram_e2e_test.cpp — the tiny Engram fixture end to end on the CPU backend: worlds 1-4 agree in
// check mode, prompt segments of any size agree (the lookback carries across steps), and Engram changes the logits.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/program/rank_planner.h"
#include "compiler/synth/synth_pack.h"
#include "compiler/tokens/engram_token_map.h"
#include "runtime/generate.h"
#include "tests/reference/reference_model.h"
#include "tests/support/test_support.h"

namespace dsv41 {
namespace {

namespace fs = std::filesystem;

constexpr double kTolerance = 1e-3;  // of max|logit| of the row, check mode (docs/model.md §2)

// The fixture's pack (release formats: FP8 tables and projections), its tokenizer beside it, planned
// once per process for worlds 1-4 in check mode.
struct EngramWorlds {
  test::TempDir dir{"engram"};
  fs::path pack = dir / "pack";
  Status status;
  EngramWorlds() {
    SynthPackOptions options;
    options.out_dir = pack.string();
    options.format = SynthFormat::Release;
    options.seed = 4141;
    options.shards = 2;
    const fs::path config = test::fixture_config_path("dsv41-tiny-engram");
    status = write_synth_pack(test::fixture_config("dsv41-tiny-engram"), test::read_file(config), options);
    if (status.is_ok()) fs::copy_file(config.parent_path() / "tokenizer.json", pack / "tokenizer.json");
  }
  Result<fs::path> world(int world, bool with_map = true) {
    DSV41_TRY(status);
    const fs::path out = dir / fmt::format("w{}{}", world, with_map ? "" : "-nomap");
    if (fs::exists(out / "rank0.fb")) return out;
    DSV41_ASSIGN_OR_RETURN(ModelInputs inputs, ModelInputs::read(pack.string()));
    std::vector<std::string> warnings;
    DSV41_ASSIGN_OR_RETURN(auto map, model_engram_token_map(inputs.config, pack.string(), &warnings));
    if (with_map) inputs.engram_token_map = map->compressed;
    PlanOptions options;
    options.world = world;
    options.target = *find_target("none");
    options.settings.context = 128;
    options.settings.slots = 1;
    options.settings.prefill_rows = {64, 5};
    options.settings.activations = DType::F32;
    fs::create_directories(out);
    for (int rank = 0; rank < world; ++rank) {
      DSV41_ASSIGN_OR_RETURN(RankPlan plan, plan_rank(inputs, options, rank));
      test::write_bytes(out / fmt::format("rank{}.fb", rank), plan.program);
    }
    return out;
  }
};

EngramWorlds& worlds() {
  static EngramWorlds instance;
  return instance;
}

std::vector<int32_t> prompt() {
  std::mt19937 rng(1313);
  std::uniform_int_distribution<int32_t> pick(3, 1279);
  std::vector<int32_t> ids(20);
  for (auto& id : ids) id = pick(rng);
  ids[7] = ids[3];  // a repeated bigram start, so two positions share some n-gram rows
  return ids;
}

Result<GenerateResult> run(int world, int64_t segment_rows) {
  DSV41_ASSIGN_OR_RETURN(fs::path dir, worlds().world(world));
  GenerateOptions o;
  o.program_dir = dir.string();
  o.model_dir = worlds().pack.string();
  o.prompt = prompt();
  o.max_tokens = 8;
  o.segment_rows = segment_rows;
  o.stop_at_eos = false;
  o.all_logits = true;
  return generate(o);
}

// The worst |a − b| / max|a| over all rows.
double worst_row_diff(const GenerateResult& a, const GenerateResult& b) {
  double worst = 0;
  EXPECT_EQ(a.logits.size(), b.logits.size());
  for (size_t r = 0; r < std::min(a.logits.size(), b.logits.size()); ++r) {
    double scale = 0, diff = 0;
    for (size_t i = 0; i < a.logits[r].size(); ++i) {
      scale = std::max(scale, std::fabs(double{a.logits[r][i]}));
      diff = std::max(diff, std::fabs(double{a.logits[r][i]} - b.logits[r][i]));
    }
    worst = std::max(worst, diff / std::max(scale, 1e-30));
  }
  return worst;
}

TEST(EngramEndToEnd, WorldsTwoToFourMatchWorldOneInCheckMode) {
  auto one = run(1, 0);
  ASSERT_TRUE(one.is_ok()) << one.status().message();
  ASSERT_EQ(one->logits.size(), prompt().size() + 7);
  for (int world : {2, 3, 4}) {
    auto other = run(world, 0);
    ASSERT_TRUE(other.is_ok()) << "world " << world << ": " << other.status().message();
    EXPECT_EQ(other->tokens, one->tokens) << "world " << world;
    const double worst = worst_row_diff(*one, *other);
    std::printf("[measured] dsv41-tiny-engram check mode world %d vs 1: max |diff|/max|logit| %.3g over %zu rows\n",
                world, worst, one->logits.size());
    EXPECT_LT(worst, kTolerance) << "world " << world;
  }
}

// Segments of 5 rows and token by token read the tokens before a step from the slot's lookback: the
// rows must equal one 64-row segment's.
TEST(EngramEndToEnd, SegmentSizesAgreeThroughTheLookback) {
  auto whole = run(1, 0);
  ASSERT_TRUE(whole.is_ok()) << whole.status().message();
  for (int64_t segment : {5, 1}) {
    auto split = run(1, segment);
    ASSERT_TRUE(split.is_ok()) << "segment " << segment << ": " << split.status().message();
    EXPECT_EQ(split->tokens, whole->tokens) << "segment " << segment;
    const double worst = worst_row_diff(*whole, *split);
    std::printf("[measured] segment %lld vs 64: max |diff|/max|logit| %.3g\n", static_cast<long long>(segment), worst);
    EXPECT_LT(worst, kTolerance) << "segment " << segment;
  }
}

// The independent reference (tests/reference, its own Engram from the architecture notes) gives the
// same logits for the prompt and the generated tokens, in check mode.
TEST(EngramEndToEnd, CpuBackendMatchesTheReference) {
  auto one = run(1, 0);
  ASSERT_TRUE(one.is_ok()) << one.status().message();
  auto model = reference::ReferenceModel::load(worlds().pack.string());
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  std::vector<std::string> warnings;
  auto map = model_engram_token_map(model->config(), worlds().pack.string(), &warnings);
  ASSERT_TRUE(map.is_ok() && map->has_value());
  std::vector<int32_t> ids = prompt();
  ids.insert(ids.end(), one->tokens.begin(), one->tokens.end() - 1);
  reference::ForwardOptions options;
  options.rounding = reference::Rounding::None;
  options.engram_token_map = &(*map)->compressed;
  auto logits = model->forward(ids, options);
  ASSERT_TRUE(logits.is_ok()) << logits.status().message();
  GenerateResult reference;
  reference.logits = std::move(logits).value();
  const double worst = worst_row_diff(*one, reference);
  std::printf("[measured] dsv41-tiny-engram check mode world 1 vs reference: max |diff|/max|logit| %.3g\n", worst);
  EXPECT_LT(worst, kTolerance);
  // Engram acts: the same reference with every compressed id moved changes the logits.
  std::vector<int32_t> shifted = (*map)->compressed;
  for (int32_t& id : shifted) id = (id + 1) % 1070;
  options.engram_token_map = &shifted;
  auto moved = model->forward(ids, options);
  ASSERT_TRUE(moved.is_ok()) << moved.status().message();
  GenerateResult other;
  other.logits = std::move(moved).value();
  EXPECT_GT(worst_row_diff(reference, other), 10 * kTolerance) << "Engram rows do not reach the logits";
}

// A program planned from a folder without tokenizer.json plans (its Engram calls carry an empty map)
// but does not run: the refusal names the missing map.
TEST(EngramEndToEnd, ProgramWithoutTokenMapIsRefusedAtRunTime) {
  auto dir = worlds().world(1, false);
  ASSERT_TRUE(dir.is_ok()) << dir.status().message();
  GenerateOptions o;
  o.program_dir = dir->string();
  o.model_dir = worlds().pack.string();
  o.prompt = prompt();
  o.max_tokens = 2;
  auto result = generate(o);
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("holds no Engram token map"), std::string::npos) << result.status().message();
}

}  // namespace
}  // namespace dsv41
