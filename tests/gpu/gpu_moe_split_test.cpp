// tests/gpu/gpu_moe_split_test.cpp — the grouped experts' phase 1 and phase 2 items split over blocks
// (kernels/moe_slices.cuh phase1_split, phase2_split) in the release config's fused moe_experts at one-row
// decode phases, checked against the CPU op. World 4 rank 0 (F = 640): the inputs' row picks 6 distinct
// routed experts, so with the shared expert the step has 280 phase 1 items and 320 phase 2 items for 264
// blocks: both last rounds split (16 items in 5 K slices, 56 items in 4 sets of 2 jobs). World 8 rank 7
// (F = 256): 112 phase 1 items, fewer than kSliceBelow, all split into K slices (4 each).
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_check.h"
#include "tests/gpu/gpu_op_device.h"
#include "tests/gpu/gpu_op_plan.h"

namespace dsv41::gpu_test {
namespace {

// Plans the release config at (world, rank) with one-row decode phases and checks its fused moe_experts
// variant, whose key must contain `width` (the rank's expert columns).
void check_release_experts_at_one_row(int world, int rank, const std::string& width) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  auto inputs = synth_inputs("dsv41-release", SynthFormat::Release, 8);
  ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
  ServingSettings settings;
  settings.decode_rows = {1};
  std::set<std::string> without_kernel;
  auto r = plan_lists(*inputs, "release experts at one row", world, rank, settings, s.target, without_kernel);
  ASSERT_TRUE(r.is_ok()) << "release world " << world << " rank " << rank << ": " << r.status().message();
  std::vector<size_t> one;
  for (size_t p = 0; p < (*r)->calls.phases.size(); ++p)
    if ((*r)->calls.phases[p].kind == PhaseKind::Decode && (*r)->calls.phases[p].rows == 1) one.push_back(p);
  ASSERT_EQ(one.size(), 1u) << "the one-row decode phase";
  const std::set<std::string> ops = {"moe_experts"};
  std::map<std::string, Case> cases;
  collect(cases, *r, one, &ops, [](const Case&, const Case&) { return false; });
  if (!env_text("DSV41_GPU_FILTER")) {
    ASSERT_EQ(cases.size(), 1u) << "one moe_experts variant in the one-row phase";
    const std::string& key = cases.begin()->first;
    EXPECT_NE(key.find(width), std::string::npos) << key;
    EXPECT_NE(key.find("format_shared_w1=fp8_tile32"), std::string::npos) << "not the fused call: " << key;
  }
  const int checked = check_cases(cases, s.target, s.device ? &*s.device : nullptr);
  EXPECT_EQ(checked, static_cast<int>(cases.size()));
  std::printf("release world %d rank %d experts at one row: %d cases\n", world, rank, checked);
}

TEST(GpuOps, ReleaseExpertsLastRoundSplitMatchesTheCpuOps) { check_release_experts_at_one_row(4, 0, "width=640"); }

// The K split of few phase 1 items (groups < kSliceBelow), the only case left for it since the shared
// expert was fused (release world 4's fused steps have 224 items or more). Added without a GPU: run only
// dry here (DSV41_GPU_DRY=1: planning, inputs and the CPU op), not yet on an H200.
TEST(GpuOps, ReleaseExpertsFewItemsSlicedMatchTheCpuOps) { check_release_experts_at_one_row(8, 7, "width=256"); }

}  // namespace
}  // namespace dsv41::gpu_test
