// runtime/dist/leader_rounds.h — rank 0 of a world of rank processes as a RoundRunner: each round's plan goes to every follower as a RoundPlan frame, then runs here; and the followers' side, which runs what arrives.
#pragma once

#include <functional>
#include <mutex>
#include <string>

#include "runtime/dist/control.h"
#include "runtime/round_runner.h"

namespace dsv41::dist {

class LeaderRounds final : public RoundRunner {
 public:
  // `before_round` (may be empty) runs on the caller's thread before each round is sent.
  LeaderRounds(Control& control, RankSession& session, WorldFacts facts, AfterPhase after_phase,
               std::function<void(const RoundPlan&)> before_round)
      : control_(control), session_(session), facts_(std::move(facts)), after_phase_(std::move(after_phase)),
        before_round_(std::move(before_round)) {}

  const WorldFacts& facts() const override { return facts_; }
  // Every follower gets the plan first, then this rank runs it: the followers' collectives wait on
  // rank 0's. The first failure is kept; every later round fails with it.
  Result<std::vector<std::vector<float>>> run(const RoundPlan& plan) override;
  std::string failure() const override;

 private:
  Control& control_;
  RankSession& session_;
  const WorldFacts facts_;
  const AfterPhase after_phase_;
  const std::function<void(const RoundPlan&)> before_round_;
  mutable std::mutex mutex_;
  std::string failure_;
};

// A follower: runs each RoundPlan rank 0 sends on `session` until rank 0's Stop (then returns OK).
// Any other command, or a plan that does not decode or run, is this rank's failure.
Status follow_rounds(Control& control, RankSession& session, int slots, const AfterPhase& after_phase);

}  // namespace dsv41::dist
