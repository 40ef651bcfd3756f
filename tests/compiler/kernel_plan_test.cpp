// tests/compiler/kernel_plan_test.cpp — plans with kernels: every variant of the tiny fixture (worlds 1-4) and
// of the release (world 4, three prefill sizes) compiled for h200; bounds refused by name; calls that do
// not bind to their kernel's contract refused by name.
#include "compiler/kernels/kernel_plan.h"

#include <gtest/gtest.h>

#include "common/program_file.h"
#include "compiler/emit/rank_phases.h"
#include "compiler/program/rank_planner.h"
#include "tests/support/test_support.h"

namespace dsv41 {
namespace {

PlanOptions h200_options(int world) {
  PlanOptions options;
  options.world = world;
  options.target = *find_target("h200");
  // $DSV41_CACHE in CI, shared by the suites
  options.build.cache_dir = default_cache_dir("", std::getenv("DSV41_CACHE") ? std::getenv("DSV41_CACHE") : "",
                                              std::getenv("HOME") ? std::getenv("HOME") : "");
  return options;
}

// Plans every rank (settling first, as `dsv41c plan` does) and checks each program's kernels.
void plan_and_check_world(const ModelInputs& inputs, PlanOptions options, const std::vector<std::string>& phases) {
  std::vector<std::string> warnings;
  auto settled = settle_settings(inputs, options, &warnings);
  ASSERT_TRUE(settled.is_ok()) << settled.status().message();
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  options.settings = *settled;
  for (int rank = 0; rank < options.world; ++rank) {
    SCOPED_TRACE(fmt::format("world {} rank {}", options.world, rank));
    auto plan = plan_rank(inputs, options, rank);
    ASSERT_TRUE(plan.is_ok()) << plan.status().message();
    auto file = ProgramFile::from_bytes(plan->program, "plan");
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    const fb::Program& p = file->program();
    ASSERT_TRUE(p.kernels());
    ASSERT_EQ(p.kernels()->size(), plan->kernels.variants.size());
    for (const fb::Kernel* k : *p.kernels()) {
      ASSERT_GE(k->cubin()->size(), 4u) << k->key()->str();
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(k->cubin()->data()) + 1, 3), "ELF") << k->key()->str();
      EXPECT_GT(k->registers(), 0) << k->key()->str();
      EXPECT_GT(k->launches(), 0) << k->key()->str();
      EXPECT_EQ(k->arch()->str(), "sm_90a");
    }
    for (const std::string& name : phases) {
      bool found = false;
      for (const fb::Phase* phase : *p.phases()) found = found || phase->name()->str() == name;
      EXPECT_TRUE(found) << name;
    }
  }
}

TEST(KernelPlan, TinyWorldsOneToFourCompileEveryVariantForH200) {
  test::TempDir dir;
  test::make_pack(dir / "pack", "dsv41-tiny", "bf16", 2);
  auto inputs = ModelInputs::read((dir / "pack").string());
  ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
  for (int world = 1; world <= 4; ++world) {
    PlanOptions options = h200_options(world);
    options.settings.context = 4096;  // the tiny config's max_position_embeddings
    plan_and_check_world(*inputs, options, {});
  }
}

TEST(KernelPlan, ReleaseWorldFourPlansSegmentsOf1024_2048_4096OnEveryRank) {
  test::TempDir dir;
  test::make_pack(dir / "pack", "dsv41-release", "release", 8);
  auto inputs = ModelInputs::read((dir / "pack").string());
  ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
  PlanOptions options = h200_options(4);
  options.settings.prefill_rows = {2048, 1024, 4096};
  plan_and_check_world(*inputs, options, {"prefill.n1024", "prefill.n2048", "prefill.n4096"});
}

TEST(KernelPlan, ABoundTheTargetCannotMeetIsRefusedNamingRankPhaseOpAndNumbers) {
  test::TempDir dir;
  test::make_pack(dir / "pack", "dsv41-tiny", "bf16", 1);
  auto inputs = ModelInputs::read((dir / "pack").string());
  ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
  PlanOptions options = h200_options(2);
  options.settings.context = 4096;
  options.target.name = "tiny-gpu";
  options.target.shared_memory_per_block = 64;  // deliberately small
  std::vector<std::string> warnings;
  auto settled = settle_settings(*inputs, options, &warnings);
  ASSERT_FALSE(settled.is_ok());
  const std::string& m = settled.status().message();
  EXPECT_NE(m.find("rank 0, phase decode.r1, call "), std::string::npos) << m;
  // Both numbers: what the call needs, and the limit (the target's, or the op's own bound).
  EXPECT_TRUE(m.find("bytes exceeds target tiny-gpu's 64 per block") != std::string::npos ||
              m.find("exceeds the limit 64") != std::string::npos)
      << m;
  EXPECT_NE(m.find("cannot be served on target tiny-gpu"), std::string::npos) << m;
}

// No kernel's bound depends on the rows on h200 today, so the decision itself is tested: only an
// optional prefill size may be dropped, once however many ranks refuse it.
TEST(KernelPlan, AnOptionalPrefillSizeThatBreaksABoundIsDroppedWithAWarning) {
  ServingSettings settings;
  settings.prefill_rows = {2048, 1024, 4096};
  std::vector<std::string> warnings;
  const std::vector<PhaseRefusal> optional = {
      {2, PhaseKind::Prefill, 4096, "rank 0, phase prefill.n4096, call 9 (op): bound"},
      {2, PhaseKind::Prefill, 4096, "rank 1, phase prefill.n4096, call 9 (op): bound"}};
  auto settled = apply_refusals(settings, optional, "h200", &warnings);
  ASSERT_TRUE(settled.is_ok()) << settled.status().message();
  EXPECT_EQ(settled->prefill_rows, (std::vector<int64_t>{2048, 1024}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "setting prefill_rows = 4096: dropped: rank 0, phase prefill.n4096, call 9 (op): bound");

  auto refused = apply_refusals(settings, {{1, PhaseKind::Prefill, 2048, "rank 3, phase prefill.n2048: bound"}}, "h200",
                                &warnings);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().message(),
            "rank 3, phase prefill.n2048: bound; the default prefill segment 2048 cannot be served on target h200");
  refused = apply_refusals(settings, {{0, PhaseKind::Decode, 8, "rank 1, phase decode.r8: bound"}}, "h200", &warnings);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().message(), "rank 1, phase decode.r8: bound; decode bucket 8 cannot be served on target h200");
}

// A call whose arguments do not match its kernel's parameter list is refused by name.
TEST(KernelPlan, ACallThatDoesNotBindToItsKernelIsRefusedByName) {
  Call call;
  call.op = "linear";
  call.constants = {{"in_features", 64}, {"out_features", 32}};
  call.args = {{"x", ArgKind::Scratch, {0}, 0}, {"w", ArgKind::Weight, {0}, 0}, {"out", ArgKind::Scratch, {1}, 0}};
  const BufferDecl x{"x", DType::BF16, {4, 64}, 0, 512}, out{"out", DType::F32, {4, 32}, 512, 512};
  CallEnv env;
  env.rows = 4;
  env.buffer = [&](const Arg& a) { return a.ints[0] == 0 ? &x : &out; };
  env.weight_shape = [](const Arg&) { return std::vector<int64_t>{32, 64}; };
  env.weight_format = [](int64_t) -> std::optional<WeightFormat> { return WeightFormat::FP8Tile32; };
  auto ok = variant_of(call, env, "sm_90a");
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_EQ(ok->key, "linear{in_features=64,many_rows=0,dtype_x=bf16,format_w=fp8_tile32,dtype_out=f32}@sm_90a");
  EXPECT_EQ(ok->entry.size(), 6u + 16u);

  // many_rows is the phase's row class: phases above kManyRowsAbove rows get a variant of their own.
  CallEnv many_env = env;
  many_env.rows = kManyRowsAbove + 1;
  auto many = variant_of(call, many_env, "sm_90a");
  ASSERT_TRUE(many.is_ok()) << many.status().message();
  EXPECT_EQ(many->key, "linear{in_features=64,many_rows=1,dtype_x=bf16,format_w=fp8_tile32,dtype_out=f32}@sm_90a");
  many_env.rows = kManyRowsAbove;
  EXPECT_EQ(variant_of(call, many_env, "sm_90a")->key, ok->key);

  // The weight's stored format is part of the key: a bf16 pack gives another variant.
  CallEnv bf16_env = env;
  bf16_env.weight_format = [](int64_t) -> std::optional<WeightFormat> { return WeightFormat::BF16; };
  auto bf16 = variant_of(call, bf16_env, "sm_90a");
  ASSERT_TRUE(bf16.is_ok()) << bf16.status().message();
  EXPECT_EQ(bf16->key, "linear{in_features=64,many_rows=0,dtype_x=bf16,format_w=bf16,dtype_out=f32}@sm_90a");
  EXPECT_NE(bf16->id, ok->id);

  // A weight whose format is unknown (a scale tensor, an unread dtype) is refused by name.
  CallEnv unknown = env;
  unknown.weight_format = [](int64_t) -> std::optional<WeightFormat> { return std::nullopt; };
  auto no_format = variant_of(call, unknown, "sm_90a");
  ASSERT_FALSE(no_format.is_ok());
  EXPECT_EQ(no_format.status().message(), "op linear: weight w (index 0) has no stored format a kernel reads");

  Call extra = call;
  extra.args.push_back({"bias", ArgKind::Weight, {0}, 0});
  auto refused = variant_of(extra, env, "sm_90a");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().message(), "op linear: argument bias has no parameter in kernels/linear.cuh");

  Call wrong_kind = call;
  wrong_kind.args[1].kind = ArgKind::Scratch;
  refused = variant_of(wrong_kind, env, "sm_90a");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().message(),
            "kernels/linear.cuh: template parameter format_w is neither a constant of op linear, dtype_<arg> of one of "
            "its buffer arguments, format_<arg> of one of its weight arguments nor many_rows");

  Call renamed = call;
  renamed.constants[0].name = "in";
  refused = variant_of(renamed, env, "sm_90a");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("template parameter in_features"), std::string::npos)
      << refused.status().message();
}

// The block of a variant's source instantiates the entry with its constants, extern "C".
TEST(KernelPlan, VariantSourceIsAnIncludePlusOneExternCInstantiation) {
  Variant v;
  v.op = "linear";
  v.template_args = {{"in_features", 64}, {"dtype_x", 1}, {"format_w", 3}, {"dtype_out", 0}};
  v.key = "linear{in_features=64,dtype_x=bf16,format_w=fp4_row32,dtype_out=f32}@sm_90a";
  v.entry = "dsv41_0123456789abcdef";
  const std::string source = variant_source(v, 256);
  EXPECT_NE(source.find("#include \"linear.cuh\""), std::string::npos) << source;
  EXPECT_NE(source.find("extern \"C\" __global__ void __launch_bounds__(256) "
                        "dsv41_0123456789abcdef("),
            std::string::npos)
      << source;
  EXPECT_NE(source.find("dsv41k::entry::linear<64LL, 1, 3, 0>("), std::string::npos) << source;
  // Programmatic dependent launch: the wait comes before the entry touches memory.
  const size_t wait = source.find("griddepcontrol.wait;");
  EXPECT_NE(wait, std::string::npos) << source;
  EXPECT_LT(wait, source.find("dsv41k::entry::linear<")) << source;
}

// A weight list binds one format: experts stored differently cannot share a variant.
TEST(KernelPlan, AWeightListMixingFormatsIsRefused) {
  Call call;
  call.op = "shared_expert";
  call.constants = {{"hidden", 64}, {"width", 32}};
  call.args = {{"x", ArgKind::Scratch, {0}, 0},   {"w1", ArgKind::Weight, {0}, 0}, {"w3", ArgKind::Weight, {1}, 0},
               {"w2", ArgKind::Weight, {2}, 0},   {"limit", ArgKind::Float, {}, 7.0}, {"out", ArgKind::Scratch, {1}, 0},
               {"work", ArgKind::Scratch, {4}, 0}};
  const BufferDecl x{"x", DType::BF16, {4, 64}, 0, 512}, out{"out", DType::F32, {4, 64}, 512, 1024},
      work{"work", DType::BF16, {4, 68}, 0, 544};
  CallEnv env;
  env.rows = 4;
  env.buffer = [&](const Arg& a) { return a.ints[0] == 0 ? &x : a.ints[0] == 4 ? &work : &out; };
  env.weight_shape = [](const Arg& a) { return a.ints[0] == 2 ? std::vector<int64_t>{64, 32} : std::vector<int64_t>{32, 64}; };
  env.weight_format = [](int64_t i) -> std::optional<WeightFormat> {
    return i == 2 ? WeightFormat::FP8Tile32 : WeightFormat::BF16;
  };
  auto v = variant_of(call, env, "sm_90a");
  ASSERT_TRUE(v.is_ok()) << v.status().message();
  EXPECT_EQ(v->key, "shared_expert{hidden=64,width=32,dtype_x=bf16,format_w1=bf16,format_w3=bf16,format_w2=fp8_tile32}@sm_90a");

  Call experts;
  experts.op = "moe_experts";
  experts.constants = {{"hidden", 64}, {"width", 32}, {"topk", 2}, {"experts", 3}};
  experts.args = {{"x", ArgKind::Scratch, {0}, 0},        {"ids", ArgKind::Scratch, {2}, 0},
                  {"weights", ArgKind::Scratch, {3}, 0},  {"w1", ArgKind::WeightList, {0, 1, 2}, 0},
                  {"w3", ArgKind::WeightList, {0, 1, 0}, 0}, {"w2", ArgKind::WeightList, {0, 1, 0}, 0},
                  {"limit", ArgKind::Float, {}, 7.0},    {"out", ArgKind::Scratch, {1}, 0},
                  {"work", ArgKind::Scratch, {4}, 0}};
  const BufferDecl ids{"ids", DType::I32, {4, 2}, 0, 32}, weights{"weights", DType::F32, {4, 2}, 0, 32};
  env.buffer = [&](const Arg& a) -> const BufferDecl* {
    switch (a.ints[0]) {
      case 0: return &x;
      case 1: return &out;
      case 2: return &ids;
      case 4: return &work;
      default: return &weights;
    }
  };
  auto mixed = variant_of(experts, env, "sm_90a");
  ASSERT_FALSE(mixed.is_ok());
  EXPECT_EQ(mixed.status().message(),
            "op moe_experts: weight list w1 mixes formats bf16 and fp8_tile32; one variant reads one format");
}

}  // namespace
}  // namespace dsv41
