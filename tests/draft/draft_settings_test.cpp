// tests/draft/draft_settings_test.cpp — what --draft-tokens admits, and the longer rings and tails it plans.
#include <gtest/gtest.h>

#include "compiler/plan/serving_settings.h"
#include "compiler/plan/state_layout.h"
#include "tests/support/test_support.h"

namespace dsv41 {
namespace {

ServingSettings drafting(int64_t k) {
  ServingSettings s;
  s.context = 64;
  s.decode_rows = {1, 2, 4, 8};
  s.draft_tokens = k;
  return s;
}

void expect_refused(const ModelConfig& c, const ServingSettings& s, const std::string& text) {
  const Status status = check_settings(c, s);
  ASSERT_FALSE(status.is_ok()) << text;
  EXPECT_NE(status.message().find(text), std::string::npos) << status.message();
}

TEST(DraftSettings, DraftTokensNeedDSparkBlocksAndAWindowForTheirRows) {
  const ModelConfig draft = test::fixture_config("dsv41-tiny-draft"), plain = test::fixture_config("dsv41-tiny");
  for (int64_t k = 0; k <= 5; ++k) EXPECT_TRUE(check_settings(draft, drafting(k)).is_ok()) << k;
  EXPECT_TRUE(check_settings(plain, drafting(0)).is_ok());
  expect_refused(plain, drafting(2), "setting draft_tokens = 2: the model has no DSpark blocks");
  expect_refused(draft, drafting(6), "setting draft_tokens = 6: must be between 0 and dspark_block_size 5");
  expect_refused(draft, drafting(-1), "setting draft_tokens = -1: must be between 0 and dspark_block_size 5");
  ServingSettings narrow = drafting(4);
  narrow.decode_rows = {1, 2, 4};
  expect_refused(draft, narrow, "setting decode_rows = 4: the largest is below draft_tokens 4 + 1");
}

TEST(DraftSettings, RingsAndTailsArePlannedLongerOnlyWhenDrafting) {
  const ModelConfig c = test::fixture_config("dsv41-tiny-draft");
  const StateLayout serial = plan_state_layout(c, 64), drafted = plan_state_layout(c, 64, DType::BF16, 5);
  ASSERT_EQ(serial.buffers.size(), drafted.buffers.size());
  EXPECT_GT(drafted.bytes_per_slot, serial.bytes_per_slot);
  for (size_t i = 0; i < serial.buffers.size(); ++i) {
    const BufferDecl &a = serial.buffers[i], &b = drafted.buffers[i];
    const bool ring = a.name.find(".ring") != std::string::npos, tail = a.name.find(".tail") != std::string::npos;
    if (ring) {
      EXPECT_EQ(a.shape[0], c.sliding_window) << a.name;
      EXPECT_EQ(b.shape[0], c.sliding_window + 5) << b.name;
    } else if (tail) {
      EXPECT_EQ(a.shape[0], 2) << a.name;  // the tiny kv sources with a tail have ratio 2
      EXPECT_EQ(b.shape[0], 7) << b.name;  // 5 drafts + max(2, ratio - 1)
    } else {
      EXPECT_EQ(a.shape, b.shape) << a.name;  // caches are indexed by position: no change
    }
  }
}

}  // namespace
}  // namespace dsv41
