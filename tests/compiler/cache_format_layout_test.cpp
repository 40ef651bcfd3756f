// tests/compiler/cache_format_layout_test.cpp — the state layout and the ledger per cache format: packed
// row sizes, the release's memory per slot at 65,536 in both formats, the flag through dsv41c.
#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compiler/plan/serving_settings.h"
#include "compiler/plan/state_layout.h"
#include "tests/support/test_support.h"

namespace dsv41 {
namespace {

const BufferDecl& buffer(const StateLayout& layout, const std::string& name) {
  const int i = layout.index_of(name);
  EXPECT_GE(i, 0) << name;
  return layout.buffers.at(static_cast<size_t>(std::max(i, 0)));
}

// Each cache of the official format is a U8 buffer of whole packed rows: a window row 512 e4m3 codes
// + 16 UE8M0 scales, a compressed row 256 bytes of e2m1 + 32 E4M3 scales, an index key 64 bytes of
// e2m1 + 4 UE8M0 scales; tails and the Engram lookback keep their types.
TEST(CacheFormatLayout, ReleaseCachesArePackedRowsOfTheirRole) {
  const ModelConfig c = test::fixture_config("dsv41-release");
  const StateLayout bf16 = plan_state_layout(c, 65536);
  const StateLayout official = plan_state_layout(c, 65536, DType::BF16, 0, CacheFormat::Official);
  ASSERT_EQ(bf16.buffers.size(), official.buffers.size());
  EXPECT_EQ(buffer(official, "L0.ring").dtype, DType::U8);
  EXPECT_EQ(buffer(official, "L0.ring").shape, (std::vector<int64_t>{128, 528}));
  EXPECT_EQ(buffer(official, "L2.cache").shape, (std::vector<int64_t>{32768, 288}));
  EXPECT_EQ(buffer(official, "L2.index_cache").shape, (std::vector<int64_t>{32768, 68}));
  EXPECT_EQ(buffer(official, "L20.cache").shape, (std::vector<int64_t>{65536, 288}));
  EXPECT_EQ(buffer(official, "L20.index_cache").shape, (std::vector<int64_t>{65536, 68}));
  EXPECT_EQ(buffer(official, "L2.tail").dtype, DType::F32);
  EXPECT_EQ(buffer(official, "L2.tail").shape, buffer(bf16, "L2.tail").shape);
  EXPECT_EQ(buffer(bf16, "L0.ring").shape, (std::vector<int64_t>{128, 512}));
  EXPECT_EQ(buffer(bf16, "L0.ring").dtype, DType::BF16);
}

// docs/model.md "Cache formats": 40 rings, sources 2, 8, 14 (32,768 entries) and 20 (65,536), three
// compressor tails, the Engram lookback; every buffer 256-aligned.
TEST(CacheFormatLayout, ReleaseStatePerSlotAtContext65536) {
  const ModelConfig c = test::fixture_config("dsv41-release");
  const uint64_t rings = 40ull * 128, tails = 3ull * 2 * 2 * 512 * 4, lookback = 128 * 4;
  const uint64_t entries = 3ull * 32768 + 65536;
  const uint64_t bf16 = rings * 512 * 2 + entries * (512 + 128) * 2 + tails + lookback;
  const uint64_t official = rings * 528 + entries * (288 + 68) + tails + lookback;
  EXPECT_EQ(plan_state_layout(c, 65536).bytes_per_slot, bf16);
  EXPECT_EQ(plan_state_layout(c, 65536, DType::BF16, 0, CacheFormat::Official).bytes_per_slot, official);
  EXPECT_EQ(bf16, 214'983'168ull);  // 205.0 MiB
  EXPECT_EQ(official, 61'055'488ull);  // 58.2 MiB
}

TEST(CacheFormatLayout, OfficialNeedsWholeScaleGroups) {
  ModelConfig c = test::fixture_config("dsv41-tiny");
  ServingSettings s;
  s.context = 64;
  s.cache_format = CacheFormat::Official;
  EXPECT_TRUE(check_settings(c, s).is_ok()) << check_settings(c, s).message();
  c.index_head_dim = 48;
  const Status refused = check_settings(c, s);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("index_head_dim 48"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("cache_format = official"), std::string::npos) << refused.message();
}

// The flag reaches the program: inspect shows the format and the smaller state.
TEST(CacheFormatLayout, DsvcPlanWithOfficialCachesShowsItInInspect) {
  test::TempDir dir;
  test::make_pack(dir.path() / "pack", "dsv41-tiny", "bf16", 1);
  uint64_t state[2] = {0, 0};
  int i = 0;
  for (const char* format : {"bf16", "official"}) {
    const auto out = dir.path() / format;
    const auto plan = test::run_dsv41c({"plan", (dir.path() / "pack").string(), "--world", "2", "--rank", "0",
                                        "--target", "none", "--context", "256", "--cache-format", format, "--out",
                                        out.string()});
    ASSERT_EQ(plan.exit_code, 0) << plan.describe();
    const auto inspect = test::run_dsv41c({"inspect", (out / "rank0.fb").string(), "--json"});
    ASSERT_EQ(inspect.exit_code, 0) << inspect.describe();
    const auto j = nlohmann::json::parse(inspect.out);
    EXPECT_EQ(j["settings"]["cache_format"], format);
    state[i++] = j["memory"]["state_per_slot"].get<uint64_t>();
  }
  EXPECT_LT(state[1], state[0] / 2) << "official " << state[1] << " bytes a slot vs bf16 " << state[0];
  const auto refused = test::run_dsv41c({"plan", (dir.path() / "pack").string(), "--world", "1", "--target", "none",
                                         "--cache-format", "fp8", "--out", (dir.path() / "x").string()});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("--cache-format"), std::string::npos) << refused.describe();
}

}  // namespace
}  // namespace dsv41
