// runtime/draft_verify.h — one drafted round of a sequence: its verification rows, the exact acceptance rule, and the drafts a lookup drafter proposes.
//
// A round feeds the pending token and k drafts at consecutive positions through one decode window; row
// j's logits choose the token after row j. Acceptance walks the rows in order and keeps each chosen
// token while the next draft agrees with it, so every kept token is the one serial decoding would have
// chosen at its position (the chooser decides each position exactly as serial decoding does). Rows
// past the first disagreement are rejected: their positions are simply rewritten later, because every
// state buffer is position-addressed and planned long enough (compiler/plan/state_layout.h).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/round_plan.h"

namespace dsv41 {

// Writes one sequence's verification rows into `run` from phase row `first_row`: `pending` at
// `position`, then drafts[i] at position + 1 + i, all of slot `slot`, and lists their logits rows.
void append_verify_rows(PhaseRun& run, int64_t first_row, int32_t slot, int64_t position, int32_t pending,
                        const std::vector<int32_t>& drafts);

// Chooses the token at `position` from one row of logits (greedy, or the keyed sampler).
using TokenChooser = std::function<int32_t(const std::vector<float>& logits, int64_t position)>;

// The tokens a verified round yields: chosen[0..m], where drafts[0..m-1] were all accepted and chosen[m]
// is the correction (or, with every draft accepted, the bonus token). `logits` holds drafts.size() + 1
// rows; row j chooses the token at `first_position` + j (the position after the row's own).
std::vector<int32_t> accept_drafts(const std::vector<std::vector<float>>& logits, const std::vector<int32_t>& drafts,
                                   int64_t first_position, const TokenChooser& choose);

// Proposes up to `k` drafts to follow `sequence` (the prompt, every token emitted, last the pending one).
using Drafter = std::function<std::vector<int32_t>(const std::vector<int32_t>& sequence, int64_t k)>;

// Proposes up to `k` drafts by prompt lookup: the tokens that followed the latest earlier occurrence of
// the sequence's last `ngram` tokens (trying ngram 3, 2, then 1). Empty when nothing matches. A drafter
// of its own (no model): it proposes when the programs have no DSpark Draft phases (runtime/
// dspark_drafter.h), and whatever it proposes, verification keeps the output exact.
std::vector<int32_t> lookup_drafts(const std::vector<int32_t>& sequence, int64_t k);

// Acceptance totals: a round yields accepted + 1 tokens; the mean acceptance length is tokens / rounds.
struct DraftStats {
  int64_t rounds = 0, drafted = 0, accepted = 0;
  void add(int64_t drafts, int64_t kept) { ++rounds, drafted += drafts, accepted += kept; }
  double acceptance_length() const { return rounds ? static_cast<double>(accepted + rounds) / rounds : 0.0; }
};

}  // namespace dsv41
