// runtime/round_runner.cpp — the world's facts from rank 0's program, and one round run on one rank's session.
#include "runtime/round_runner.h"

#include "common/model_config.h"

namespace dsv41 {

Result<WorldFacts> world_facts(const ProgramFile& program0, int world) {
  const fb::Program& p = program0.program();
  DSV41_ASSIGN_OR_RETURN(ModelConfig config, parse_model_config(p.config_json()->str(), program0.source()));
  WorldFacts f;
  f.world = world;
  f.slots = p.settings()->slots();
  f.context = p.settings()->context();
  f.vocab = config.vocab_size;
  f.eos = static_cast<int32_t>(config.eos_token_id);
  if (const auto* rows = p.settings()->prefill_rows()) f.prefill_rows.assign(rows->begin(), rows->end());
  if (const auto* rows = p.settings()->decode_rows()) f.decode_rows.assign(rows->begin(), rows->end());
  f.draft_tokens = p.settings()->draft_tokens();
  DSV41_ASSIGN_OR_RETURN(f.dspark, dspark_plan(program0));
  return f;
}

Status run_round_on_session(RankSession& session, const RoundPlan& plan, int slots, int64_t vocab,
                            std::vector<std::vector<float>>* logits, const AfterPhase& after_phase) {
  for (int32_t slot : plan.reset_slots) {
    if (slot < 0 || slot >= slots) return Status::errorf("round {}: reset slot {} outside 0..{}", plan.round, slot, slots - 1);
    session.reset_slot(slot);
  }
  for (const PhaseRun& run : plan.runs) {
    const Phase* phase = session.find_phase(run.phase);
    if (!phase) return Status::errorf("round {}: no phase {} in this program", plan.round, run.phase);
    DSV41_TRY(session.run(*phase, run.statics));
    if (after_phase) DSV41_TRY(after_phase(session, *phase));
    if (!logits) continue;
    for (int32_t row : run.logits_rows) {
      std::vector<float> out(static_cast<size_t>(vocab));
      DSV41_TRY(session.read_logits(*phase, row, 1, out.data()));
      logits->push_back(std::move(out));
    }
  }
  return Status::ok();
}

}  // namespace dsv41
