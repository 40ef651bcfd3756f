// tests/runtime/launch_mode_test.cpp — the launch mode written into program modules (DSV41_PDL_TRIGGER,
// DSV41_PDL_PREFETCH) as kernels/weight_prefetch.cuh's dsv41k::pdl codes; unknown values refused by name.
#include <gtest/gtest.h>

#include "runtime/gpu/programmatic_launch.h"

namespace dsv41::gpu {
namespace {

TEST(LaunchMode, DefaultsToNoEarlyTriggerWithPrefetch) {
  auto mode = parse_launch_mode(nullptr, nullptr);
  ASSERT_TRUE(mode.is_ok()) << mode.status().message();
  EXPECT_EQ(*mode, 0);
}

TEST(LaunchMode, CodesTriggerAndPrefetch) {
  EXPECT_EQ(*parse_launch_mode("off", "1"), 0);
  EXPECT_EQ(*parse_launch_mode("entry", "1"), 1);
  EXPECT_EQ(*parse_launch_mode("wait", nullptr), 2);
  EXPECT_EQ(*parse_launch_mode("wait", "0"), 2 | 4);
  EXPECT_EQ(*parse_launch_mode(nullptr, "0"), 4);
}

TEST(LaunchMode, RefusesUnknownValuesByName) {
  auto trigger = parse_launch_mode("early", nullptr);
  ASSERT_FALSE(trigger.is_ok());
  EXPECT_NE(trigger.status().message().find("DSV41_PDL_TRIGGER=early"), std::string::npos) << trigger.status().message();
  auto prefetch = parse_launch_mode(nullptr, "yes");
  ASSERT_FALSE(prefetch.is_ok());
  EXPECT_NE(prefetch.status().message().find("DSV41_PDL_PREFETCH=yes"), std::string::npos) << prefetch.status().message();
}

}  // namespace
}  // namespace dsv41::gpu
