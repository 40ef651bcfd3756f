// tests/runtime/engram_step_plan_test.cpp — what the CUDA backend's Engram step takes (runtime/gpu/engram_step.h),
// sized from a program alone, without a device: the tiny Engram fixture's tables, widths and per-row copy
// against its config and the program's ledger; a program without a token map refused before any allocation.
#include <gtest/gtest.h>

#include "common/program_calls.h"
#include "runtime/gpu/engram_step.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41 {
namespace {

std::vector<int32_t> token_map() {
  std::vector<int32_t> map(1280);
  for (int32_t t = 0; t < 1280; ++t) map[t] = t % 1070;
  return map;
}

TEST(EngramStepPlan, SizesFollowTheConfigAndTheLedger) {
  const auto programs =
      test::plan_programs(test::fixture_pack("dsv41-tiny-engram", "release"), 1, test::small_settings(), token_map());
  ASSERT_EQ(programs.size(), 1u);  // every rank computes Engram whole: its sizes do not depend on the share
  for (const ProgramFile& file : programs) {
    auto calls = read_call_lists(file.program());
    ASSERT_TRUE(calls.is_ok()) << calls.status().message();
    auto plan = gpu::plan_engram_step(file.program(), *calls);
    ASSERT_TRUE(plan.is_ok()) << plan.status().message();
    ASSERT_TRUE(plan->active());
    // engram_max_ngram_size 4, engram_n_heads 2, engram_head_dim 32, layers 1 and 2.
    EXPECT_EQ(plan->columns, 6);
    EXPECT_EQ(plan->width, 12);
    EXPECT_EQ(plan->dim, 32);
    EXPECT_EQ(plan->capacity, 8);  // the largest phase: prefill segments of 8 and 4
    ASSERT_EQ(plan->tables.size(), 2u);
    EXPECT_EQ(plan->tables[0].layer, 1);
    EXPECT_EQ(plan->tables[0].rows, 6126);  // engram_num_embeddings
    EXPECT_EQ(plan->tables[1].layer, 2);
    EXPECT_EQ(plan->tables[1].rows, 6332);
    EXPECT_EQ(plan->copy_per_row(), 12u * 33u);
    EXPECT_EQ(plan->copy_per_row(), file.program().ledger()->host_copy_per_row());
    EXPECT_EQ(plan->scales_offset(), 8u * 12u * 32u);               // the codes: 256-byte aligned already
    EXPECT_EQ(plan->pinned_bytes(), plan->scales_offset() + 256u);  // 8 × 12 scales in one 256-byte block
    EXPECT_EQ(plan->device_bytes(), plan->pinned_bytes() + 512u);   // and 8 × 12 int32 row ids
  }
}

TEST(EngramStepPlan, AProgramWithoutATokenMapIsRefusedAndOneWithoutEngramTakesNothing) {
  const auto programs =
      test::plan_programs(test::fixture_pack("dsv41-tiny-engram", "release"), 1, test::small_settings());
  ASSERT_EQ(programs.size(), 1u);
  auto calls = read_call_lists(programs[0].program());
  ASSERT_TRUE(calls.is_ok()) << calls.status().message();
  auto plan = gpu::plan_engram_step(programs[0].program(), *calls);
  ASSERT_FALSE(plan.is_ok());
  EXPECT_NE(plan.status().message().find("holds no Engram token map"), std::string::npos) << plan.status().message();

  const auto plain = test::plan_programs(test::tiny_pack("release"), 1, test::small_settings());
  ASSERT_EQ(plain.size(), 1u);
  auto plain_calls = read_call_lists(plain[0].program());
  ASSERT_TRUE(plain_calls.is_ok()) << plain_calls.status().message();
  auto none = gpu::plan_engram_step(plain[0].program(), *plain_calls);
  ASSERT_TRUE(none.is_ok()) << none.status().message();
  EXPECT_FALSE(none->active());
  EXPECT_EQ(none->device_bytes(), 0u);
}

}  // namespace
}  // namespace dsv41
