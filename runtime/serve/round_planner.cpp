// runtime/serve/round_planner.cpp — buckets decode rows (padding rows write nothing), chunks prompts into planned segments.
#include "runtime/serve/round_planner.h"

#include <algorithm>
#include <limits>
#include <string>

#include "common/call_list.h"
#include "runtime/draft_verify.h"

namespace dsv41::serve {
namespace {

void set_row(std::vector<int32_t>& statics, int64_t row, int32_t token, int32_t slot, int64_t position, int64_t first) {
  int32_t* r = statics.data() + row * kStaticsFields;
  r[kStaticToken] = token;
  r[kStaticSlot] = slot;
  r[kStaticPosition] = static_cast<int32_t>(position);
  r[kStaticFirstRow] = static_cast<int32_t>(first);
}

// The smallest planned size holding `n`, or the largest when none does.
int64_t fitting(const std::vector<int64_t>& sizes, int64_t n) {
  int64_t best = 0, largest = 0;
  for (int64_t s : sizes) {
    largest = std::max(largest, s);
    if (s >= n && (best == 0 || s < best)) best = s;
  }
  return best ? best : largest;
}

std::vector<int32_t> padded_statics(int64_t rows) {
  std::vector<int32_t> statics(static_cast<size_t>(rows * kStaticsFields), 0);
  for (int64_t r = 0; r < rows; ++r) {
    statics[r * kStaticsFields + kStaticSlot] = -1;  // padding: the ops skip it, nothing is written
    statics[r * kStaticsFields + kStaticFirstRow] = static_cast<int32_t>(r);
  }
  return statics;
}

}  // namespace

PlannedRound plan_round(const PlannerShape& shape, const std::vector<SlotView>& slots, uint64_t round) {
  PlannedRound out;
  out.plan.round = round;
  for (const SlotView& s : slots)
    if (s.needs_reset) out.plan.reset_slots.push_back(s.slot);

  std::vector<const SlotView*> decoding;
  for (const SlotView& s : slots)
    if (s.decoding()) decoding.push_back(&s);
  const int64_t largest = fitting(shape.decode_rows, std::numeric_limits<int64_t>::max());
  auto rows_of = [](const SlotView* s) { return 1 + static_cast<int64_t>(s->drafts.size()); };
  for (size_t begin = 0; begin < decoding.size();) {
    size_t end = begin;
    int64_t active = 0;
    while (end < decoding.size() && (end == begin || active + rows_of(decoding[end]) <= largest))
      active += rows_of(decoding[end++]);
    const int64_t rows = fitting(shape.decode_rows, active);
    PhaseRun run{"decode.r" + std::to_string(rows), padded_statics(rows), {}};
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
    const int64_t rows = fitting(shape.prefill_rows, left), piece = std::min(rows, left);
    PhaseRun run{"prefill.n" + std::to_string(rows), padded_statics(rows), {}};
    for (int64_t r = 0; r < piece; ++r) set_row(run.statics, r, (*s.prompt)[s.prefilled + r], s.slot, s.prefilled + r, 0);
    for (int64_t r = piece; r < rows; ++r) run.statics[r * kStaticsFields + kStaticFirstRow] = 0;
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
