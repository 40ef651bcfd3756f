// tests/dist/leader_rounds_test.cpp — rounds as RoundPlan frames: rank 0's LeaderRounds and a follower over loopback run the same resets and phases, rank 0's logits come back, and a follower refuses what is not a round.
#include "runtime/dist/leader_rounds.h"

#include <future>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace dsv41::dist {
namespace {

// Records every reset and run; its logits are rank * 1000 + run count * 10 + row (vocab 3).
class FakeSession final : public RankSession {
 public:
  explicit FakeSession(int rank) : rank_(rank) {
    for (const char* name : {"decode.r1", "prefill.n4"}) phases_.push_back(Phase{name, PhaseKind::Decode, 1, {}, 0, {}});
  }
  int rank() const override { return rank_; }
  const std::vector<Phase>& phases() const override { return phases_; }
  const Phase* find_phase(const std::string& name) const override {
    for (const Phase& p : phases_)
      if (p.name == name) return &p;
    return nullptr;
  }
  Status run(const Phase& phase, const std::vector<int32_t>& statics) override {
    log.push_back(fmt::format("run {} {}", phase.name, fmt::join(statics, ",")));
    return Status::ok();
  }
  Status read_logits(const Phase&, int64_t first_row, int64_t rows, float* out) override {
    for (int64_t i = 0; i < rows * 3; ++i) out[i] = static_cast<float>(rank_ * 1000 + log.size() * 10 + first_row);
    return Status::ok();
  }
  void reset_slot(int slot) override { log.push_back(fmt::format("reset {}", slot)); }
  std::vector<std::string> log;

 private:
  int rank_;
  std::vector<Phase> phases_;
};

RankFacts facts(int rank) {
  RankFacts f;
  f.rank = rank;
  f.world = 2;
  f.arch = "cpu";
  f.build = build_version();
  return f;
}

// Rank 0 and rank 1 joined over loopback.
std::pair<std::unique_ptr<Control>, std::unique_ptr<Control>> pair_of_ranks() {
  auto port = pick_free_port();
  EXPECT_TRUE(port.is_ok()) << port.status().message();
  auto join = [&](int rank) {
    ControlOptions o;
    o.rank = rank;
    o.world = 2;
    o.master = HostPort{"127.0.0.1", port.value()};
    o.connect_timeout_ms = 5000;
    return Control::join(o, facts(rank));
  };
  auto follower = std::async(std::launch::async, join, 1);
  auto leader = join(0);
  auto joined = follower.get();
  EXPECT_TRUE(leader.is_ok() && joined.is_ok());
  return {std::move(leader).value(), std::move(joined).value()};
}

WorldFacts two_slots() {
  WorldFacts f;
  f.world = 2;
  f.slots = 2;
  f.vocab = 3;
  return f;
}

TEST(LeaderRounds, TheFollowerRunsEveryRoundAsRankZeroDoesAndRankZeroGetsItsLogits) {
  auto ranks = pair_of_ranks();
  std::unique_ptr<Control>& leader = ranks.first;
  FakeSession zero(0), one(1);
  // The follower closes its connection when it is done, as a process would by exiting; rank 0's stop waits for that.
  auto followed = std::async(std::launch::async, [&] {
    const Status s = follow_rounds(*ranks.second, one, 2, {});
    ranks.second.reset();
    return s;
  });
  int announced = 0;
  LeaderRounds rounds(*leader, zero, two_slots(), {}, [&](const RoundPlan&) { ++announced; });
  RoundPlan first;
  first.round = 0;
  first.reset_slots = {1};
  first.runs.push_back({"prefill.n4", {7, 1, 0, 0, 8, 1, 1, 0}, {1}});
  RoundPlan second;
  second.round = 1;
  second.runs.push_back({"decode.r1", {9, 1, 2, 0}, {0}});
  auto a = rounds.run(first);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  auto b = rounds.run(second);
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  ASSERT_TRUE(leader->stop().is_ok());
  const Status status = followed.get();
  EXPECT_TRUE(status.is_ok()) << status.message();
  const std::vector<std::string> want = {"reset 1", "run prefill.n4 7,1,0,0,8,1,1,0", "run decode.r1 9,1,2,0"};
  EXPECT_EQ(zero.log, want);
  EXPECT_EQ(one.log, want);
  EXPECT_EQ(announced, 2);
  ASSERT_EQ(a->size(), 1u);
  EXPECT_EQ((*a)[0], std::vector<float>(3, 21.0f)) << "rank 0's logits of row 1 after two log entries";
  ASSERT_EQ(b->size(), 1u);
  EXPECT_EQ((*b)[0][0], 30.0f);
  EXPECT_TRUE(rounds.failure().empty());
}

TEST(LeaderRounds, ARoundRankZeroCannotRunFailsTheWorldAndEveryLaterRound) {
  auto [leader, follower] = pair_of_ranks();
  FakeSession zero(0);
  LeaderRounds rounds(*leader, zero, two_slots(), {}, {});
  RoundPlan bad;
  bad.round = 4;
  bad.runs.push_back({"decode.r8", {}, {}});
  auto failed = rounds.run(bad);
  ASSERT_FALSE(failed.is_ok());
  EXPECT_EQ(failed.status().message(), "rank 0: round 4: no phase decode.r8 in this program");
  EXPECT_EQ(rounds.failure(), failed.status().message());
  auto later = rounds.run(RoundPlan{});
  ASSERT_FALSE(later.is_ok());
  EXPECT_NE(later.status().message().find("the world has stopped: rank 0: round 4"), std::string::npos);
  // The follower hears of it: its wait for the next command ends with rank 0's reason.
  auto next = follower->next_command();
  while (next.is_ok() && next->type == FrameType::RoundPlan) next = follower->next_command();
  ASSERT_FALSE(next.is_ok());
  EXPECT_NE(next.status().message().find("no phase decode.r8"), std::string::npos) << next.status().message();
}

TEST(FollowRounds, RefusesACommandThatIsNotARoundAndBytesThatAreNotAPlan) {
  {
    auto [leader, follower] = pair_of_ranks();
    FakeSession one(1);
    ASSERT_TRUE(leader->broadcast(FrameType::CommId, PayloadWriter().u32(0).take()).is_ok());
    const Status s = follow_rounds(*follower, one, 2, {});
    EXPECT_EQ(s.message(), "rank 0's CommId: not a command a follower takes (RoundPlan, Stop)");
  }
  {
    auto [leader, follower] = pair_of_ranks();
    FakeSession one(1);
    ASSERT_TRUE(leader->broadcast(FrameType::RoundPlan, {1, 2, 3, 4}).is_ok());
    const Status s = follow_rounds(*follower, one, 2, {});
    EXPECT_NE(s.message().find("rank 0's RoundPlan: round plan: magic 04030201"), std::string::npos) << s.message();
    EXPECT_TRUE(one.log.empty());
  }
  {
    auto [leader, follower] = pair_of_ranks();
    FakeSession one(1);
    RoundPlan plan;
    plan.reset_slots = {5};
    ASSERT_TRUE(leader->broadcast(FrameType::RoundPlan, encode_round_plan(plan)).is_ok());
    const Status s = follow_rounds(*follower, one, 2, {});
    EXPECT_EQ(s.message(), "round 0: reset slot 5 outside 0..1");
  }
}

}  // namespace
}  // namespace dsv41::dist
