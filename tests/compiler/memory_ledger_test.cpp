// tests/compiler/memory_ledger_test.cpp — per-rank memory: totals that add up, the refusal that prints the ledger, settings bounds.
#include "compiler/plan/memory_ledger.h"

#include <algorithm>
#include <memory>

#include <gtest/gtest.h>

#include "compiler/program/rank_planner.h"
#include "tests/support/test_support.h"

namespace dsv41 {
namespace {
using test::TempDir;

RankShare share_of(const ModelConfig& config, int world, int rank) {
  auto share = plan_share(config, world, rank);
  EXPECT_TRUE(share.is_ok()) << share.status().message();
  return share.is_ok() ? *share : RankShare{};
}

struct TinyInputs {
  TempDir dir;
  ModelInputs inputs;
};

// dsv41-tiny, header-only, read once (config, headers, inventory match) like `dsv41c plan` does.
std::unique_ptr<TinyInputs> tiny_inputs() {
  auto t = std::make_unique<TinyInputs>();
  test::make_pack(t->dir.path(), "dsv41-tiny", "bf16", 1);
  auto inputs = ModelInputs::read(t->dir.path().string());
  EXPECT_TRUE(inputs.is_ok()) << inputs.status().message();
  if (inputs.is_ok()) t->inputs = std::move(inputs).value();
  return t;
}

PlanOptions tiny_options(int world, int64_t context) {
  PlanOptions options;
  options.world = world;
  options.settings.context = context;
  options.settings.slots = 3;
  options.target = *find_target("none");
  return options;
}

// The ledger a rank plan carries adds up its own parts: weight bytes by rule, the state layout
// times the slots, the largest phase arena with its statics block.
TEST(MemoryLedger, RankLedgerAddsUpTheWeightsStateAndLargestArena) {
  const auto tiny = tiny_inputs();
  const PlanOptions options = tiny_options(3, 4096);
  uint64_t split_rank0 = 0;
  for (int rank = 0; rank < 3; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    auto plan = plan_rank(tiny->inputs, options, rank);
    ASSERT_TRUE(plan.is_ok()) << plan.status().message();
    const MemoryLedger& m = plan->ledger;
    // Each stored tensor is padded to 256 bytes on the device: never less than the bytes read, and
    // at most 255 more a tensor.
    EXPECT_GE(m.weights_replicated, plan->weights.replicated_bytes);
    EXPECT_GE(m.weights_split, plan->weights.split_bytes);
    EXPECT_LE(m.weights_replicated + m.weights_split,
              plan->weights.replicated_bytes + plan->weights.split_bytes + 255 * plan->weights.tensors.size());
    EXPECT_EQ(m.weights_host, plan->weights.host_bytes);
    EXPECT_EQ(m.state_per_slot, plan->calls.state_bytes_per_slot);
    EXPECT_GT(m.state_per_slot, 0u);
    EXPECT_EQ(m.state, 3 * m.state_per_slot);
    uint64_t arena = 0;
    for (const Phase& phase : plan->calls.phases)
      arena = std::max<uint64_t>(arena, phase.arena_bytes + phase.rows * kStaticsFields * sizeof(int32_t));
    EXPECT_EQ(m.activations, arena);
    EXPECT_GT(m.activations, 0u);
    EXPECT_EQ(m.total, m.weights_replicated + m.weights_split + m.state + m.activations);
    EXPECT_EQ(m.limit, 0u) << "target none checks no limit";
    EXPECT_EQ(m.kernel_globals, 0u) << "target none compiles no cubin";
    EXPECT_FALSE(m.kernel_globals_known);
    EXPECT_NE(ledger_text(m).find("kernel globals       not counted (known once the kernels are compiled"), std::string::npos)
        << ledger_text(m);
    if (rank == 0) split_rank0 = m.weights_split;
    // Rank 2 holds 2 groups, 1 expert block and 3 vocabulary blocks against rank 0's 3, 2 and 4.
    if (rank == 2) {
      EXPECT_LT(m.weights_split, split_rank0);
    }
  }
}

// The weights lines count what the device holds: every planned stored tensor (each weight and, in
// the release formats, its UE8M0 scale), in its stored bytes, one 256-byte-aligned allocation each;
// no fp32 copy. Host tables count their stored bytes apart.
TEST(MemoryLedger, WeightsCountTheStoredBytesAndScalesEachAligned) {
  for (const char* format : {"bf16", "release"}) {
    SCOPED_TRACE(format);
    TempDir dir;
    test::make_pack(dir.path(), "dsv41-tiny", format, 1);
    auto inputs = ModelInputs::read(dir.path().string());
    ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
    auto plan = plan_rank(*inputs, tiny_options(3, 1024), 2);
    ASSERT_TRUE(plan.is_ok()) << plan.status().message();
    uint64_t replicated = 0, split = 0, host = 0, scales = 0, unaligned = 0;
    for (const PlannedTensor& t : plan->weights.tensors) {
      uint64_t stored = 1;
      for (int64_t d : t.local_shape) stored *= static_cast<uint64_t>(d);
      stored *= static_cast<uint64_t>(dtype_bytes(t.dtype));
      ASSERT_EQ(t.bytes(), stored) << t.name << ": the runs read exactly the stored local tensor";
      const uint64_t device = (stored + 255) / 256 * 256;
      if (t.host_resident) host += stored;
      else if (t.rule == SplitRule::Replicated) replicated += device;
      else split += device;
      if (t.dtype == DType::F8_E8M0) ++scales;
      if (!t.host_resident && stored % 256 != 0) ++unaligned;
    }
    EXPECT_EQ(plan->ledger.weights_replicated, replicated);
    EXPECT_EQ(plan->ledger.weights_split, split);
    EXPECT_EQ(plan->ledger.weights_host, host);
    EXPECT_GT(unaligned, 0u) << "some tensor must need padding, or the alignment goes untested";
    if (std::string(format) == "release") EXPECT_GT(scales, 10u) << "release-format packs store UE8M0 scales";
    else EXPECT_EQ(scales, 0u);
  }
}

TEST(MemoryLedger, StateGrowsWithTheContext) {
  const auto tiny = tiny_inputs();
  uint64_t previous = 0;
  for (int64_t context : {64, 1024, 4096}) {
    auto plan = plan_rank(tiny->inputs, tiny_options(2, context), 1);
    ASSERT_TRUE(plan.is_ok()) << plan.status().message();
    EXPECT_GT(plan->ledger.state_per_slot, previous) << "context " << context;
    previous = plan->ledger.state_per_slot;
  }
}

TEST(MemoryLedger, TotalCountsDeviceWeightsStateAndActivationsButNotHostTables) {
  WeightPlan plan;
  auto tensor = [](SplitRule rule, uint64_t bytes, bool host) {
    PlannedTensor t;
    t.rule = rule;
    t.host_resident = host;
    t.runs.push_back(ByteRun{0, 0, bytes, bytes, 1});
    return t;
  };
  plan.tensors = {tensor(SplitRule::Replicated, 1000, false), tensor(SplitRule::OutputRows, 20000, false),
                  tensor(SplitRule::Replicated, 300000, true)};
  const MemoryLedger m = build_ledger(plan, 4096, 3, 777, 123456789);
  EXPECT_EQ(m.weights_replicated, 1024u) << "1000 bytes, one 256-byte-aligned allocation";
  EXPECT_EQ(m.weights_split, 20224u);
  EXPECT_EQ(m.weights_host, 300000u) << "host tables are mapped, not allocated: their stored bytes";
  EXPECT_EQ(m.state_per_slot, 4096u);
  EXPECT_EQ(m.state, 3 * 4096u);
  EXPECT_EQ(m.activations, 777u);
  EXPECT_EQ(m.total, 1024u + 20224u + 3 * 4096u + 777u);
  EXPECT_EQ(m.limit, 123456789u);
}

// A share of the tiny fixture, for the checks that only name it.
RankShare tiny_share(int world, int rank) { return share_of(test::fixture_config("dsv41-tiny"), world, rank); }

TEST(MemoryLedger, FitsAtOrUnderTheLimitAndWithoutOne) {
  const RankShare share = tiny_share(2, 0);
  MemoryLedger m;
  m.total = 5000;
  m.limit = 0;
  EXPECT_TRUE(check_fits(m, share, "--memory-gib").is_ok()) << "limit 0 is unchecked";
  m.limit = 5000;
  EXPECT_TRUE(check_fits(m, share, "--memory-gib").is_ok());
  m.limit = 4999;
  EXPECT_FALSE(check_fits(m, share, "--memory-gib").is_ok());
}

TEST(MemoryLedger, RefusalNamesRankNeedLimitAndSourceAndPrintsTheLedger) {
  const ModelConfig config = test::fixture_config("dsv41-release");
  const RankShare share = share_of(config, 4, 1);
  MemoryLedger m;
  m.weights_replicated = 3ull << 30;
  m.weights_split = 5ull << 30;
  m.weights_host = 7ull << 30;
  m.state_per_slot = 1ull << 28;
  m.state = 1ull << 30;
  m.activations = 1ull << 29;
  m.total = m.weights_replicated + m.weights_split + m.state + m.activations;
  m.limit = 8ull << 30;
  const Status s = check_fits(m, share, "target h200 device memory");
  ASSERT_FALSE(s.is_ok());
  const std::string& text = s.message();
  for (const char* part : {"rank 1 of world 4", "needs 9.50 GiB", "the limit is 8.00 GiB", "(target h200 device memory)",
                           "weights, replicated", "3.00 GiB", "weights, split", "5.00 GiB", "state", "0.25 GiB a slot",
                           "activations", "0.50 GiB", "device total", "of 8.00 GiB", "host tables", "7.00 GiB"})
    EXPECT_NE(text.find(part), std::string::npos) << "missing \"" << part << "\" in:\n" << text;
}

TEST(MemoryLedger, LedgerTextShowsHostTablesOnlyWhenPresentAndTheLimitWhenChecked) {
  MemoryLedger m;
  m.total = 1ull << 30;
  const std::string plain = ledger_text(m);
  EXPECT_EQ(plain.find("host tables"), std::string::npos) << plain;
  EXPECT_NE(plain.find("(no limit checked)"), std::string::npos) << plain;
  m.weights_host = 1;
  m.limit = 2ull << 30;
  const std::string full = ledger_text(m);
  EXPECT_NE(full.find("host tables"), std::string::npos) << full;
  EXPECT_NE(full.find("of 2.00 GiB"), std::string::npos) << full;
  EXPECT_EQ(gib_text(0), "0.00 GiB");
  EXPECT_EQ(gib_text(1ull << 30), "1.00 GiB");
  EXPECT_EQ(gib_text(7ull << 29), "3.50 GiB");
}

// The kernels' module globals, once compiled, are a ledger line of their own, in the total and so in the limit.
TEST(MemoryLedger, KernelGlobalsJoinTheTotalTheLimitAndTheText) {
  MemoryLedger m;
  m.weights_split = 1000;
  m.activations = 500;
  m.total = 1500;
  m.limit = 2000;
  const RankShare share = tiny_share(1, 0);
  EXPECT_TRUE(check_fits(m, share, "--memory-gib").is_ok());
  add_kernel_globals(m, 600);
  EXPECT_EQ(m.kernel_globals, 600u);
  EXPECT_TRUE(m.kernel_globals_known);
  EXPECT_EQ(m.total, 2100u);
  const Status refused = check_fits(m, share, "--memory-gib");
  ASSERT_FALSE(refused.is_ok()) << "600 bytes of globals push 1500 over 2000";
  EXPECT_NE(refused.message().find("kernel globals"), std::string::npos) << refused.message();
  const std::string text = ledger_text(m);
  EXPECT_NE(text.find("kernel globals           0.00 GiB  (600 bytes"), std::string::npos) << text;
  EXPECT_EQ(text.find("not counted"), std::string::npos) << text;
}

// Each refused setting names the setting and its value (and the bound, where there is one); the
// library knows no flags (dsv41c maps "setting context = 0" to "--context 0").
TEST(ServingSettingsCheck, RefusalsNameTheSettingAndTheValue) {
  const ModelConfig config = test::fixture_config("dsv41-tiny");  // max_position_embeddings 4096
  struct Case {
    const char* what;
    void (*edit)(ServingSettings&);
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"context -1", [](ServingSettings& s) { s.context = -1; }, {"setting context = -1", "max_position_embeddings 4096"}},
      {"context over max", [](ServingSettings& s) { s.context = 4097; }, {"setting context = 4097", "4096"}},
      {"slots 0", [](ServingSettings& s) { s.slots = 0; }, {"setting slots = 0", "4096"}},
      {"slots 5000", [](ServingSettings& s) { s.slots = 5000; }, {"setting slots = 5000"}},
      {"prefill 0", [](ServingSettings& s) { s.prefill_rows = {0}; }, {"setting prefill_rows = 0", "65536"}},
      {"prefill 70000", [](ServingSettings& s) { s.prefill_rows = {70000}; }, {"setting prefill_rows = 70000"}},
      {"decode none", [](ServingSettings& s) { s.decode_rows = {}; }, {"setting decode_rows"}},
      {"decode 300", [](ServingSettings& s) { s.decode_rows = {1, 300}; }, {"setting decode_rows = 300", "256"}},
      {"decode order", [](ServingSettings& s) { s.decode_rows = {4, 2}; }, {"setting decode_rows = 2", "after 4"}},
      {"prefill twice", [](ServingSettings& s) { s.prefill_rows = {64, 64}; }, {"prefill_rows = 64", "listed twice"}},
      {"activations", [](ServingSettings& s) { s.activations = DType::F16; }, {"setting activations = F16", "bf16 or f32"}},
  };
  for (const Case& c : cases) {
    ServingSettings settings;
    settings.context = 4096;
    ASSERT_TRUE(check_settings(config, settings).is_ok());
    c.edit(settings);
    const Status s = check_settings(config, settings);
    ASSERT_FALSE(s.is_ok()) << c.what;
    for (const std::string& part : c.parts)
      EXPECT_NE(s.message().find(part), std::string::npos) << c.what << ": \"" << part << "\" not in " << s.message();
    EXPECT_EQ(s.message().find("--"), std::string::npos) << c.what << ": a flag in " << s.message();
  }
}

// Context 0 asks for the default: 65,536, or the model's max_position_embeddings when smaller.
TEST(ServingSettingsCheck, TheDefaultContextIsTheSmallerOf65536AndTheModelLimit) {
  ModelConfig config = test::fixture_config("dsv41-tiny");
  ASSERT_EQ(config.max_position_embeddings, 4096);
  ServingSettings settings;
  ASSERT_EQ(settings.context, 0);
  EXPECT_EQ(default_context(config), 4096);
  const Result<ServingSettings> tiny = resolve_settings(config, settings);
  ASSERT_TRUE(tiny.is_ok()) << tiny.status().message();
  EXPECT_EQ(tiny->context, 4096);
  config.max_position_embeddings = 1 << 20;
  EXPECT_EQ(default_context(config), 65536);
  EXPECT_EQ(resolve_settings(config, settings)->context, 65536);
  settings.context = 1000;  // asked for: kept
  EXPECT_EQ(resolve_settings(config, settings)->context, 1000);
}

}  // namespace
}  // namespace dsv41
