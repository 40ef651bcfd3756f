// runtime/gpu/bench_plan.h — what `dsv41-rt bench` measures: its options and their checks, the phases
// they pick from a program, and the statics that put each phase's rows at the stated context fill.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/status.h"

namespace dsv41::gpu {

class DeviceExchange;
class NcclExchange;

struct BenchOptions {
  std::string program;                     // one rank's .fb
  std::string model_dir;                   // the shards (not read with synthetic_seed)
  std::optional<uint64_t> synthetic_seed;  // fill the weights from this seed instead
  std::string backend = "cuda";            // only cuda measures anything
  int device = 0;
  std::vector<int64_t> rows = {1, 2, 4, 8, 16};  // decode.r{R} phases
  std::vector<int64_t> prefill = {2048};         // prefill.n{N} phases (empty: none)
  int64_t fill = 4096;                     // cache entries before each row's position
  int replays = 20;                        // timed replays per phase, at most
  int warmup = 2;                          // untimed replays first
  double phase_seconds = 10;               // fewer replays when one would run past this (at least 3)
  bool per_op = false;                     // a per-call time table from an eager pass
  bool alone = false;                      // a rank of a bigger world run by itself (no peers)
  bool programmatic_launch = true;         // programmatic dependent launch between kernels (--no-pdl: off)
  bool graph_lanes = true;                 // independent calls side by side in the graphs (--one-lane: off)
  int64_t draft = 0;                       // > 0: also a DSpark round of this many drafts (runtime/gpu/bench_draft.h)
  double acceptance = 3;                   // the acceptance length the round's headline tokens/s assumes
  int64_t roofline_mib = 4096;             // the streaming-read buffer
  std::FILE* progress = stderr;            // boot and per-phase progress; nullptr: quiet
  // One rank of a world of rank processes (bench --master; runtime/gpu/bench_rank.h): the session
  // exchanges through `exchange` with peers running the same bench, every rank replays each phase
  // exactly `replays` times (sizing by time could differ between ranks and unpair the collectives),
  // and with `nccl` every exchange of the eager pass is timed (synchronised before and after).
  DeviceExchange* exchange = nullptr;
  NcclExchange* nccl = nullptr;
};

// Refuses options that cannot measure anything, naming the flag, its value and the rule: a backend
// other than cuda, no phase, a row count or prefill size below 1, a negative fill, fewer than 1
// replay, a negative warm-up, a phase budget <= 0, a roofline buffer under 256 MiB (an L2 is tens of MiB).
Status check_bench_options(const BenchOptions& options);

// A program of world 1 runs as it is; a rank of a bigger world only with --alone (its exchanges have
// no peer, so its logits mean nothing) or `with_peers` (its rank processes all run the bench), and
// --alone only for such a rank and never with peers.
Status check_bench_world(const std::string& program, int world, int rank, bool alone, bool with_peers = false);

// What every rank of a bench world must run alike (phases, fill, replays, warm-up, per-op): compared
// at start-up, so ranks started with different flags refuse each other instead of unpairing collectives.
std::string bench_agreement(const BenchOptions& options);

// decode.r{R} for each --rows value and prefill.n{N} for each --prefill value, in that order, then with
// --draft K the Draft phase of one sequence and the verification window (runtime/gpu/bench_draft.h; unless
// --rows has it); a size the program did not plan is refused, naming the planned ones.
Result<std::vector<const Phase*>> pick_bench_phases(const std::vector<Phase>& phases, const BenchOptions& options);

// The statics of one step of `phase` with every row active and `fill` entries already in each row's
// cache. Decode rows are separate sequences, one per slot while rows <= slots (otherwise ceil(rows /
// slots) consecutive rows share a slot at consecutive positions); a prefill phase is one sequence in
// slot 0 at positions fill .. fill + rows − 1. `sequence_rows` > 0 overrides the decode layout: sequences
// of that many consecutive rows, one a slot (a Draft phase's blocks; a drafted round's verification
// window). Tokens are spread over the vocabulary. Refuses a fill whose last position reaches the context.
Result<std::vector<int32_t>> bench_statics(const Phase& phase, int64_t fill, int64_t slots, int64_t context, int64_t vocab,
                                           int64_t sequence_rows = 0);

}  // namespace dsv41::gpu
