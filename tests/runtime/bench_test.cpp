// tests/runtime/bench_test.cpp — what `dsv41-rt bench` computes without a GPU: quantiles, option and world
// checks, the phases and statics it picks, the weight bytes of a step against a count by tensor name,
// the per-op and per-call-site grouping, and the CLI's refusals (cpu backend, no driver).
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "common/program_calls.h"
#include "compiler/synth/synth_pack.h"
#include "runtime/gpu/bench_bytes.h"
#include "runtime/gpu/bench_plan.h"
#include "runtime/gpu/bench_report.h"
#include "runtime/gpu/bench_runner.h"
#include "runtime/gpu/bench_stats.h"
#include "runtime/phase_checks.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::gpu {
namespace {

TEST(BenchStats, QuantilesInterpolateBetweenRanks) {
  auto s = time_stats({10, 1, 9, 2, 8, 3, 7, 4, 6, 5});  // order does not matter
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->count, 10);
  EXPECT_DOUBLE_EQ(s->median, 5.5);  // between the 5th and 6th
  EXPECT_DOUBLE_EQ(s->p10, 1.9);     // position 0.9: 1 + 0.9·(2 − 1)
  EXPECT_DOUBLE_EQ(s->p90, 9.1);     // position 8.1
  EXPECT_DOUBLE_EQ(s->min, 1);
  EXPECT_DOUBLE_EQ(s->max, 10);
  auto one = time_stats({0.25});
  ASSERT_TRUE(one.is_ok());
  EXPECT_DOUBLE_EQ(one->median, 0.25);
  EXPECT_DOUBLE_EQ(one->p10, 0.25);
  EXPECT_DOUBLE_EQ(one->p90, 0.25);
  EXPECT_DOUBLE_EQ(time_stats({3, 1, 2})->median, 2);
}

TEST(BenchStats, RefusesNoSampleAndBrokenTimers) {
  EXPECT_NE(time_stats({}).status().message().find("no sample"), std::string::npos);
  const auto nan = time_stats({1.0, std::nan(""), 2.0});
  ASSERT_FALSE(nan.is_ok());
  EXPECT_NE(nan.status().message().find("sample 1"), std::string::npos) << nan.status().message();
  EXPECT_FALSE(time_stats({1.0, -0.5}).is_ok());
}

BenchOptions valid_options() {
  BenchOptions o;
  o.program = "rank0.fb";
  o.synthetic_seed = 7;
  return o;
}

TEST(BenchReport, SaysHowTheGraphsWereLaunched) {
  gpu::BenchReport report;
  EXPECT_NE(gpu::bench_text(report).find("graphs      two lanes (independent calls side by side), programmatic dependent launch"),
            std::string::npos);
  EXPECT_EQ(gpu::bench_json(report)["graph_lanes"], true);
  report.graph_lanes = report.programmatic_launch = false;
  EXPECT_NE(gpu::bench_text(report).find("graphs      one lane (--one-lane), no programmatic launch (--no-pdl)"),
            std::string::npos);
  EXPECT_EQ(gpu::bench_json(report)["graph_lanes"], false);
  EXPECT_EQ(gpu::bench_json(report)["programmatic_launch"], false);
}

TEST(BenchPlan, OptionsAreCheckedNamingTheFlag) {
  EXPECT_TRUE(check_bench_options(valid_options()).is_ok());
  auto refused = [](void (*edit)(BenchOptions&), const std::string& words) {
    BenchOptions o = valid_options();
    edit(o);
    const Status s = check_bench_options(o);
    EXPECT_FALSE(s.is_ok()) << words;
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
  };
  refused([](BenchOptions& o) { o.backend = "cpu"; }, "--backend cpu: bench measures the CUDA backend only");
  refused([](BenchOptions& o) { o.rows = {1, 0}; }, "--rows 0");
  refused([](BenchOptions& o) { o.prefill = {-4}; }, "--prefill -4");
  refused([](BenchOptions& o) { o.rows.clear(), o.prefill.clear(); }, "nothing to measure");
  refused([](BenchOptions& o) { o.fill = -1; }, "--fill -1");
  refused([](BenchOptions& o) { o.replays = 0; }, "--replays 0");
  refused([](BenchOptions& o) { o.warmup = -1; }, "--warmup -1");
  refused([](BenchOptions& o) { o.phase_seconds = 0; }, "--phase-seconds 0");
  refused([](BenchOptions& o) { o.roofline_mib = 64; }, "--roofline-mib 64");
  refused([](BenchOptions& o) { o.synthetic_seed.reset(); }, "--synthetic-weights");
}

TEST(BenchPlan, ABiggerWorldRunsOnlyAlone) {
  EXPECT_TRUE(check_bench_world("p.fb", 1, 0, false).is_ok());
  EXPECT_TRUE(check_bench_world("p.fb", 4, 0, true).is_ok());
  const Status shared = check_bench_world("p.fb", 4, 0, false);
  EXPECT_NE(shared.message().find("rank 0 of world 4"), std::string::npos) << shared.message();
  EXPECT_NE(shared.message().find("--alone"), std::string::npos) << shared.message();
  const Status alone = check_bench_world("p.fb", 1, 0, true);
  EXPECT_NE(alone.message().find("--alone is for one rank of a bigger world"), std::string::npos) << alone.message();
}

// Ranks as processes measure a bigger world with their peers; --alone and peers exclude each other;
// the bench flags every rank must share are part of the agreement.
TEST(BenchPlan, RankProcessesRunABiggerWorldWithTheirPeers) {
  EXPECT_TRUE(check_bench_world("p.fb", 2, 1, false, true).is_ok());
  const Status both = check_bench_world("p.fb", 2, 1, true, true);
  EXPECT_NE(both.message().find("--alone with --master"), std::string::npos) << both.message();
  EXPECT_NE(check_bench_world("p.fb", 2, 0, false).message().find("launch --gpus"), std::string::npos);
  BenchOptions a, b;
  a.rows = {1, 8};
  b.rows = {1, 8};
  EXPECT_EQ(bench_agreement(a), bench_agreement(b));
  EXPECT_EQ(bench_agreement(a), "bench rows [1, 8], prefill [2048], fill 4096, replays 20, warmup 2, per-op off");
  b.replays = 19;
  EXPECT_NE(bench_agreement(a), bench_agreement(b));
}

// The tiny model planned at world 1 from a headers-only release-format pack (planning reads headers
// only, and writing no data keeps each test process well under a second).
class BenchTiny : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pack_ = new test::TempDir();
    SynthPackOptions options;
    options.out_dir = pack_->path().string();
    options.format = SynthFormat::Release;
    options.headers_only = true;
    const Status written = write_synth_pack(test::fixture_config("dsv41-tiny"),
                                            test::read_file(test::fixture_config_path("dsv41-tiny")), options);
    ASSERT_TRUE(written.is_ok()) << written.message();
    programs_ = new std::vector<ProgramFile>(test::plan_programs(pack_->path(), 1, test::small_settings()));
    calls_ = new CallLists(read_call_lists(program().program()).value());
    layout_ = new DeviceLayout(plan_device_layout(program(), *calls_).value());
  }
  static void TearDownTestSuite() {
    delete layout_;
    delete calls_;
    delete programs_;
    delete pack_;
  }
  static const ProgramFile& program() { return programs_->at(0); }
  static const CallLists& calls() { return *calls_; }        // the program's call lists
  static const DeviceLayout& layout() { return *layout_; }   // and their device layout
  static test::TempDir* pack_;
  static std::vector<ProgramFile>* programs_;
  static CallLists* calls_;
  static DeviceLayout* layout_;
};
test::TempDir* BenchTiny::pack_ = nullptr;
std::vector<ProgramFile>* BenchTiny::programs_ = nullptr;
CallLists* BenchTiny::calls_ = nullptr;
DeviceLayout* BenchTiny::layout_ = nullptr;

TEST_F(BenchTiny, PicksThePlannedPhasesAndNamesTheOthers) {
  BenchOptions o = valid_options();
  o.rows = {2, 1};
  o.prefill = {8};
  auto picked = pick_bench_phases(calls().phases, o);
  ASSERT_TRUE(picked.is_ok()) << picked.status().message();
  ASSERT_EQ(picked->size(), 3u);
  EXPECT_EQ((*picked)[0]->name, "decode.r2");
  EXPECT_EQ((*picked)[1]->name, "decode.r1");
  EXPECT_EQ((*picked)[2]->name, "prefill.n8");
  o.rows = {16};
  const Status missing = pick_bench_phases(calls().phases, o).status();
  EXPECT_NE(missing.message().find("--rows 16: the program has no phase decode.r16 (planned: "), std::string::npos)
      << missing.message();
}

TEST_F(BenchTiny, StaticsPutEveryRowAtTheFillAndPassTheSessionsChecks) {
  const Phase* r2 = find_phase_in(calls().phases, "decode.r2");
  const Phase* p8 = find_phase_in(calls().phases, "prefill.n8");
  ASSERT_TRUE(r2 && p8);
  const int64_t context = 64, vocab = 1280;
  // Two slots: a sequence per row.
  auto two = bench_statics(*r2, 40, 2, context, vocab);
  ASSERT_TRUE(two.is_ok()) << two.status().message();
  EXPECT_EQ(*two, (std::vector<int32_t>{17, 0, 40, 0, (17 + 7919) % 1280, 1, 40, 1}));
  EXPECT_TRUE(check_phase_statics(*r2, *two, 2, context, vocab).is_ok());
  // One slot: both rows one sequence, consecutive positions.
  auto one = bench_statics(*r2, 40, 1, context, vocab);
  ASSERT_TRUE(one.is_ok());
  EXPECT_EQ((*one)[kStaticsFields + kStaticSlot], 0);
  EXPECT_EQ((*one)[kStaticsFields + kStaticPosition], 41);
  EXPECT_EQ((*one)[kStaticsFields + kStaticFirstRow], 0);
  EXPECT_TRUE(check_phase_statics(*r2, *one, 1, context, vocab).is_ok());
  // A prefill segment is one sequence in slot 0.
  auto prefill = bench_statics(*p8, 10, 2, context, vocab);
  ASSERT_TRUE(prefill.is_ok());
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ((*prefill)[r * kStaticsFields + kStaticSlot], 0);
    EXPECT_EQ((*prefill)[r * kStaticsFields + kStaticPosition], 10 + r);
  }
  EXPECT_TRUE(check_phase_statics(*p8, *prefill, 2, context, vocab).is_ok());
  const Status full = bench_statics(*p8, 57, 2, context, vocab).status();
  EXPECT_NE(full.message().find("--fill 57: phase prefill.n8 puts 8 rows of a sequence at positions 57 .. 64, past the "
                                "context of 64 tokens (use a fill of at most 56)"),
            std::string::npos)
      << full.message();
}

// The bytes of a step against a count made from tensor names alone: every stored tensor of the rank,
// minus the experts not selected, minus the embedding rows not read.
TEST_F(BenchTiny, StepBytesMatchACountByTensorName) {
  const fb::Program& p = program().program();
  const Phase* r2 = find_phase_in(calls().phases, "decode.r2");
  ASSERT_NE(r2, nullptr);
  auto weights = phase_weight_bytes(p, *r2, layout());
  ASSERT_TRUE(weights.is_ok()) << weights.status().message();
  const size_t moe_layers = weights->experts.size();
  ASSERT_GT(moe_layers, 1u);
  // Row 0 picks experts 0-5, row 1 picks 3-8: 9 distinct per layer (the tiny model has 16).
  const std::vector<int32_t> ids = {0, 1, 2, 3, 4, 5, 8, 7, 6, 5, 4, 3};
  auto step = step_bytes(*weights, 2, std::vector<std::vector<int32_t>>(moe_layers, ids));
  ASSERT_TRUE(step.is_ok()) << step.status().message();

  uint64_t expected = 0, embed = 0, experts = 0;
  int64_t vocab = 0;
  for (uint32_t i = 0; i < p.weights()->size(); ++i) {
    const std::string name = p.weights()->Get(i)->name()->str();
    const uint64_t bytes = layout().stored.bytes[i];
    if (name == "embed.weight") {
      embed = bytes;
      vocab = p.weights()->Get(i)->local_shape()->Get(0);
      continue;
    }
    const size_t at = name.find(".ffn.experts.");
    if (at != std::string::npos) {
      const int expert = std::stoi(name.substr(at + std::strlen(".ffn.experts.")));
      if (expert <= 8) experts += bytes;
      continue;
    }
    expected += bytes;
  }
  ASSERT_GT(embed, 0u);
  EXPECT_EQ(step->embed, 2 * embed / static_cast<uint64_t>(vocab));
  EXPECT_EQ(step->experts, experts);
  EXPECT_EQ(step->dense, expected);
  EXPECT_EQ(step->experts_read, static_cast<int64_t>(9 * moe_layers));
  EXPECT_EQ(step->total(), expected + experts + 2 * embed / static_cast<uint64_t>(vocab));

  // One row and one token: 6 experts a layer, 1 embedding row; an id past the experts is refused.
  auto single = step_bytes(*weights, 1, std::vector<std::vector<int32_t>>(moe_layers, {0, 1, 2, 3, 4, 5}));
  ASSERT_TRUE(single.is_ok());
  EXPECT_LT(single->experts, step->experts);
  EXPECT_EQ(single->experts_read, static_cast<int64_t>(6 * moe_layers));
  auto bad = step_bytes(*weights, 1, std::vector<std::vector<int32_t>>(moe_layers, {0, 16}));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("routed expert id 16 outside 0..15"), std::string::npos) << bad.status().message();
}

TEST(BenchRunner, PerCallTimesGroupByOpSlowestFirst) {
  const auto ops = group_op_times({"linear", "rope", "linear", "exchange_gather", "moe_experts"}, {1.0, 0.5, 3.0, -1, 2.5});
  ASSERT_EQ(ops.size(), 3u);  // the call that did not launch is not an op row
  EXPECT_EQ(ops[0].op, "linear");
  EXPECT_EQ(ops[0].calls, 2);
  EXPECT_DOUBLE_EQ(ops[0].ms, 4.0);
  EXPECT_DOUBLE_EQ(ops[0].share, 4.0 / 7.0);
  EXPECT_EQ(ops[1].op, "moe_experts");
  EXPECT_EQ(ops[2].op, "rope");
  EXPECT_DOUBLE_EQ(ops[2].share, 0.5 / 7.0);
}

// Every launched call naming a weight is listed with its first weight and the stored bytes of its weights;
// the sites group a weight's layers under one name.
TEST_F(BenchTiny, PerCallListingNamesEachWeightAndItsBytes) {
  const fb::Program& p = program().program();
  const Phase* r1 = find_phase_in(calls().phases, "decode.r1");
  ASSERT_NE(r1, nullptr);
  std::vector<double> ms(r1->calls.size(), 0.002);
  ms[0] = -1;  // a call that did not launch is not listed
  auto listed = call_times(p, *r1, layout(), ms);
  ASSERT_TRUE(listed.is_ok()) << listed.status().message();
  int64_t wq_a = 0;
  for (const CallTime& c : *listed) {
    EXPECT_NE(c.index, 0u);
    EXPECT_GT(c.bytes, 0u) << c.weight;
    if (c.op == "linear" && c.weight.find(".attn.wq_a.weight") != std::string::npos) {
      ++wq_a;
      EXPECT_EQ(c.grid[0], r1->calls[c.index].launch.grid[0]);
    }
  }
  const auto sites = group_call_sites(*listed);
  const auto site = std::find_if(sites.begin(), sites.end(), [](const SiteTime& s) { return s.site == "layers.*.attn.wq_a.weight"; });
  ASSERT_NE(site, sites.end());
  EXPECT_GT(wq_a, 1);
  EXPECT_EQ(site->calls, wq_a);
  EXPECT_DOUBLE_EQ(site->median_ms, 0.002);
  // A moe_experts call also counts the experts its rows selected: the step's routed bytes of that call.
  const auto weights = phase_weight_bytes(p, *r1, layout());
  ASSERT_TRUE(weights.is_ok()) << weights.status().message();
  ASSERT_FALSE(weights->experts.empty());
  const auto step = step_bytes(*weights, 1, std::vector<std::vector<int32_t>>(weights->experts.size(), {0, 1, 2, 3, 4, 5}));
  ASSERT_TRUE(step.is_ok()) << step.status().message();
  ASSERT_EQ(step->routed.size(), weights->experts.size());
  std::vector<CallTime> with_routing = *listed;
  add_routed_bytes(with_routing, weights->experts, step->routed);
  std::map<size_t, uint64_t> routed_at;  // call index -> that call's routed bytes
  for (size_t k = 0; k < weights->experts.size(); ++k) routed_at[weights->experts[k].call] = step->routed[k];
  size_t moe = 0;
  for (size_t i = 0; i < with_routing.size(); ++i) {
    const auto it = routed_at.find(with_routing[i].index);
    EXPECT_EQ(with_routing[i].bytes, (*listed)[i].bytes + (it != routed_at.end() ? it->second : 0))
        << with_routing[i].weight;
    moe += it != routed_at.end();
  }
  EXPECT_EQ(moe, weights->experts.size());  // every moe_experts call is listed (each names its shared expert)
  EXPECT_GT(step->routed[0], 0u);
  EXPECT_EQ(call_site("layers.12.attn.wq_a.weight"), "layers.*.attn.wq_a.weight");
  EXPECT_EQ(call_site("mtp.0.e2h.weight"), "mtp.*.e2h.weight");
  EXPECT_EQ(call_site("head.weight"), "head.weight");
  EXPECT_EQ(call_site("layers.1x.w"), "layers.1x.w");
}

// fixtures/dsv41-bench: the release's shapes, 4 layers, 64 experts, no Engram, no drafter; it plans at
// worlds 1 and 2 (headers only, no kernels: a second or so) and world 1 holds the whole model.
TEST(BenchFixture, PlansAtWorlds1And2WithTheReleaseShapes) {
  const ModelConfig config = test::fixture_config("dsv41-bench");
  const ModelConfig release = test::fixture_config("dsv41-release");
  EXPECT_EQ(config.num_hidden_layers, 4);
  EXPECT_EQ(config.n_routed_experts, 64);
  EXPECT_FALSE(config.has_engram());
  EXPECT_EQ(config.hidden_size, release.hidden_size);
  EXPECT_EQ(config.moe_intermediate_size, release.moe_intermediate_size);
  EXPECT_EQ(config.vocab_size, release.vocab_size);
  const test::TempDir dir;
  const std::string pack = (dir.path() / "pack").string();
  const test::CommandResult synth = test::run_dsv41c({"synth-pack", "--config", test::fixture_config_path("dsv41-bench").string(),
                                                      "--out", pack, "--format", "release", "--headers-only"});
  ASSERT_EQ(synth.exit_code, 0) << synth.describe();
  for (const char* world : {"1", "2"}) {
    const test::CommandResult plan =
        test::run_dsv41c({"plan", pack, "--world", world, "--out", (dir.path() / world).string()});
    EXPECT_EQ(plan.exit_code, 0) << plan.describe();
    EXPECT_NE(plan.out.find("rank 0 of world " + std::string(world)), std::string::npos) << plan.describe();
  }
}

TEST_F(BenchTiny, TheCliRefusesTheCpuBackendAWorldWithoutAloneAndNoDriver) {
  const test::TempDir dir;
  const std::string w1 = (dir.path() / "w1.fb").string();
  ASSERT_TRUE(write_file_atomic(w1, program().bytes().data(), program().bytes().size()).is_ok());
  const test::CommandResult cpu = test::run_dsv41rt({"bench", w1, "--synthetic-weights", "1", "--backend", "cpu", "--rows", "1"});
  EXPECT_EQ(cpu.exit_code, 1) << cpu.describe();
  EXPECT_NE(cpu.err.find("--backend cpu: bench measures the CUDA backend only"), std::string::npos) << cpu.describe();
  const test::CommandResult alone =
      test::run_dsv41rt({"bench", w1, "--synthetic-weights", "1", "--alone", "--rows", "1", "--prefill", "8"});
  EXPECT_EQ(alone.exit_code, 1) << alone.describe();
  EXPECT_NE(alone.err.find("--alone is for one rank of a bigger world"), std::string::npos) << alone.describe();
  const test::CommandResult rows = test::run_dsv41rt({"bench", w1, "--synthetic-weights", "1", "--rows", "16"});
  EXPECT_NE(rows.err.find("the program has no phase decode.r16"), std::string::npos) << rows.describe();
  const test::CommandResult help = test::run_dsv41rt({"bench", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("Example"), std::string::npos);
  if (test::cuda_driver_installed()) GTEST_SKIP() << "libcuda.so.1 is installed here: the no-driver refusal is not testable";
  const test::CommandResult none =
      test::run_dsv41rt({"bench", w1, "--synthetic-weights", "1", "--rows", "1,2", "--prefill", "8,4"});
  EXPECT_EQ(none.exit_code, 1) << none.describe();
  EXPECT_NE(none.err.find("libcuda.so.1: not found"), std::string::npos) << none.describe();
}

}  // namespace
}  // namespace dsv41::gpu
