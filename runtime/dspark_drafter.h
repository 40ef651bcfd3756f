// runtime/dspark_drafter.h — drafts from the model's own DSpark blocks: one Draft phase for every drafting sequence of a round.
//
// The target's phases keep each draft block's context ring current (taps of every processed position),
// so a sequence whose tokens before `position` are all in the state can draft from its pending token:
// the Draft phase runs dspark_block_size rows for it (the pending token, then the noise token, at
// consecutive positions) and each row's Markov-adjusted logits choose one draft, greedily. Whatever it
// proposes, verification keeps the output exact (runtime/draft_verify.h).
#pragma once

#include <cstdint>
#include <vector>

#include "common/program_file.h"
#include "common/status.h"

namespace dsv41 {

class RoundRunner;  // runtime/round_runner.h (which holds a DsparkPlan in its WorldFacts)

// A sequence to draft for: its slot, and the pending token at `position` (the first not yet in the state).
struct DraftSeat {
  int32_t slot = 0;
  int64_t position = 0;
  int32_t pending = 0;
};

// The name of a Draft phase: this prefix and its rows (compiler/emit/phase_emitter.cpp names them).
inline constexpr const char* kDraftPhasePrefix = "draft.r";

// What DSpark drafting needs of a world, read from rank 0's program: the rows of its Draft phases,
// ascending (empty: it has none, planned without drafting, for a model without DSpark blocks or for a
// target whose kernels do not run them; rounds then draft by prompt lookup), the rows one sequence
// takes (dspark_block_size) and the token of its rows after the first (dspark_noise_token_id).
struct DsparkPlan {
  std::vector<int64_t> rows;
  int64_t block = 0;
  int32_t noise = 0;
  bool enabled() const { return !rows.empty() && block > 0; }
  const char* drafter() const { return enabled() ? "dspark" : "prompt lookup"; }
};
Result<DsparkPlan> dspark_plan(const ProgramFile& rank0);

// Runs one Draft phase (round number `round`) for `seats` and returns each seat's first `k` drafts
// (k ≤ the block). A sequence's block never runs past the planned context: rows beyond it are left out,
// and so are their drafts (a seat near the end gets fewer than k). More seats than the largest Draft
// phase holds are refused.
Result<std::vector<std::vector<int32_t>>> dspark_drafts(RoundRunner& world, const DsparkPlan& plan, uint64_t round,
                                                        const std::vector<DraftSeat>& seats, int64_t k);

}  // namespace dsv41
