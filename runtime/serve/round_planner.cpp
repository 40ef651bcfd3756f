// runtime/serve/round_planner.cpp — buckets decode rows (padding rows write nothing), chunks prompts into planned segments.
#include "runtime/serve/round_planner.h"

#include <algorithm>
#include <span>
#include <string>

#include "runtime/draft_verify.h"
#include "runtime/window_fit.h"

namespace dsv41::serve {

PlannedRound plan_round(const PlannerShape& shape, const std::vector<SlotView>& slots, uint64_t round) {
  PlannedRound out;
  out.plan.round = round;
  for (const SlotView& s : slots)
    if (s.needs_reset) out.plan.reset_slots.push_back(s.slot);

  std::vector<const SlotView*> decoding;
  for (const SlotView& s : slots)
    if (s.decoding()) decoding.push_back(&s);
  const int64_t largest = largest_size(shape.decode_rows);
  auto rows_of = [](const SlotView* s) { return 1 + static_cast<int64_t>(s->drafts.size()); };
  for (size_t begin = 0; begin < decoding.size();) {
    size_t end = begin;
    int64_t active = 0;
    while (end < decoding.size() && (end == begin || active + rows_of(decoding[end]) <= largest))
      active += rows_of(decoding[end++]);
    // Each sequence fits alone: the compiler plans the largest bucket for draft_tokens + 1 rows.
    const int64_t rows = smallest_holding(shape.decode_rows, active);
    PhaseRun run = padded_run("decode.r" + std::to_string(rows), rows);
    int64_t r = 0;
    for (size_t i = begin; i < end; ++i) {
      const SlotView& s = *decoding[i];
      append_verify_rows(run, r, s.slot, s.position, s.next_token, s.drafts);
      for (int64_t j = 0; j < rows_of(&s); ++j) out.owners.push_back({s.id, s.position + 1 + j});
      r += rows_of(&s);
    }
    out.padding_rows += rows - active;
    out.plan.runs.push_back(std::move(run));
    begin = end;
  }

  int segments = 0;
  for (const SlotView& s : slots) {
    if (s.decoding() || segments >= shape.prefill_segments || shape.prefill_rows.empty()) continue;
    const int64_t left = static_cast<int64_t>(s.prompt->size()) - s.prefilled;
    // A prompt longer than the largest segment is chunked across rounds.
    const int64_t fits = smallest_holding(shape.prefill_rows, left);
    const int64_t rows = fits ? fits : largest_size(shape.prefill_rows), piece = std::min(rows, left);
    PhaseRun run = padded_run("prefill.n" + std::to_string(rows), rows);
    write_sequence_rows(run, 0, s.slot, s.prefilled,
                        std::span<const int32_t>(s.prompt->data() + s.prefilled, static_cast<size_t>(piece)));
    if (s.prefilled + piece == static_cast<int64_t>(s.prompt->size())) {
      run.logits_rows.push_back(static_cast<int32_t>(piece - 1));  // the prompt's last row chooses the first token
      out.owners.push_back({s.id, s.prefilled + piece});
    }
    out.padding_rows += rows - piece;
    out.prefilled.emplace_back(s.id, piece);
    out.plan.runs.push_back(std::move(run));
    ++segments;
  }
  return out;
}

}  // namespace dsv41::serve
