// runtime/gpu/bench_draft.h — `dsv41-rt bench --draft K`: the cost of one DSpark round (the Draft phase of
// one sequence, then the verification window of K + 1 rows) next to serial decode.r1, and the tokens/s a
// round gives at a stated acceptance length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/status.h"
#include "runtime/gpu/bench_plan.h"

namespace dsv41::gpu {

struct PhaseMeasure;
struct BenchReport;

// A drafted round of one sequence: its Draft phase (draft.r{block}: the pending token and block − 1 noise
// rows) and its verification (the pending token and K drafts in the smallest decode bucket of at least
// K + 1 rows, as the runtime picks it: decode.r{K+1} when planned). A round yields A tokens,
// its acceptance length (1 ≤ A ≤ K + 1: the accepted drafts plus the token verification picks), so
// tokens/s = A / (draft ms + verify ms); serial decoding yields 1 token per decode.r1 step.
struct DraftRound {
  int64_t drafts = 0;
  std::string draft_phase, verify_phase;
  double draft_ms = 0, verify_ms = 0;  // medians of the measured phases
  double round_ms() const { return draft_ms + verify_ms; }
  double tokens_per_s(double acceptance) const { return acceptance / (round_ms() * 1e-3); }
  double serial_ms = 0;   // decode.r1's median (0: not measured in this run)
  double acceptance = 0;  // --acceptance: the length the headline tokens/s assumes
  double break_even = 0;  // the acceptance at which a round matches serial decoding (0: no serial)
};

// The Draft phase of one sequence: the smallest draft.r* phase (its rows are the block), or an error
// naming the planned phases when the program has none (planned without --draft-tokens).
Result<const Phase*> draft_phase_of(const std::vector<Phase>& phases, int64_t drafts);

// The verification window of a round of `drafts`: the smallest decode.r{R} with R ≥ drafts + 1, or an
// error naming the planned phases.
Result<const Phase*> verify_phase_of(const std::vector<Phase>& phases, int64_t drafts);

// The rows of one sequence in `phase` when it is part of a --draft K round: a Draft phase's blocks
// (its smallest is one sequence: with --draft, every Draft phase is one block a slot), and the
// verification window as one sequence (all its rows: exact when decode.r{K+1} is planned); 0 otherwise
// (the phase's usual layout).
int64_t draft_sequence_rows(const Phase& phase, const std::vector<Phase>& phases, const BenchOptions& options);

// From the measured phases of a run with --draft K; an error when one of them failed or is missing.
Result<DraftRound> draft_round(const std::vector<PhaseMeasure>& phases, const BenchOptions& options,
                               const std::string& draft_phase, const std::string& verify_phase);

// The report's drafting lines (empty without --draft).
std::string draft_text(const BenchReport& report);

}  // namespace dsv41::gpu
