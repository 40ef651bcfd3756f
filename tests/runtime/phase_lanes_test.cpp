// tests/runtime/phase_lanes_test.cpp — the two-lane graph plan: every call that must follow another is ordered
// after it (by its lane's stream or a wait), and a layer's independent calls do take the side lane.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "common/call_access.h"
#include "common/op_set.h"
#include "common/program_calls.h"
#include "compiler/synth/synth_pack.h"
#include "runtime/gpu/phase_lanes.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41 {
namespace {

using gpu::LaneCall;
using gpu::LanePlan;

// The calls of the tiny model's program at world `world`, rank 0 (headers-only pack: planning reads headers).
CallLists tiny_call_lists(int world) {
  test::TempDir pack;
  SynthPackOptions options;
  options.out_dir = pack.path().string();
  options.format = SynthFormat::Release;
  options.headers_only = true;
  const Status written = write_synth_pack(test::fixture_config("dsv41-tiny"),
                                          test::read_file(test::fixture_config_path("dsv41-tiny")), options);
  if (!written.is_ok()) ADD_FAILURE() << written.message();
  std::vector<ProgramFile> programs = test::plan_programs(pack.path(), world, test::small_settings());
  if (programs.empty()) return {};
  return read_call_lists(programs.at(0).program()).value();
}

// For each call, the highest call index of each lane known finished before it starts (lanes are
// streams: a lane's earlier calls are finished too), from the plan's lanes and waits.
std::vector<std::array<long, 2>> finished_before(const LanePlan& plan) {
  const size_t n = plan.lane.size();
  std::vector<std::array<long, 2>> before(n, {-1, -1}), after(n, {-1, -1});
  std::array<std::array<long, 2>, 2> lane_tail = {{{-1, -1}, {-1, -1}}};
  for (size_t i = 0; i < n; ++i) {
    const int l = plan.lane[i];
    if (l < 0) continue;
    std::array<long, 2> c = lane_tail[l];
    if (const long w = plan.wait_for[i]; w >= 0)
      for (int k = 0; k < 2; ++k) c[k] = std::max(c[k], after[w][k]);
    before[i] = c;
    c[l] = static_cast<long>(i);
    after[i] = lane_tail[l] = c;
  }
  return before;
}

// Checks the plan of `calls`: every pair that must follow is ordered; returns the calls on the side lane.
int check_plan(const Phase& phase, const std::vector<LaneCall>& calls, const LanePlan& plan) {
  const auto before = finished_before(plan);
  int side = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (plan.lane[i] < 0) continue;
    side += plan.lane[i] == 1;
    const std::vector<BufferUse> ui = call_uses(phase, *calls[i].call);
    for (size_t j = 0; j < i; ++j) {
      if (plan.lane[j] < 0) continue;
      const bool follows = calls[i].barrier || calls[j].barrier ||
                           must_follow(*calls[j].call, call_uses(phase, *calls[j].call), *calls[i].call, ui);
      if (follows)
        EXPECT_LE(static_cast<long>(j), before[i][plan.lane[j]])
            << phase.name << ": call #" << i << " (" << calls[i].call->op << ") may start before call #" << j << " ("
            << calls[j].call->op << ") that it must follow";
    }
  }
  return side;
}

std::vector<LaneCall> lane_calls(const Phase& phase) {
  std::vector<LaneCall> calls;
  for (const Call& c : phase.calls) calls.push_back({&c, true, false});
  return calls;
}

// The phase with a kernel variant a call as a GPU plan binds them (one per op here; the tests plan with
// --target none, which binds none), so that the same-variant rule takes part in the plans checked.
Phase with_variants(Phase phase) {
  std::vector<std::string> ops;
  for (Call& c : phase.calls) {
    auto it = std::find(ops.begin(), ops.end(), c.op);
    if (it == ops.end()) it = ops.insert(ops.end(), c.op);
    c.launch.variant = static_cast<int32_t>(it - ops.begin());
  }
  return phase;
}

TEST(PhaseLanes, EveryCallThatMustFollowAnotherIsOrderedAfterIt) {
  const CallLists lists = tiny_call_lists(1);
  ASSERT_FALSE(lists.phases.empty());
  for (const Phase& unbound : lists.phases) {
    const Phase phase = with_variants(unbound);
    const std::vector<LaneCall> calls = lane_calls(phase);
    const LanePlan plan = gpu::plan_lanes(phase, calls);
    const int side = check_plan(phase, calls, plan);
    // Each sublayer's hc_mix need not follow the calls after its collapse, nor a layer's kv projection its
    // query's norm: one side-lane call a sublayer at least.
    EXPECT_GE(side, 2 * 2) << phase.name;
  }
}

TEST(PhaseLanes, ABarrierWaitsForEverythingBeforeItAndEverythingAfterWaitsForIt) {
  const CallLists lists = tiny_call_lists(2);  // world 2: its exchanges, enqueued in the graph under NCCL
  ASSERT_FALSE(lists.phases.empty());
  const Phase& phase = lists.phases.front();
  std::vector<LaneCall> calls = lane_calls(phase);
  int barriers = 0;
  for (LaneCall& c : calls)
    if (c.call->op == "exchange_sum" || c.call->op == "exchange_gather") c.barrier = true, ++barriers;
  ASSERT_GT(barriers, 0);
  calls[calls.size() / 3].launches = false;  // a call that launches nothing takes no lane
  const LanePlan plan = gpu::plan_lanes(phase, calls);
  EXPECT_EQ(plan.lane[calls.size() / 3], calls[calls.size() / 3].barrier ? 0 : -1);
  EXPECT_GT(check_plan(phase, calls, plan), 0);
}

TEST(CallAccess, CallsOfOneVariantOrOnSharedBytesAreOrdered) {
  Phase phase;  // bytes a [0, 16), b [16, 32), c [32, 48), and d [24, 40), which overlaps b and c
  phase.buffers = {{"a", DType::F32, {4}, 0, 16}, {"b", DType::F32, {4}, 16, 16}, {"c", DType::F32, {4}, 32, 16},
                   {"d", DType::F32, {4}, 24, 16}};
  enum { A, B, C, D };
  auto linear = [](int64_t x, int64_t out, int32_t variant) {
    Call c;
    c.op = "linear";
    c.args = {{"x", ArgKind::Scratch, {x}}, {"out", ArgKind::Scratch, {out}}};
    c.launch.variant = variant;
    return c;
  };
  auto follows = [&](const Call& earlier, const Call& later) {
    return must_follow(earlier, call_uses(phase, earlier), later, call_uses(phase, later));
  };
  EXPECT_FALSE(follows(linear(A, B, 0), linear(A, C, 1)));  // both read a, write apart: side by side
  EXPECT_TRUE(follows(linear(A, B, 0), linear(A, C, 0)));   // the same variant: its module's tables
  EXPECT_TRUE(follows(linear(A, B, 0), linear(B, C, 1)));   // reads what the earlier wrote
  EXPECT_TRUE(follows(linear(A, B, 0), linear(C, A, 1)));   // writes what the earlier read
  EXPECT_TRUE(follows(linear(A, B, 0), linear(C, D, 1)));   // writes bytes the earlier wrote
  EXPECT_FALSE(follows(linear(A, B, -1), linear(A, C, -1)));  // unbound (--target none): no variant to share
}

TEST(CallAccess, NoOpOutputIsListedAsReadOnly) {
  for (const OpSpec& spec : op_specs())
    for (const char* output : {"out", "normed", "ids", "weights", "work", "candidates", "picks"})
      if (spec.name != "moe_experts" || (std::string_view(output) != "ids" && std::string_view(output) != "weights"))
        EXPECT_FALSE(reads_only(spec.name, output)) << spec.name << "." << output;
  EXPECT_TRUE(reads_only("linear", "x"));
  EXPECT_FALSE(reads_only("exchange_sum", "x"));  // out may be x: written
}

}  // namespace
}  // namespace dsv41
