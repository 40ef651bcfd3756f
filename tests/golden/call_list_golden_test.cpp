// tests/golden/call_list_golden_test.cpp — the readable golden: every call the tiny fixture emits at world 2
// (op, constants, arguments by role, launch shape), diffed line by line against fixtures/golden/calls-tiny-w2.txt.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/program_file.h"
#include "compiler/program/fingerprints.h"
#include "compiler/program/rank_planner.h"
#include "tests/golden/golden_inputs.h"

namespace dsv41 {
namespace {

// Tiny world 2, rank `rank`, with the settings tools/regen_goldens.sh passes.
RankLists plan_tiny(int rank) {
  PlanOptions options;
  options.world = 2;
  options.target = *find_target("none");
  options.settings.decode_rows = {1};
  options.settings.prefill_rows = {16};
  return plan_rank_lists(tiny_inputs(), options, rank);
}

std::string text_of(const std::vector<RankLists>& ranks) {
  std::string text;
  for (size_t rank = 0; rank < ranks.size(); ++rank)
    text += "rank " + std::to_string(rank) + "\n" + call_list_text(ranks[rank].lists, ranks[rank].file.program());
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines that differ, golden then actual, numbered from the body's first line (at most `most`).
std::string line_diff(const std::string& golden, const std::string& actual, size_t most = 12) {
  const std::vector<std::string> g = lines_of(golden), a = lines_of(actual);
  std::string out;
  size_t shown = 0;
  for (size_t i = 0; i < std::max(g.size(), a.size()) && shown < most; ++i) {
    const std::string* gl = i < g.size() ? &g[i] : nullptr;
    const std::string* al = i < a.size() ? &a[i] : nullptr;
    if (gl && al && *gl == *al) continue;
    out += "line " + std::to_string(i + 1) + "\n  golden: " + (gl ? *gl : "(none)") +
           "\n  now:    " + (al ? *al : "(none)") + "\n";
    ++shown;
  }
  return out;
}

TEST(CallListGolden, TinyWorldTwoEmitsWhatTheGoldenShows) {
  const std::string path = std::string(DSV41_SOURCE_DIR) + "/fixtures/golden/calls-tiny-w2.txt";
  const std::string golden = golden_body(read_text(path));
  ASSERT_FALSE(golden.empty()) << path << " missing; run tools/regen_goldens.sh";
  const std::string actual = text_of({plan_tiny(0), plan_tiny(1)});
  EXPECT_TRUE(actual == golden) << path << " differs (if intended, run tools/regen_goldens.sh):\n"
                                << line_diff(golden, actual);
}

// A changed constant on one call shows up as that call's line, naming the constant's new value.
TEST(CallListGolden, AOneConstantChangeShowsAsOneCallLine) {
  std::vector<RankLists> ranks;
  ranks.push_back(plan_tiny(0));
  ranks.push_back(plan_tiny(1));
  const std::string before = text_of(ranks);
  Call* changed = nullptr;
  for (Call& call : ranks[1].lists.phases.front().calls)
    if (!call.constants.empty()) {
      changed = &call;
      break;
    }
  ASSERT_NE(changed, nullptr);
  changed->constants.front().value += 1;
  const std::string diff = line_diff(before, text_of(ranks));
  EXPECT_EQ(std::count(diff.begin(), diff.end(), '\n'), 3) << "one line: " << diff;
  const std::string expected = changed->constants.front().name + "=" + std::to_string(changed->constants.front().value);
  EXPECT_NE(diff.find(expected), std::string::npos) << diff;
}

}  // namespace
}  // namespace dsv41
