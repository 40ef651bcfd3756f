// tests/cuda/cuda_bench_test.cpp — `dsv41-rt bench` on a GPU (label gpu; skips without a driver): the tiny
// model at world 1 measures every phase asked for, its roofline is a real bandwidth, the routing it reads
// back gives the experts a step can select, and the per-op pass times every launched call; a rank of a
// world-2 plan runs alone and a world-2 rank without --alone is refused.
#include <set>

#include <gtest/gtest.h>

#include "runtime/gpu/bench_runner.h"
#include "tests/cuda/cuda_test_device.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::cuda_test {
namespace {

namespace fs = std::filesystem;

ServingSettings bench_settings() {
  ServingSettings s;
  s.context = 128;
  s.slots = 2;
  s.prefill_rows = {16};
  s.decode_rows = {1, 2};
  return s;
}

gpu::BenchOptions tiny_options(const fs::path& program) {
  gpu::BenchOptions o;
  o.program = program.string();
  o.model_dir = test::tiny_pack("release").string();
  o.rows = {1, 2};
  o.prefill = {16};
  o.fill = 40;  // past the 16-row window; ratio-2 layers hold 20 entries against index_topk 8
  o.replays = 5;
  o.warmup = 1;
  o.per_op = true;
  o.roofline_mib = 512;
  o.progress = nullptr;
  return o;
}

Result<gpu::BenchReport> bench(const gpu::BenchOptions& o) {
  gpu::BenchReport out;
  DSV41_TRY(gpu::run_bench(o, [&](const gpu::BenchReport& report) {
    out = report;
    return Status::ok();
  }));
  return out;
}

using CudaBench = DeviceTest;

TEST_F(CudaBench, TinyWorld1MeasuresEachPhaseAndReadsTheRouting) {
  const test::TempDir dir;
  plan_h200(test::tiny_pack("release"), 1, bench_settings(), dir.path());
  auto report = bench(tiny_options(dir.path() / "rank0.fb"));
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  EXPECT_GT(report->roofline.gb_per_s, 500) << "an H200 streams several TB/s";
  ASSERT_EQ(report->phases.size(), 3u);
  const int64_t moe_layers = test::fixture_config("dsv41-tiny").num_hidden_layers;  // every tiny layer has experts
  for (const gpu::PhaseMeasure& m : report->phases) {
    SCOPED_TRACE(m.phase);
    ASSERT_TRUE(m.error.empty()) << m.error;
    EXPECT_EQ(m.ms.count, 5);
    EXPECT_GT(m.ms.median, 0);
    EXPECT_LE(m.ms.p10, m.ms.median);
    EXPECT_LE(m.ms.median, m.ms.p90);
    EXPECT_GT(m.bytes.dense, 0u);
    EXPECT_GT(m.bytes.experts, 0u);
    // Each layer's rows select between topk (6) and rows·topk distinct experts of 16.
    EXPECT_GE(m.bytes.experts_read, 6 * moe_layers);
    EXPECT_LE(m.bytes.experts_read, std::min<int64_t>(16, 6 * m.rows) * moe_layers);
    EXPECT_NEAR(m.gb_per_s, m.bytes.total() / (m.ms.median * 1e-3) / 1e9, 1e-6 * m.gb_per_s);
    int64_t calls = 0;
    double share = 0;
    std::set<std::string> ops;
    for (const gpu::OpTime& t : m.ops) {
      calls += t.calls;
      share += t.share;
      ops.insert(t.op);
    }
    EXPECT_NEAR(share, 1.0, 1e-9);
    EXPECT_TRUE(ops.count("moe_experts") && ops.count("embed") && ops.count("router"));
    EXPECT_GT(calls, 8 * moe_layers);  // every call of the phase launches at world 1
  }
  EXPECT_EQ(report->phases[0].bytes.experts_read, 6 * moe_layers);  // one row: exactly topk a layer
}

TEST_F(CudaBench, AWorld2RankRunsOnlyAlone) {
  const test::TempDir dir;
  plan_h200(test::tiny_pack("release"), 2, bench_settings(), dir.path());
  gpu::BenchOptions o = tiny_options(dir.path() / "rank1.fb");
  o.synthetic_seed = 3;
  const Status shared = bench(o).status();
  EXPECT_NE(shared.message().find("rank 1 of world 2"), std::string::npos) << shared.message();
  o.alone = true;
  auto alone = bench(o);
  ASSERT_TRUE(alone.is_ok()) << alone.status().message();
  EXPECT_TRUE(alone->alone);
  for (const gpu::PhaseMeasure& m : alone->phases) {
    EXPECT_TRUE(m.error.empty()) << m.phase << ": " << m.error;
    for (const gpu::OpTime& t : m.ops) EXPECT_NE(t.op, "exchange_gather") << "alone, the gather launches nothing";
  }
}

}  // namespace
}  // namespace dsv41::cuda_test
