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
#include "runtime/round_runner.h"

namespace dsv41 {

class World final : public RoundRunner {
 public:
  // Starts one thread per program (rank i at index i) and waits until every session is made.
  static Result<std::unique_ptr<World>> start(std::vector<ProgramFile> programs, std::unique_ptr<Backend> backend);
  ~World() override;  // stops and joins the rank threads
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  const WorldFacts& facts() const override { return facts_; }
  Result<std::vector<std::vector<float>>> run(const RoundPlan& plan) override;
  std::string failure() const override;

 private:
  World() = default;
  void rank_main(int rank);
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
