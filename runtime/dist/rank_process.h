// runtime/dist/rank_process.h — greedy generation with this process as one rank of a world of processes (CPU backend over the socket exchange, or CUDA over NCCL).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "runtime/dist/rank_backend.h"
#include "runtime/generate.h"

namespace dsv41::dist {

struct RankProcessOptions {
  // program_dir: the folder of rank*.fb (this rank reads rank{rank}.fb) or this rank's program file.
  GenerateOptions generate;
  int rank = 0, world = 1;
  std::string master;  // HOST:PORT: rank 0 listens there, the others connect
  int connect_timeout_ms = 60000;
  int watchdog_ms = 1500;
  std::shared_ptr<RankBackend> backend;  // null: the CPU backend (cpu_rank_backend)
  bool logits_digests = false;  // every rank prints its logits buffer's digest after each phase (stderr)
  int step_pause_ms = 0;  // rank 0 pauses this long before each decode step (fail-fast tests)
  std::function<void(int step)> on_decode_step;  // rank 0, before each decode step (progress for tests)
  // Called once when another rank failed, with the reason (see ControlOptions::on_peer_failure).
  std::function<void(const std::string& reason)> on_peer_failure;
};

// Rank 0 validates the request, drives every step (each follower runs the phases rank 0 names, in
// the same order, with the same statics) and returns the tokens and logits like generate(); a
// follower returns an empty result after rank 0's stop. This rank's own failure is reported to
// every other rank before it is returned.
Result<GenerateResult> generate_as_rank(const RankProcessOptions& options);

}  // namespace dsv41::dist
