// tests/gpu/gpu_attention_speed_test.cpp — sparse_attention and index_select at the release world-4
// rank-0 share's shapes (16 heads of 512, window 128, 512 selected; the indexer's 64 heads of 128 over
// the context of 65536): the calls of decode.r1, r8, r16 and the largest prefill segment, with the bf16
// and the official cache formats, each on the op test's random inputs (tests/gpu/gpu_op_inputs.h: 1-3
// sequences at random positions, so the fill varies; printed) and timed in a CUDA graph of repeated calls.
// Runs only with DSV41_GPU_BENCH=1 (a measurement, not a check; docs/perf.md records it).
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include <gtest/gtest.h>

#include "common/hashing.h"
#include "tests/gpu/gpu_op_device.h"
#include "tests/gpu/gpu_op_inputs.h"
#include "tests/gpu/gpu_op_plan.h"
#include "tests/gpu/gpu_op_values.h"
#include "tests/gpu/gpu_timing.h"

namespace dsv41::gpu_test {
namespace {

constexpr int kCallsPerGraph = 20, kReplays = 5;
const std::set<int64_t> kDecodeRows = {1, 8, 16};
const std::set<std::string> kOps = {"sparse_attention", "index_select"};

TEST(GpuSpeed, AttentionAndIndexerAtTheReleaseShapes) {
  const BenchDevice b = bench_device();
  if (!b.skip.empty()) GTEST_SKIP() << b.skip;
  ASSERT_TRUE(b.error.empty()) << b.error;
  GpuSetup s = gpu_setup();
  ASSERT_TRUE(s.device) << s.skip;
  auto inputs = synth_inputs("dsv41-release", SynthFormat::Release, 8);
  ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
  for (CacheFormat format : {CacheFormat::BF16, CacheFormat::Official}) {
    ServingSettings settings;
    settings.cache_format = format;
    std::set<std::string> without_kernel;
    auto r = plan_lists(*inputs, format == CacheFormat::BF16 ? "release" : "release caches=official", 4, 0, settings,
                        s.target, without_kernel);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    // One case per (phase, variant): the decode phases of kDecodeRows and the largest prefill segment.
    size_t prefill = SIZE_MAX;
    std::vector<size_t> phases;
    for (size_t p = 0; p < (*r)->calls.phases.size(); ++p) {
      const Phase& phase = (*r)->calls.phases[p];
      if (phase.kind == PhaseKind::Decode && kDecodeRows.count(phase.rows)) phases.push_back(p);
      if (phase.kind != PhaseKind::Decode && (prefill == SIZE_MAX || phase.rows > (*r)->calls.phases[prefill].rows))
        prefill = p;
    }
    if (prefill != SIZE_MAX) phases.push_back(prefill);
    std::vector<Case> cases;
    for (size_t p : phases) {
      std::map<std::string, Case> one;
      collect(one, *r, {p}, &kOps, [](const Case& x, const Case& y) { return case_weights(x) < case_weights(y); });
      for (auto& [key, c] : one) cases.push_back(c);
    }
    std::vector<const Case*> list;
    for (const Case& c : cases) list.push_back(&c);
    std::unique_ptr<gpu::KernelLauncher> launcher;
    const std::vector<int32_t> kernel_of = compile_and_load(list, s.target, *s.device, launcher);
    for (size_t i = 0; i < list.size(); ++i) {
      ASSERT_GE(kernel_of[i], 0) << list[i]->key;
      const CallSite site = site_of(*list[i]);
      auto in = make_inputs(site, mix_seed(run_seed(), hash_text(list[i]->key)));
      ASSERT_TRUE(in.is_ok()) << in.status().message();
      auto up = upload_call(*s.device, site, *in);
      ASSERT_TRUE(up.is_ok()) << up.status().message();
      // One eager launch first (it also opts the kernel into its dynamic shared memory outside a capture).
      ASSERT_TRUE(launcher->launch(kernel_of[i], *site.call, call_env(site), (*up)->bindings).is_ok());
      ASSERT_TRUE(b.driver->synchronize().is_ok());
      int32_t error_word = -1;
      ASSERT_TRUE((*up)->errors->download(&error_word, 4).is_ok());
      EXPECT_EQ(error_word, 0) << list[i]->key << ": " << error_code_name(error_word);
      auto us = time_call(*b.driver, *launcher, kernel_of[i], *site.call, call_env(site), {(*up)->bindings},
                          kCallsPerGraph, kReplays);
      ASSERT_TRUE(us.is_ok()) << us.status().message();
      const KernelLaunch& l = site.call->launch;
      std::printf("%-16s %-7s %5lld rows  grid (%lld, %lld, %lld)  %9.2f us  %s\n    inputs: %s\n", site.call->op.c_str(),
                  format == CacheFormat::BF16 ? "bf16" : "packed", static_cast<long long>(in->rows),
                  static_cast<long long>(l.grid[0]), static_cast<long long>(l.grid[1]),
                  static_cast<long long>(l.grid[2]), *us, list[i]->key.c_str(), in->description.c_str());
    }
  }
}

}  // namespace
}  // namespace dsv41::gpu_test
