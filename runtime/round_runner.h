// runtime/round_runner.h — what generation and serving drive: something that runs a RoundPlan on every rank of a world and hands back rank 0's logits rows.
//
// Two kinds: a World of ranks that are threads of this process (runtime/world.h), and rank 0 of a world
// of processes (runtime/dist/leader_rounds.h), which sends each plan's bytes to the other ranks. Both
// run a plan on a rank's session with run_round_on_session, so a round means the same on every rank.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/program_file.h"
#include "common/status.h"
#include "runtime/dspark_drafter.h"
#include "runtime/rank_session.h"
#include "runtime/round_plan.h"

namespace dsv41 {

// What the world was planned for, read from rank 0's program.
struct WorldFacts {
  int world = 1, slots = 0;
  int64_t context = 0, vocab = 0;
  int32_t eos = -1;
  std::vector<int64_t> prefill_rows, decode_rows;  // as planned
  int64_t draft_tokens = 0;                        // drafts a round may verify per slot, as planned
  DsparkPlan dspark;                               // its Draft phases (none: rounds draft by prompt lookup)
};

// The facts of a world of `world` ranks whose rank 0 runs `program0`.
Result<WorldFacts> world_facts(const ProgramFile& program0, int world);

class RoundRunner {
 public:
  virtual ~RoundRunner() = default;
  virtual const WorldFacts& facts() const = 0;
  // Runs `plan` on every rank; returns rank 0's logits rows (each `vocab` floats), every run's
  // logits_rows in order. One round at a time (callers serialise).
  virtual Result<std::vector<std::vector<float>>> run(const RoundPlan& plan) = 0;
  // The reason the world ended, or empty while it is healthy.
  virtual std::string failure() const = 0;
};

// Called after each phase a rank runs (checks such as --logits-digests); its failure ends the round.
using AfterPhase = std::function<Status(RankSession& session, const Phase& phase)>;

// One round on one rank: resets the plan's slots (each checked against `slots`), runs its phases in
// order and, when `logits` is given, appends the rows each run names. Names the round and the phase
// that failed.
Status run_round_on_session(RankSession& session, const RoundPlan& plan, int slots, int64_t vocab,
                            std::vector<std::vector<float>>* logits, const AfterPhase& after_phase = {});

}  // namespace dsv41
