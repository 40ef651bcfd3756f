// tests/golden/fingerprint_golden_test.cpp — what every world emits is pinned: diff against the golden fingerprints.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/hashing.h"
#include "common/program_file.h"
#include "compiler/program/fingerprints.h"
#include "compiler/program/rank_planner.h"
#include "tests/golden/golden_inputs.h"

namespace dsv41 {
namespace {

RankLists plan_lists(int world, int rank) {
  PlanOptions options;
  options.world = world;
  options.target = *find_target("none");
  return plan_rank_lists(release_inputs(), options, rank);
}

std::string fingerprint_lines(int world, int rank, const RankLists& r) {
  std::string text;
  for (const PhaseFingerprint& f : phase_fingerprints(r.lists, r.file.program()))
    text += "w" + std::to_string(world) + " rank" + std::to_string(rank) + " " + f.phase + " " + hex64(f.hash) + "\n";
  return text;
}

std::string join(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += "  " + line + "\n";
  return text;
}

TEST(FingerprintGolden, WorldsOneToFourEmitWhatTheGoldenPins) {
  const std::string golden = read_text(std::string(DSV41_SOURCE_DIR) + "/fixtures/golden/fingerprints-release.txt");
  ASSERT_FALSE(golden.empty()) << "fixtures/golden/fingerprints-release.txt missing; run tools/regen_goldens.sh";
  std::string actual;
  for (int world = 1; world <= 4; ++world)
    for (int rank = 0; rank < world; ++rank) actual += fingerprint_lines(world, rank, plan_lists(world, rank));
  const auto changes = fingerprint_diff(golden, actual);
  EXPECT_TRUE(changes.empty()) << "phases whose calls changed (if intended, run tools/regen_goldens.sh):\n"
                               << join(changes);
}

// A one-line change to one call world 2 emits must fail the golden diff and name its phase.
TEST(FingerprintGolden, AOneCallChangeAtWorldTwoIsCaughtAndNamed) {
  RankLists r = plan_lists(2, 1);
  const std::string before = fingerprint_lines(2, 1, r);
  Phase& phase = r.lists.phases.front();
  for (Call& call : phase.calls)
    if (call.op == "sparse_attention") {
      for (Arg& arg : call.args)
        if (arg.name == "scale") arg.real *= 1.0001;  // a slightly wrong softmax scale
      break;
    }
  const std::string after = fingerprint_lines(2, 1, r);
  const auto changes = fingerprint_diff(before, after);
  ASSERT_EQ(changes.size(), 1u) << join(changes);
  EXPECT_NE(changes[0].find("w2 rank1 " + phase.name + ": changed"), std::string::npos) << changes[0];
}

TEST(FingerprintGolden, DiffReportsVanishedAndNewPhases) {
  const auto changes = fingerprint_diff("# header\nw1 rank0 decode.r1 aa\nw1 rank0 decode.r2 bb\n",
                                        "w1 rank0 decode.r1 aa\nw1 rank0 decode.r32 cc\n");
  ASSERT_EQ(changes.size(), 2u) << join(changes);
  EXPECT_NE(changes[0].find("decode.r2: in the golden, no longer emitted"), std::string::npos);
  EXPECT_NE(changes[1].find("decode.r32: emitted, not in the golden"), std::string::npos);
}

}  // namespace
}  // namespace dsv41
