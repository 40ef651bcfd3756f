// runtime/serve/round_planner.h — decides one round: the decode rows of running sequences in planned buckets, and one prefill piece.
//
// Continuous batching with a fairness rule: a round runs every decoding sequence's next row (so a
// running stream gains a token each round) plus at most `prefill_segments` prefill segments of waiting
// prompts, oldest first, each in the smallest planned segment size that holds its piece. A long
// prompt is therefore chunked across rounds instead of stalling the streams already running.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/round_plan.h"

namespace dsv41::serve {

// One sequence holding a slot, as the planner sees it.
struct SlotView {
  int64_t id = 0;  // the request's id, to route logits back
  int slot = 0;
  bool needs_reset = false;         // newly admitted: its slot is zeroed this round
  const std::vector<int32_t>* prompt = nullptr;
  int64_t prefilled = 0;            // prompt rows already run
  int32_t next_token = 0;           // decoding: the token to feed at `position`
  int64_t position = 0;             // decoding: the next position
  std::vector<int32_t> drafts;      // decoding: drafts verified after next_token, at position + 1, ...
  bool decoding() const { return prefilled >= static_cast<int64_t>(prompt->size()); }
};

// Whose row each returned logits row is, in the order World::run returns them. A drafted sequence
// owns 1 + drafts rows in a row, choosing the tokens at consecutive positions.
struct LogitsOwner {
  int64_t id = 0;
  int64_t position = 0;  // the position of the token these logits choose
};

struct PlannedRound {
  RoundPlan plan;
  std::vector<LogitsOwner> owners;
  std::vector<std::pair<int64_t, int64_t>> prefilled;  // (id, rows) run this round from each prompt
  int64_t padding_rows = 0;
};

struct PlannerShape {
  std::vector<int64_t> decode_rows, prefill_rows;  // planned buckets and segment sizes
  int prefill_segments = 1;                        // prefill segments per round (the fairness rule)
};

// `slots` in admission order. Sequences with nothing to run this round are skipped. A decoding
// sequence's rows (next_token, then its drafts) stay together in one decode window: windows are
// filled in admission order up to the largest planned bucket.
PlannedRound plan_round(const PlannerShape& shape, const std::vector<SlotView>& slots, uint64_t round);

}  // namespace dsv41::serve
