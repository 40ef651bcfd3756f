// tests/compiler/weight_plan_test.cpp — every split tensor is read exactly once across the ranks; world 1 reads the whole pack.
#include "compiler/plan/weight_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace dsv41 {
namespace {
using test::TempDir;

struct Pack {
  ModelConfig config;
  PackIndex index;
  PackMatch match;  // the pack checked against the inventory once; each rank slices it
};

Pack open_pack(const TempDir& dir, const std::string& fixture, const std::string& format, int shards) {
  test::make_pack(dir.path(), fixture, format, shards);
  Pack pack{test::fixture_config(fixture), {}, {}};
  auto index = PackIndex::open(dir.path().string());
  if (!index.is_ok()) {
    ADD_FAILURE() << index.status().message();
    return pack;
  }
  pack.index = std::move(index).value();
  auto match = match_pack(pack.config, pack.index);
  if (!match.is_ok()) ADD_FAILURE() << match.status().message();
  else pack.match = std::move(match).value();
  return pack;
}

std::vector<WeightPlan> plan_world(const Pack& pack, int world) {
  std::vector<WeightPlan> plans;
  for (int rank = 0; rank < world; ++rank) {
    auto share = plan_share(pack.config, world, rank);
    EXPECT_TRUE(share.is_ok()) << share.status().message();
    if (!share.is_ok()) return {};
    plans.push_back(slice_weights(pack.match, pack.index, *share));
  }
  return plans;
}

struct Interval {
  uint64_t begin, end;
  int rank;
};

void expand(const ByteRun& run, int rank, std::vector<Interval>& out) {
  for (uint64_t i = 0; i < run.count; ++i) out.push_back({run.offset + i * run.stride, run.offset + i * run.stride + run.length, rank});
}

// Sorted intervals must tile [begin, end) with no gap and no overlap; reports the first fault.
::testing::AssertionResult tiles_exactly(std::vector<Interval> parts, uint64_t begin, uint64_t end) {
  std::sort(parts.begin(), parts.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  uint64_t cursor = begin;
  for (const Interval& part : parts) {
    if (part.begin != cursor)
      return ::testing::AssertionFailure() << "rank " << part.rank << " reads [" << part.begin << ", " << part.end
                                           << ") but the next unread byte is " << cursor
                                           << (part.begin < cursor ? " (overlap)" : " (gap)") << " within [" << begin
                                           << ", " << end << ")";
    cursor = part.end;
  }
  if (cursor != end)
    return ::testing::AssertionFailure() << "reads stop at " << cursor << ", the tensor ends at " << end;
  return ::testing::AssertionSuccess();
}

// Routed experts are many and identical in layout: expand a few per layer, check the rest by totals.
bool expand_fully(const std::string& name, int64_t experts) {
  const auto at = name.find(".ffn.experts.");
  if (at == std::string::npos) return true;
  const int64_t expert = std::stoll(name.substr(at + 13));
  const int64_t layer = name.rfind("layers.", 0) == 0 ? std::stoll(name.substr(7)) : 0;
  return expert == 0 || expert == experts - 1 || expert == (layer * 7) % experts;
}

struct Coverage {
  std::set<SplitRule> rules;
  std::set<Encoding> encodings;
  size_t expanded = 0;
};

// The coverage property for one world: split tensors are tiled exactly once by the ranks' runs,
// replicated tensors are read whole by every rank, and local shapes match the bytes read.
void expect_exact_coverage(const Pack& pack, int world, Coverage& seen) {
  SCOPED_TRACE("world " + std::to_string(world));
  const std::vector<WeightPlan> plans = plan_world(pack, world);
  ASSERT_EQ(plans.size(), static_cast<size_t>(world));
  const size_t count = plans[0].tensors.size();
  for (const WeightPlan& plan : plans) ASSERT_EQ(plan.tensors.size(), count);
  const int64_t experts = pack.config.n_routed_experts;
  for (size_t i = 0; i < count; ++i) {
    const PlannedTensor& first = plans[0].tensors[i];
    const TensorEntry* entry = pack.index.find(first.name);
    ASSERT_NE(entry, nullptr) << first.name;
    const ShardInfo& shard = pack.index.shards()[entry->shard];
    const uint64_t begin = shard.data_start() + entry->data_begin, end = begin + entry->bytes();
    seen.rules.insert(first.rule);
    seen.encodings.insert(first.encoding);
    std::vector<Interval> parts;
    uint64_t total = 0;
    const bool expand_all = expand_fully(first.name, experts);
    for (int rank = 0; rank < world; ++rank) {
      const PlannedTensor& t = plans[rank].tensors[i];
      ASSERT_EQ(t.name, first.name) << "rank " << rank;
      ASSERT_EQ(t.rule, first.rule) << t.name;
      EXPECT_EQ(t.stored_shape, entry->shape) << t.name;
      int64_t local = dtype_bytes(t.dtype);
      for (int64_t d : t.local_shape) local *= d;
      EXPECT_EQ(t.bytes(), static_cast<uint64_t>(local)) << t.name << " rank " << rank << ": runs vs local shape";
      for (const ByteRun& run : t.runs) {
        ASSERT_EQ(run.shard, entry->shard) << t.name;
        ASSERT_GE(run.offset, begin) << t.name << " rank " << rank;
        ASSERT_LE(run.offset + (run.count - 1) * run.stride + run.length, end) << t.name << " rank " << rank;
        ASSERT_TRUE(run.count == 1 || run.stride >= run.length) << t.name;
      }
      total += t.bytes();
      if (first.rule == SplitRule::Replicated) {
        std::vector<Interval> whole;
        for (const ByteRun& run : t.runs) expand(run, rank, whole);
        EXPECT_TRUE(tiles_exactly(whole, begin, end)) << t.name << " (replicated) rank " << rank;
      } else if (expand_all) {
        for (const ByteRun& run : t.runs) expand(run, rank, parts);
      }
    }
    if (first.rule == SplitRule::Replicated) continue;
    EXPECT_EQ(total, entry->bytes()) << first.name << ": bytes read by all ranks vs the tensor's bytes";
    if (!expand_all) continue;
    ++seen.expanded;
    EXPECT_TRUE(tiles_exactly(std::move(parts), begin, end)) << first.name << " (" << split_rule_name(first.rule) << ", "
                                                            << encoding_name(first.encoding) << ")";
  }
}

const std::set<SplitRule> kAllRules = {SplitRule::Replicated, SplitRule::OutputRows, SplitRule::InputCols,
                                       SplitRule::GroupPart, SplitRule::HeadSlice};

// One world per test, so ctest spreads the release worlds over cores. Together they see every rule
// and every release encoding.
class ReleaseCoverage : public ::testing::TestWithParam<int> {};

TEST_P(ReleaseCoverage, SplitTensorsAreReadExactlyOnceByTheRanks) {
  TempDir dir;
  const Pack pack = open_pack(dir, "dsv41-release", "release", 8);
  Coverage seen;
  expect_exact_coverage(pack, GetParam(), seen);
  EXPECT_EQ(seen.rules, kAllRules);
  EXPECT_EQ(seen.encodings,
            (std::set<Encoding>{Encoding::Plain, Encoding::FP8Block, Encoding::FP4Rows, Encoding::FP8Rows}));
  EXPECT_GT(seen.expanded, 1000u);
}

INSTANTIATE_TEST_SUITE_P(Worlds, ReleaseCoverage, ::testing::Values(2, 3, 4, 8),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

TEST(WeightPlanCoverage, TinyPacksSplitTensorsAreReadExactlyOnceAtEveryWorld) {
  for (const char* format : {"bf16", "release"}) {
    SCOPED_TRACE(format);
    TempDir dir(format);
    const Pack pack = open_pack(dir, "dsv41-tiny", format, 3);
    Coverage seen;
    for (int world = 1; world <= max_world(pack.config); ++world) expect_exact_coverage(pack, world, seen);
    EXPECT_EQ(seen.rules, kAllRules);
    const Encoding linear = std::string(format) == "bf16" ? Encoding::BF16 : Encoding::FP8Block;
    EXPECT_TRUE(seen.encodings.count(linear)) << "linear encoding " << encoding_name(linear);
  }
}

// World 1 holds the whole model: the runs tile every shard's data section and nothing is skipped.
void expect_world1_reads_everything(const Pack& pack) {
  auto share = plan_share(pack.config, 1, 0);
  ASSERT_TRUE(share.is_ok()) << share.status().message();
  auto plan = plan_weights(pack.config, pack.index, *share);  // match and slice in one call
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  EXPECT_EQ(plan->total_bytes(), pack.index.total_data_bytes());
  EXPECT_EQ(slice_weights(pack.match, pack.index, *share).total_bytes(), plan->total_bytes());
  EXPECT_EQ(plan->ignored_tensors, 0u);
  EXPECT_EQ(plan->tensors.size(), pack.index.tensors().size());
  std::map<int, std::vector<Interval>> by_shard;
  for (const PlannedTensor& t : plan->tensors)
    for (const ByteRun& run : t.runs) {
      EXPECT_EQ(run.count, 1u) << t.name << ": world 1 reads whole tensors";
      expand(run, 0, by_shard[run.shard]);
    }
  for (size_t s = 0; s < pack.index.shards().size(); ++s) {
    const ShardInfo& shard = pack.index.shards()[s];
    EXPECT_TRUE(tiles_exactly(by_shard[static_cast<int>(s)], shard.data_start(), shard.expected_file_size()))
        << shard.file_name;
  }
}

TEST(WeightPlanWorld1, ReadsEveryByteOfTheReleasePack) {
  TempDir dir;
  expect_world1_reads_everything(open_pack(dir, "dsv41-release", "release", 8));
}

TEST(WeightPlanWorld1, ReadsEveryByteOfTheTinyPacks) {
  for (const char* format : {"bf16", "release"}) {
    TempDir dir(format);
    SCOPED_TRACE(format);
    expect_world1_reads_everything(open_pack(dir, "dsv41-tiny", format, 2));
  }
}

}  // namespace
}  // namespace dsv41
