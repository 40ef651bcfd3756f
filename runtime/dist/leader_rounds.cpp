// runtime/dist/leader_rounds.cpp — rounds sent as RoundPlan frames by rank 0 and replayed by every follower.
#include "runtime/dist/leader_rounds.h"

#include <fmt/format.h>

namespace dsv41::dist {

Result<std::vector<std::vector<float>>> LeaderRounds::run(const RoundPlan& plan) {
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) return Status::errorf("the world has stopped: {}", failure_);
  }
  if (before_round_) before_round_(plan);
  std::vector<std::vector<float>> logits;
  Status status = control_.broadcast(FrameType::RoundPlan, encode_round_plan(plan));
  if (status.is_ok()) status = run_round_on_session(session_, plan, facts_.slots, facts_.vocab, &logits, after_phase_);
  if (status.is_ok()) return logits;
  const std::string reason = rank_reason(0, status.message());
  {
    std::lock_guard lock(mutex_);
    failure_ = reason;
  }
  control_.fail(reason);  // the followers stop now (exit 3), not when rank 0 next sends something
  return Status::error(reason);
}

std::string LeaderRounds::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

Status follow_rounds(Control& control, RankSession& session, int slots, const AfterPhase& after_phase) {
  for (;;) {
    DSV41_ASSIGN_OR_RETURN(Frame frame, control.next_command());
    const std::string what = fmt::format("rank 0's {}", frame_type_name(static_cast<uint16_t>(frame.type)));
    if (frame.type == FrameType::Stop) return control.stop();
    if (frame.type != FrameType::RoundPlan)
      return Status::errorf("{}: not a command a follower takes (RoundPlan, Stop)", what);
    auto plan = decode_round_plan(frame.payload);
    if (!plan.is_ok()) return plan.status().with_context(what);
    // Followers hand back no logits: rank 0 samples from its own, which are bit for bit the same.
    DSV41_TRY(run_round_on_session(session, *plan, slots, 0, nullptr, after_phase));
  }
}

}  // namespace dsv41::dist
