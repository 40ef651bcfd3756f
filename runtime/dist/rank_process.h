// runtime/dist/rank_process.h — this process as one rank of a world of processes (CPU backend over the socket exchange, or CUDA over NCCL): join, boot, then lead rounds (rank 0) or follow them.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "runtime/dist/control.h"
#include "runtime/dist/leader_rounds.h"
#include "runtime/dist/rank_backend.h"
#include "runtime/generate.h"

namespace dsv41::dist {

struct RankProcessOptions {
  std::string program;    // the folder of rank*.fb (this rank reads rank{rank}.fb) or this rank's program file
  std::string model_dir;  // the shards (the CPU backend reads them; CUDA takes its own options)
  int rank = 0, world = 1;
  std::string master;  // HOST:PORT: rank 0 listens there, the others connect
  int connect_timeout_ms = 60000;
  int watchdog_ms = 1500;
  std::shared_ptr<RankBackend> backend;  // null: the CPU backend (cpu_rank_backend)
  // What the ranks were started to do ("generate", "serve", a bench's settings): compared at start-up
  // with the program's settings, so ranks started for different work refuse each other.
  std::string purpose;
  bool logits_digests = false;  // every rank prints its logits buffer's digest after each phase (stderr)
  int step_pause_ms = 0;  // rank 0 pauses this long before each decode round (fail-fast tests)
  std::function<void(int step)> on_decode_step;  // rank 0, before each decode round (progress for tests)
  // Called once when another rank failed, with the reason (see ControlOptions::on_peer_failure).
  std::function<void(const std::string& reason)> on_peer_failure;
};

// This rank's program: rank{rank}.fb of the folder, or the file, checked to be this rank of this world.
Result<ProgramFile> load_rank_program(const RankProcessOptions& options);

// What a rank does once it has joined the world: `control` (rank 0's links to every follower, or a
// follower's to rank 0) and the rank's backend.
using RankWork = std::function<Status(Control& control, RankBackend& backend)>;

// Joins the world as options.rank with the agreement's facts of `program` on options.backend (null: the
// CPU backend reading options.model_dir; its abort hears of a peer's failure before
// options.on_peer_failure does), then runs `work`. This rank's own failure is reported to every other
// rank before it is returned, and the backend is closed after `work`, whatever it returned.
Status run_in_world(const RankProcessOptions& options, const ProgramFile& program, const RankWork& work);

// What rank 0 runs once every rank has its session: rounds on `rounds` (each sent to every follower
// first), returning when the work is done.
using Lead = std::function<Status(LeaderRounds& rounds, const ProgramFile& program)>;

// run_in_world with this rank's program: boots this rank's session, then rank 0 calls `lead` and stops
// the followers after it; a follower runs rank 0's rounds until the stop.
Status run_as_rank(const RankProcessOptions& options, const Lead& lead);

// generate() with this process as one rank: rank 0 validates the request and drives the rounds
// exactly as generate() does; it returns the tokens and logits, a follower an empty result.
Result<GenerateResult> generate_as_rank(const RankProcessOptions& options, const GenerateOptions& generate);

}  // namespace dsv41::dist
