// runtime/world.h — a world of ranks-as-threads: one persistent thread per rank runs each RoundPlan in lockstep.
//
// The one way generation and serving drive ranks. Each rank's session is made through the Backend on
// that rank's own thread (a CUDA context is per thread) and destroyed there. The first failure on any
// rank aborts the backend (waking ranks blocked in a collective) and ends the world: every later
// round fails with that one reason.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/program_file.h"
#include "common/status.h"
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
};

class World {
 public:
  // Starts one thread per program (rank i at index i) and waits until every session is made.
  static Result<std::unique_ptr<World>> start(std::vector<ProgramFile> programs, std::unique_ptr<Backend> backend);
  ~World();  // stops and joins the rank threads
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  const WorldFacts& facts() const { return facts_; }
  // Runs `plan` on every rank; returns rank 0's logits rows (each `vocab` floats), every run's
  // logits_rows in order. One round at a time (callers serialise).
  Result<std::vector<std::vector<float>>> run(const RoundPlan& plan);
  // The reason the world ended, or empty while it is healthy.
  std::string failure() const;

 private:
  World() = default;
  void rank_main(int rank);
  Status run_on_rank(RankSession& session, const RoundPlan& plan);
  void fail(int rank, const Status& status);

  WorldFacts facts_;
  std::vector<ProgramFile> programs_;
  std::unique_ptr<Backend> backend_;
  std::vector<std::thread> threads_;

  mutable std::mutex mutex_;
  std::condition_variable wake_ranks_, wake_caller_;
  uint64_t generation_ = 0;  // bumped per round; ranks run each generation once
  int created_ = 0, done_ = 0;
  bool stopping_ = false;
  std::string failure_;
  std::vector<uint8_t> plan_bytes_;  // the round, as followers that are processes would receive it
  std::vector<std::vector<float>> logits_;
};

}  // namespace dsv41
