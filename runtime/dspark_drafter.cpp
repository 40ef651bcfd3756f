// runtime/dspark_drafter.cpp — the Draft phase's rows for a round's drafting sequences, and their drafts from its logits.
#include "runtime/dspark_drafter.h"

#include "runtime/round_runner.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/call_list.h"
#include "common/model_config.h"
#include "common/program_calls.h"
#include "runtime/generate.h"
#include "runtime/window_fit.h"

namespace dsv41 {

Result<DsparkPlan> dspark_plan(const ProgramFile& rank0) {
  const fb::Program& p = rank0.program();
  DSV41_ASSIGN_OR_RETURN(ModelConfig config, parse_model_config(p.config_json()->str(), rank0.source()));
  DsparkPlan plan;
  if (!config.has_dspark()) return plan;
  DSV41_ASSIGN_OR_RETURN(CallLists calls, read_call_lists(p));
  for (const Phase& phase : calls.phases)
    if (phase.name.rfind(kDraftPhasePrefix, 0) == 0) plan.rows.push_back(phase.rows);
  std::sort(plan.rows.begin(), plan.rows.end());
  plan.block = config.dspark_block_size;
  plan.noise = static_cast<int32_t>(config.dspark_noise_token_id);
  return plan;
}

Result<std::vector<std::vector<int32_t>>> dspark_drafts(RoundRunner& world, const DsparkPlan& d, uint64_t round,
                                                        const std::vector<DraftSeat>& seats, int64_t k) {
  const WorldFacts& f = world.facts();
  if (!d.enabled()) return Status::error("dspark drafts: the world's programs have no Draft phases");
  if (k < 0 || k > d.block) return Status::errorf("dspark drafts: {} drafts asked, a draft block holds {}", k, d.block);
  // A block runs all its rows (they attend to each other), but never past the planned context: a
  // sequence near its end runs the rows that fit, which still hold every position it may verify.
  std::vector<int64_t> firsts, lengths;
  int64_t needed = 0;
  for (const DraftSeat& seat : seats) {
    const int64_t length = std::min(d.block, f.context - seat.position);
    if (length < 1)
      return Status::errorf("dspark drafts: slot {} at position {} is outside the context {}", seat.slot,
                            seat.position, f.context);
    firsts.push_back(needed);
    lengths.push_back(length);
    needed += length;
  }
  const int64_t rows = smallest_holding(d.rows, needed);
  if (rows == 0)
    return Status::errorf("dspark drafts: {} sequences need {} rows, the largest Draft phase has {}", seats.size(),
                          needed, largest_size(d.rows));
  PhaseRun run = padded_run(fmt::format("{}{}", kDraftPhasePrefix, rows), rows);
  for (size_t s = 0; s < seats.size(); ++s) {
    for (int64_t j = 0; j < lengths[s]; ++j) {
      int32_t* row = run.statics.data() + (firsts[s] + j) * kStaticsFields;
      row[kStaticToken] = j == 0 ? seats[s].pending : d.noise;
      row[kStaticSlot] = seats[s].slot;
      row[kStaticPosition] = static_cast<int32_t>(seats[s].position + j);
      row[kStaticFirstRow] = static_cast<int32_t>(firsts[s]);
      if (j < std::min(k, lengths[s])) run.logits_rows.push_back(static_cast<int32_t>(firsts[s] + j));
    }
  }
  RoundPlan plan;
  plan.round = round;
  plan.runs.push_back(std::move(run));
  DSV41_ASSIGN_OR_RETURN(auto logits, world.run(plan));
  std::vector<std::vector<int32_t>> drafts(seats.size());
  size_t row = 0;
  for (size_t s = 0; s < seats.size(); ++s)
    for (int64_t j = 0; j < std::min(k, lengths[s]); ++j, ++row)
      // The op chose its next row's Markov term with this same pick (runtime/cpu/ops_draft.cpp).
      drafts[s].push_back(greedy_token(logits[row].data(), f.vocab));
  return drafts;
}

}  // namespace dsv41
