// tests/common/rank_share_test.cpp — largest-remainder shares: release worlds 1-8, the refusal at 9, uneven tiny splits.
#include "common/rank_share.h"

#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace dsv41 {
namespace {

std::vector<RankShare> shares_of(const ModelConfig& config, int world) {
  std::vector<RankShare> shares;
  for (int rank = 0; rank < world; ++rank) {
    auto share = plan_share(config, world, rank);
    EXPECT_TRUE(share.is_ok()) << "world " << world << " rank " << rank << ": " << share.status().message();
    shares.push_back(share.is_ok() ? *share : RankShare{});
  }
  return shares;
}

std::vector<int64_t> sizes(const std::vector<RankShare>& shares, Span RankShare::*axis) {
  std::vector<int64_t> out;
  for (const auto& s : shares) out.push_back((s.*axis).size());
  return out;
}

TEST(SplitEvenly, EightGroupsOverThreeRanksGiveThreeThreeTwo) {
  EXPECT_EQ(split_evenly(8, 3, 0), (Span{0, 3}));
  EXPECT_EQ(split_evenly(8, 3, 1), (Span{3, 6}));
  EXPECT_EQ(split_evenly(8, 3, 2), (Span{6, 8}));
}

// Every (units, world): contiguous spans tiling [0, units), sizes within one of each other, the
// larger ones on the lower ranks.
TEST(SplitEvenly, TilesTheUnitsWithLargerSharesOnLowerRanks) {
  for (int64_t units = 1; units <= 130; ++units)
    for (int world = 1; world <= 9 && world <= units; ++world) {
      int64_t cursor = 0, previous = units + 1;
      for (int rank = 0; rank < world; ++rank) {
        const Span s = split_evenly(units, world, rank);
        ASSERT_EQ(s.begin, cursor) << "units " << units << " world " << world << " rank " << rank;
        ASSERT_GE(s.size(), units / world) << "units " << units << " world " << world << " rank " << rank;
        ASSERT_LE(s.size(), units / world + 1) << "units " << units << " world " << world << " rank " << rank;
        ASSERT_LE(s.size(), previous) << "units " << units << " world " << world << " rank " << rank;
        previous = s.size();
        cursor = s.end;
      }
      ASSERT_EQ(cursor, units) << "units " << units << " world " << world;
    }
}

TEST(RankShare, ReleaseWorld3SplitsGroupsAndHeadsUnevenly) {
  const auto shares = shares_of(test::fixture_config("dsv41-release"), 3);
  EXPECT_EQ(sizes(shares, &RankShare::groups), (std::vector<int64_t>{3, 3, 2}));
  EXPECT_EQ(sizes(shares, &RankShare::heads), (std::vector<int64_t>{24, 24, 16}));
  EXPECT_EQ(shares[2].heads, (Span{48, 64}));
}

TEST(RankShare, ReleaseWorld4SplitsExpertsAndVocabularyInWholeBlocks) {
  const auto shares = shares_of(test::fixture_config("dsv41-release"), 4);
  EXPECT_EQ(sizes(shares, &RankShare::expert_cols), (std::vector<int64_t>{640, 640, 512, 512}));
  EXPECT_EQ(sizes(shares, &RankShare::vocab_rows), (std::vector<int64_t>{32384, 32384, 32256, 32256}));
  EXPECT_EQ(sizes(shares, &RankShare::groups), (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(shares[1].expert_cols, (Span{640, 1280}));
  EXPECT_EQ(shares[3].vocab_rows, (Span{97024, 129280}));
}

TEST(RankShare, ReleaseWorld2IsExactHalves) {
  const auto shares = shares_of(test::fixture_config("dsv41-release"), 2);
  EXPECT_EQ(shares[0].groups, (Span{0, 4}));
  EXPECT_EQ(shares[1].heads, (Span{32, 64}));
  EXPECT_EQ(shares[0].expert_cols, (Span{0, 1152}));
  EXPECT_EQ(shares[1].expert_cols, (Span{1152, 2304}));
  EXPECT_EQ(shares[0].vocab_rows, (Span{0, 64640}));
  EXPECT_EQ(shares[1].vocab_rows, (Span{64640, 129280}));
}

// Worlds 1-8 of the release: every axis tiled by the ranks, nobody empty, blocks whole.
TEST(RankShare, ReleaseWorlds1To8TileEveryAxis) {
  const ModelConfig config = test::fixture_config("dsv41-release");
  EXPECT_EQ(max_world(config), 8);
  for (int world = 1; world <= 8; ++world) {
    SCOPED_TRACE("world " + std::to_string(world));
    ASSERT_TRUE(check_world(config, world).is_ok());
    const auto shares = shares_of(config, world);
    const std::vector<std::pair<Span RankShare::*, int64_t>> axes = {
        {&RankShare::groups, config.o_groups},
        {&RankShare::heads, config.num_attention_heads},
        {&RankShare::expert_cols, config.moe_intermediate_size},
        {&RankShare::vocab_rows, config.vocab_size}};
    for (const auto& [axis, total] : axes) {
      int64_t cursor = 0;
      for (const RankShare& s : shares) {
        EXPECT_EQ((s.*axis).begin, cursor);
        EXPECT_GT((s.*axis).size(), 0);
        cursor = (s.*axis).end;
      }
      EXPECT_EQ(cursor, total);
    }
    for (const RankShare& s : shares) {
      EXPECT_EQ(s.world, world);
      EXPECT_EQ(s.heads.begin, s.groups.begin * config.heads_per_group);
      EXPECT_EQ(s.heads.end, s.groups.end * config.heads_per_group);
      EXPECT_EQ(s.expert_cols.begin % kColumnBlock, 0);
      EXPECT_EQ(s.vocab_rows.begin % kColumnBlock, 0);
    }
  }
}

TEST(RankShare, ReleaseWorld9IsRefusedNamingOGroups) {
  const ModelConfig config = test::fixture_config("dsv41-release");
  const Status s = check_world(config, 9);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "world 9: more ranks than o_groups 8; every rank needs at least one output group");
  auto share = plan_share(config, 9, 0);
  ASSERT_FALSE(share.is_ok());
  EXPECT_EQ(share.status().message(), s.message());
}

TEST(RankShare, WorldAndRankOutOfRangeAreRefused) {
  const ModelConfig config = test::fixture_config("dsv41-release");
  auto zero = plan_share(config, 0, 0);
  ASSERT_FALSE(zero.is_ok());
  EXPECT_EQ(zero.status().message(), "world 0: must be at least 1");
  auto high = plan_share(config, 4, 4);
  ASSERT_FALSE(high.is_ok());
  EXPECT_EQ(high.status().message(), "rank 4: outside 0..3 of world 4");
  auto negative = plan_share(config, 4, -1);
  ASSERT_FALSE(negative.is_ok());
  EXPECT_EQ(negative.status().message(), "rank -1: outside 0..3 of world 4");
}

// dsv41-tiny: 8 groups of 2 heads, 5 expert blocks, 10 vocabulary blocks, so world 5 is its limit.
TEST(RankShare, TinyWorlds3And4AreUnevenAndWorld6IsRefusedByExpertBlocks) {
  const ModelConfig config = test::fixture_config("dsv41-tiny");
  EXPECT_EQ(max_world(config), 5);
  const auto three = shares_of(config, 3);
  EXPECT_EQ(sizes(three, &RankShare::heads), (std::vector<int64_t>{6, 6, 4}));
  EXPECT_EQ(sizes(three, &RankShare::expert_cols), (std::vector<int64_t>{256, 256, 128}));
  EXPECT_EQ(sizes(three, &RankShare::vocab_rows), (std::vector<int64_t>{512, 384, 384}));
  const auto four = shares_of(config, 4);
  EXPECT_EQ(sizes(four, &RankShare::expert_cols), (std::vector<int64_t>{256, 128, 128, 128}));
  EXPECT_EQ(sizes(four, &RankShare::vocab_rows), (std::vector<int64_t>{384, 384, 256, 256}));
  const Status s = check_world(config, 6);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "world 6: more ranks than the 5 expert blocks of 128 columns (moe_intermediate_size 640)");
}

TEST(RankShare, VocabularyBlocksBoundTheWorld) {
  ModelConfig config = test::fixture_config("dsv41-tiny");
  config.vocab_size = 512;
  config.vocab_blocks = 4;
  const Status s = check_world(config, 5);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "world 5: more ranks than the 4 vocabulary blocks of 128 rows (vocab_size 512)");
  EXPECT_EQ(max_world(config), 4);
}

}  // namespace
}  // namespace dsv41
