// tests/golden/aot_needs_golden_test.cpp — the variants each world launches are pinned, and world 4
// splits into two rank sets that differ only where the expert width is a constant.
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compiler/kernels/aot_needs.h"
#include "tests/golden/golden_inputs.h"

namespace dsv41 {
namespace {

AotNeeds needs_of(int world) {
  PlanOptions options;
  options.world = world;
  options.target = *find_target("h200");
  auto needs = aot_needs(release_inputs(), options);
  EXPECT_TRUE(needs.is_ok()) << needs.status().message();
  return needs.is_ok() ? std::move(needs).value() : AotNeeds{};
}

std::set<std::string> keys_of(const RankNeeds& r) {
  std::set<std::string> keys;
  for (const VariantNeed& v : r.variants) keys.insert(v.key);
  return keys;
}

TEST(AotNeedsGolden, WorldsOneToFourNeedWhatTheGoldenPins) {
  for (int world = 1; world <= 4; ++world) {
    const std::string path = fmt::format("{}/fixtures/golden/aot-needs-release-w{}.json", DSV41_SOURCE_DIR, world);
    const std::string golden = golden_body(read_text(path));
    ASSERT_FALSE(golden.empty()) << path << " missing; run tools/regen_goldens.sh";
    const std::string actual = aot_needs_json(needs_of(world));
    if (actual == golden) continue;
    // Name the keys that moved, not just "differs".
    const auto g = nlohmann::json::parse(golden)["union"], a = nlohmann::json::parse(actual)["union"];
    const std::set<std::string> gs(g.begin(), g.end()), as(a.begin(), a.end());
    std::string moved;
    for (const auto& k : gs) if (!as.count(k)) moved += "  no longer needed: " + k + "\n";
    for (const auto& k : as) if (!gs.count(k)) moved += "  newly needed: " + k + "\n";
    ADD_FAILURE() << path << ": differs (if intended, run tools/regen_goldens.sh)\n"
                  << (moved.empty() ? "  same union; launch counts or per-rank sets changed\n" : moved);
  }
}

TEST(AotNeedsGolden, WorldFourRanksPairUpAndDifferOnlyInExpertWidth) {
  const AotNeeds needs = needs_of(4);
  ASSERT_EQ(needs.ranks.size(), 4u);
  const auto r0 = keys_of(needs.ranks[0]), r1 = keys_of(needs.ranks[1]), r2 = keys_of(needs.ranks[2]),
             r3 = keys_of(needs.ranks[3]);
  EXPECT_EQ(r0, r1);
  EXPECT_EQ(r2, r3);
  EXPECT_NE(r0, r2);
  // Every variant one set has and the other lacks carries the expert width (640 on ranks 0-1, 512 on 2-3).
  for (const auto& [mine, other, width] : {std::tuple{&r0, &r2, "width=640"}, std::tuple{&r2, &r0, "width=512"}})
    for (const std::string& key : *mine) {
      if (!other->count(key)) {
        EXPECT_NE(key.find(width), std::string::npos) << key;
      }
    }
}

TEST(AotNeedsGolden, JsonHasTheDocumentedShape) {
  const auto json = nlohmann::json::parse(aot_needs_json(needs_of(2)));
  ASSERT_EQ(json["ranks"].size(), 2u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(json["ranks"][r]["rank"], r);
    const auto& keys = json["ranks"][r]["variants"];
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
    EXPECT_EQ(keys.size(), json["ranks"][r]["launches"].size());
  }
  const auto& all = json["union"];
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  for (const auto& key : all) EXPECT_NE(key.get<std::string>().find("@sm_90a"), std::string::npos) << key;
}

}  // namespace
}  // namespace dsv41
