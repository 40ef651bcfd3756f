// tests/compiler/weight_plan_slices_test.cpp — one rank's byte runs for each rule, counted by hand; pack mismatches refused by name.
#include <gtest/gtest.h>

#include "compiler/program/rank_planner.h"
#include "compiler/plan/weight_plan.h"
#include "tests/support/pack_editor.h"

namespace dsv41 {
namespace {
using test::TempDir;

Result<WeightPlan> plan_dir(const test::fs::path& dir, const ModelConfig& config, int world, int rank) {
  DSV41_ASSIGN_OR_RETURN(PackIndex pack, PackIndex::open(dir.string()));
  DSV41_ASSIGN_OR_RETURN(RankShare share, plan_share(config, world, rank));
  return plan_weights(config, pack, share);
}

const PlannedTensor* find(const WeightPlan& plan, const std::string& name) {
  for (const auto& t : plan.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

// A run relative to the tensor's first byte in its shard.
struct Expected {
  const char* name;
  SplitRule rule;
  std::vector<int64_t> local_shape;
  uint64_t offset, length, stride, count;
};

// dsv41-tiny in the release format, world 3, rank 1: groups [3, 6), heads [6, 12), expert columns
// [256, 512) (5 blocks split 2/2/1), vocabulary rows [512, 896) (10 blocks split 4/3/3).
TEST(WeightPlanSlices, TinyReleaseWorld3Rank1RunsMatchAHandCount) {
  TempDir dir;
  test::make_pack(dir.path(), "dsv41-tiny", "release", 1);
  const ModelConfig config = test::fixture_config("dsv41-tiny");
  auto plan = plan_dir(dir.path(), config, 3, 1);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  auto pack = PackIndex::open(dir.path().string());
  ASSERT_TRUE(pack.is_ok());
  const std::vector<Expected> cases = {
      // wq_b [1024, 96] F8: rows of heads 6..12 (64 rows a head); scale [32, 3]: rows 12..24.
      {"layers.0.attn.wq_b.weight", SplitRule::OutputRows, {384, 96}, 384 * 96, 384 * 96, 384 * 96, 1},
      {"layers.0.attn.wq_b.scale", SplitRule::OutputRows, {12, 3}, 12 * 3, 12 * 3, 12 * 3, 1},
      // wo_a [512, 128]: rows of groups 3..6 (64 a group); scale [16, 4]: rows 6..12.
      {"layers.1.attn.wo_a.weight", SplitRule::GroupPart, {192, 128}, 192 * 128, 192 * 128, 192 * 128, 1},
      {"layers.1.attn.wo_a.scale", SplitRule::GroupPart, {6, 4}, 6 * 4, 6 * 4, 6 * 4, 1},
      // wo_b [256, 512]: columns 192..384 of every row; scale [8, 16]: columns 6..12.
      {"layers.2.attn.wo_b.weight", SplitRule::InputCols, {256, 192}, 192, 192, 512, 256},
      {"layers.2.attn.wo_b.scale", SplitRule::InputCols, {8, 6}, 6, 6, 16, 8},
      // attn_sink [16] F32: heads 6..12.
      {"layers.3.attn.attn_sink", SplitRule::HeadSlice, {6}, 6 * 4, 6 * 4, 6 * 4, 1},
      // Routed expert FP4: w1 [640, 128] I8 rows 256..512, scale [640, 8]; w2 [256, 320] I8 columns
      // 128..256 (two values a byte), scale [256, 20] columns 8..16.
      {"layers.4.ffn.experts.3.w1.weight", SplitRule::OutputRows, {256, 128}, 256 * 128, 256 * 128, 256 * 128, 1},
      {"layers.4.ffn.experts.3.w1.scale", SplitRule::OutputRows, {256, 8}, 256 * 8, 256 * 8, 256 * 8, 1},
      {"layers.4.ffn.experts.3.w2.weight", SplitRule::InputCols, {256, 128}, 128, 128, 320, 256},
      {"layers.4.ffn.experts.3.w2.scale", SplitRule::InputCols, {256, 8}, 8, 8, 20, 256},
      // Shared expert FP8 tiles: w2 [256, 640] columns 256..512; scale [8, 20] columns 8..16.
      {"layers.5.ffn.shared_experts.w2.weight", SplitRule::InputCols, {256, 256}, 256, 256, 640, 256},
      {"layers.5.ffn.shared_experts.w2.scale", SplitRule::InputCols, {8, 8}, 8, 8, 20, 8},
      // head [1280, 256] BF16: vocabulary rows 512..896.
      {"head.weight", SplitRule::OutputRows, {384, 256}, 512 * 512, 384 * 512, 384 * 512, 1},
      {"embed.weight", SplitRule::Replicated, {1280, 256}, 0, 1280 * 512, 1280 * 512, 1},
  };
  for (const Expected& e : cases) {
    SCOPED_TRACE(e.name);
    const PlannedTensor* t = find(*plan, e.name);
    ASSERT_NE(t, nullptr);
    const TensorEntry* entry = pack->find(e.name);
    ASSERT_NE(entry, nullptr);
    const uint64_t base = pack->shards()[entry->shard].data_start() + entry->data_begin;
    EXPECT_EQ(t->rule, e.rule);
    EXPECT_EQ(t->local_shape, e.local_shape);
    ASSERT_EQ(t->runs.size(), 1u);
    const ByteRun& run = t->runs[0];
    EXPECT_EQ(run.offset - base, e.offset);
    EXPECT_EQ(run.length, e.length);
    EXPECT_EQ(run.count, e.count);
    if (e.count > 1) {
      EXPECT_EQ(run.stride, e.stride);
    }
  }
}

TEST(WeightPlanSlices, SamePackPlansTheSameRunsTwice) {
  TempDir dir;
  test::make_pack(dir.path(), "dsv41-tiny", "release", 2);
  const ModelConfig config = test::fixture_config("dsv41-tiny");
  auto a = plan_dir(dir.path(), config, 4, 2), b = plan_dir(dir.path(), config, 4, 2);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  ASSERT_EQ(a->tensors.size(), b->tensors.size());
  for (size_t i = 0; i < a->tensors.size(); ++i) {
    const PlannedTensor &x = a->tensors[i], &y = b->tensors[i];
    ASSERT_EQ(x.name, y.name);
    ASSERT_EQ(x.local_shape, y.local_shape) << x.name;
    ASSERT_EQ(x.runs.size(), y.runs.size()) << x.name;
    for (size_t r = 0; r < x.runs.size(); ++r)
      EXPECT_TRUE(x.runs[r].offset == y.runs[r].offset && x.runs[r].length == y.runs[r].length &&
                  x.runs[r].stride == y.runs[r].stride && x.runs[r].count == y.runs[r].count)
          << x.name;
  }
  EXPECT_EQ(a->total_bytes(), b->total_bytes());
}

// A whole rank planned twice (share, weights, ledger, program) gives identical program bytes.
TEST(WeightPlanSlices, RankProgramBytesAreDeterministic) {
  TempDir dir;
  test::make_pack(dir.path(), "dsv41-tiny", "bf16", 2);
  PlanOptions options;
  options.world = 3;
  options.settings.context = 4096;
  auto target = find_target("none");
  ASSERT_TRUE(target.is_ok());
  options.target = *target;
  auto inputs_a = ModelInputs::read(dir.path().string()), inputs_b = ModelInputs::read(dir.path().string());
  ASSERT_TRUE(inputs_a.is_ok() && inputs_b.is_ok()) << inputs_a.status().message();
  for (int rank = 0; rank < 3; ++rank) {
    auto a = plan_rank(*inputs_a, options, rank), b = plan_rank(*inputs_b, options, rank);
    ASSERT_TRUE(a.is_ok() && b.is_ok()) << a.status().message();
    EXPECT_EQ(a->program, b->program) << "rank " << rank;
  }
}

// Each mismatch between config and pack is refused naming the shard, the tensor and both values.
struct Mismatch {
  const char* what;
  const char* format;
  void (*edit)(test::PackEditor&);
  std::vector<std::string> parts;
};

class WeightPlanRefusal : public ::testing::TestWithParam<Mismatch> {};

TEST_P(WeightPlanRefusal, NamesTheCulprit) {
  const Mismatch& m = GetParam();
  TempDir dir;
  test::make_pack(dir.path(), "dsv41-tiny", m.format, 1);
  test::PackEditor editor(dir.path());
  m.edit(editor);
  editor.save();
  auto plan = plan_dir(dir.path(), test::fixture_config("dsv41-tiny"), 1, 0);
  ASSERT_FALSE(plan.is_ok()) << m.what << " was accepted";
  for (const std::string& part : m.parts)
    EXPECT_NE(plan.status().message().find(part), std::string::npos)
        << m.what << ": \"" << part << "\" not in: " << plan.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Tiny, WeightPlanRefusal,
    ::testing::Values(
        Mismatch{"shape", "bf16",
                 [](test::PackEditor& e) { e.entry("layers.3.attn.wq_b.weight")["shape"] = {512, 192}; },
                 {"model.safetensors: layers.3.attn.wq_b.weight: shape [512, 192], expected [1024, 96]"}},
        Mismatch{"missing", "bf16", [](test::PackEditor& e) { e.remove_tensor("layers.3.attn.q_norm.weight"); },
                 {"layers.3.attn.q_norm.weight: missing from the pack, expected BF16 [96]"}},
        Mismatch{"unknown", "bf16", [](test::PackEditor& e) { e.add_tensor("model.safetensors", "foo.bar", "F32", {4}); },
                 {"model.safetensors: foo.bar: tensor is not used by the plan and not on the ignore list"}},
        Mismatch{"dtype", "bf16", [](test::PackEditor& e) { e.entry("layers.0.attn_norm.weight")["dtype"] = "F16"; },
                 {"model.safetensors: layers.0.attn_norm.weight: dtype F16, expected BF16 [256]"}},
        Mismatch{"scale missing", "release", [](test::PackEditor& e) { e.remove_tensor("layers.2.attn.wq_b.scale"); },
                 {"layers.2.attn.wq_b.scale: missing from the pack", "F8_E4M3 weight layers.2.attn.wq_b.weight",
                  "F8_E8M0 [32, 3]"}},
        Mismatch{"scale dtype", "release", [](test::PackEditor& e) { e.entry("layers.2.attn.wq_b.scale")["dtype"] = "U8"; },
                 {"layers.2.attn.wq_b.scale: dtype U8, expected F8_E8M0"}},
        Mismatch{"scale shape", "release",
                 [](test::PackEditor& e) { e.entry("layers.1.ffn.experts.2.w2.scale")["shape"] = {20, 256}; },
                 {"layers.1.ffn.experts.2.w2.scale: shape [20, 256], expected [256, 20]"}}),
    [](const auto& info) {
      std::string name = info.param.what;
      for (char& c : name)
        if (c == ' ') c = '_';
      return name;
    });

TEST(WeightPlanIgnored, IgnoreListTensorsAreCountedAndNotRead) {
  TempDir dir;
  test::make_pack(dir.path(), "dsv41-tiny", "bf16", 1);
  test::PackEditor editor(dir.path());
  for (const char* name : {"vision.x.weight", "aligner.proj.weight", "image_newline", "layers.0.attn.bias_vl"})
    editor.add_tensor("model.safetensors", name, "BF16", {8, 8});
  editor.save();
  auto pack = PackIndex::open(dir.path().string());
  ASSERT_TRUE(pack.is_ok()) << pack.status().message();
  auto plan = plan_dir(dir.path(), test::fixture_config("dsv41-tiny"), 1, 0);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  EXPECT_EQ(plan->ignored_tensors, 4u);
  EXPECT_EQ(plan->total_bytes(), pack->total_data_bytes() - 4 * 128);
  for (const auto& t : plan->tensors) EXPECT_FALSE(is_ignored_tensor(t.name)) << t.name;
}

}  // namespace
}  // namespace dsv41
