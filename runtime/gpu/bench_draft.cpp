// runtime/gpu/bench_draft.cpp — the DSpark round of `dsv41-rt bench --draft K`: its phases, its cost and its text.
#include "runtime/gpu/bench_draft.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/dspark_drafter.h"
#include "runtime/gpu/bench_runner.h"

namespace dsv41::gpu {

Result<const Phase*> draft_phase_of(const std::vector<Phase>& phases, int64_t drafts) {
  const Phase* smallest = nullptr;
  std::vector<std::string> planned;
  for (const Phase& p : phases) {
    planned.push_back(p.name);
    if (p.name.rfind(kDraftPhasePrefix, 0) == 0 && (!smallest || p.rows < smallest->rows)) smallest = &p;
  }
  if (!smallest)
    return Status::errorf(
        "--draft {}: the program has no Draft phase (planned: {}); plan it with dsv41c plan "
        "--draft-tokens K for a model with DSpark blocks",
        drafts, fmt::join(planned, ", "));
  if (drafts > smallest->rows)
    return Status::errorf("--draft {}: a round drafts at most {} tokens (the rows of {}, dspark_block_size)", drafts,
                          smallest->rows, smallest->name);
  return smallest;
}

Result<const Phase*> verify_phase_of(const std::vector<Phase>& phases, int64_t drafts) {
  const Phase* best = nullptr;
  std::vector<std::string> planned;
  for (const Phase& p : phases) {
    planned.push_back(p.name);
    if (p.kind == PhaseKind::Decode && p.name.rfind("decode.r", 0) == 0 && p.rows >= drafts + 1 &&
        (!best || p.rows < best->rows))
      best = &p;
  }
  if (!best)
    return Status::errorf("--draft {}: no decode phase holds the {} rows of a round (planned: {})", drafts, drafts + 1,
                          fmt::join(planned, ", "));
  return best;
}

int64_t draft_sequence_rows(const Phase& phase, const std::vector<Phase>& phases, const BenchOptions& o) {
  if (o.draft <= 0 || phase.kind != PhaseKind::Decode) return 0;
  if (phase.name.rfind(kDraftPhasePrefix, 0) == 0)
    return phase.rows;  // draft_phase_of measures the smallest: one block
  auto verify = verify_phase_of(phases, o.draft);
  return verify.is_ok() && (*verify)->name == phase.name ? phase.rows : 0;
}

Result<DraftRound> draft_round(const std::vector<PhaseMeasure>& phases, const BenchOptions& o,
                               const std::string& draft_phase, const std::string& verify_phase) {
  DraftRound round;
  round.drafts = o.draft;
  round.acceptance = o.acceptance;
  round.draft_phase = draft_phase;
  round.verify_phase = verify_phase;
  auto median = [&](const std::string& name) -> Result<double> {
    for (const PhaseMeasure& m : phases)
      if (m.phase == name) {
        if (!m.error.empty()) return Status::errorf("--draft {}: phase {} failed: {}", o.draft, name, m.error);
        return m.ms.median;
      }
    return Status::errorf("--draft {}: phase {} was not measured", o.draft, name);
  };
  DSV41_ASSIGN_OR_RETURN(round.draft_ms, median(round.draft_phase));
  DSV41_ASSIGN_OR_RETURN(round.verify_ms, median(round.verify_phase));
  if (auto serial = median("decode.r1"); serial.is_ok()) {
    round.serial_ms = *serial;
    round.break_even = round.round_ms() / round.serial_ms;
  }
  return round;
}

std::string draft_text(const BenchReport& r) {
  if (!r.draft) return "";
  const DraftRound& d = *r.draft;
  std::string out = fmt::format(
      "\ndrafting    a DSpark round of one sequence with {} drafts: {} {:.3f} ms + {} {:.3f} ms = {:.3f} ms a round\n",
      d.drafts, d.draft_phase, d.draft_ms, d.verify_phase, d.verify_ms, d.round_ms());
  out +=
      "            tokens/s = A / round ms, A the acceptance length (tokens a round yields: the accepted drafts\n"
      "            plus verification's own pick, 1 to drafts + 1; measure it with dsv41-rt generate --draft-tokens)\n";
  std::string by;
  for (int64_t a = 1; a <= d.drafts + 1; ++a)
    by += fmt::format("{}A={} {:.1f}", a == 1 ? "" : ", ", a, d.tokens_per_s(a));
  out += fmt::format("            by acceptance: {}\n", by);
  out += fmt::format("            at A = {:.2f} (--acceptance): {:.1f} tokens/s", d.acceptance,
                     d.tokens_per_s(d.acceptance));
  if (d.serial_ms > 0)
    out += fmt::format(
        ", against serial decode.r1 {:.3f} ms = {:.1f} tokens/s ({:.2f}x); a round breaks even at "
        "A = {:.2f}\n",
        d.serial_ms, 1e3 / d.serial_ms, d.tokens_per_s(d.acceptance) * d.serial_ms * 1e-3, d.break_even);
  else
    out += " (decode.r1 not measured: add 1 to --rows for the serial rate)\n";
  return out;
}

}  // namespace dsv41::gpu
