// runtime/gpu/bench_plan.cpp — the bench's option checks, phase choice and statics.
#include "runtime/gpu/bench_plan.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/gpu/bench_draft.h"
#include "runtime/phase_checks.h"

namespace dsv41::gpu {

Status check_bench_options(const BenchOptions& o) {
  if (o.backend != "cuda")
    return Status::errorf("--backend {}: bench measures the CUDA backend only (the CPU backend is the oracle, "
                          "not a speed to report); use --backend cuda", o.backend);
  if (o.rows.empty() && o.prefill.empty()) return Status::error("--rows and --prefill are both empty: nothing to measure");
  for (int64_t r : o.rows)
    if (r < 1) return Status::errorf("--rows {}: a decode row count must be at least 1", r);
  for (int64_t n : o.prefill)
    if (n < 1) return Status::errorf("--prefill {}: a prefill segment size must be at least 1", n);
  if (o.fill < 0) return Status::errorf("--fill {}: must be at least 0", o.fill);
  if (o.replays < 1) return Status::errorf("--replays {}: must be at least 1", o.replays);
  if (o.warmup < 0) return Status::errorf("--warmup {}: must be at least 0", o.warmup);
  if (o.draft < 0) return Status::errorf("--draft {}: must be at least 0 (0: no drafting round)", o.draft);
  if (o.draft > 0 && !(o.acceptance >= 1 && o.acceptance <= o.draft + 1))
    return Status::errorf("--acceptance {}: a round of {} drafts yields 1 to {} tokens", o.acceptance, o.draft, o.draft + 1);
  if (!(o.phase_seconds > 0)) return Status::errorf("--phase-seconds {}: must be above 0", o.phase_seconds);
  if (o.roofline_mib < 256)
    return Status::errorf("--roofline-mib {}: must be at least 256 (the buffer must dwarf the L2 cache)", o.roofline_mib);
  if (!o.synthetic_seed && o.model_dir.empty())
    return Status::error("no weights: give --model DIR (the shards the program was planned from) or --synthetic-weights SEED");
  return Status::ok();
}

Status check_bench_world(const std::string& program, int world, int rank, bool alone, bool with_peers) {
  if (with_peers && alone)
    return Status::errorf("{}: --alone with --master: a rank runs alone or with its peers, not both", program);
  if (world > 1 && !alone && !with_peers)
    return Status::errorf("{}: rank {} of world {}: bench runs one rank in this process; pass --alone to measure this "
                          "rank by itself (the per-rank case: its own compute, exchanges without peers, logits "
                          "meaningless), run every rank as a process (`dsv41-rt launch --gpus 0,1 bench DIR ...`), or "
                          "plan the model at --world 1",
                          program, rank, world);
  if (world == 1 && alone)
    return Status::errorf("{}: --alone is for one rank of a bigger world, but this program is world 1", program);
  return Status::ok();
}

std::string bench_agreement(const BenchOptions& o) {
  return fmt::format("bench rows [{}], prefill [{}], fill {}, replays {}, warmup {}, per-op {}", fmt::join(o.rows, ", "),
                     fmt::join(o.prefill, ", "), o.fill, o.replays, o.warmup, o.per_op ? "on" : "off");
}

Result<std::vector<const Phase*>> pick_bench_phases(const std::vector<Phase>& phases, const BenchOptions& o) {
  std::vector<std::string> planned;
  for (const Phase& p : phases) planned.push_back(p.name);
  std::vector<const Phase*> picked;
  auto pick = [&](const std::string& name, const char* flag, int64_t value) -> Status {
    const Phase* p = find_phase_in(phases, name);
    if (!p)
      return Status::errorf("{} {}: the program has no phase {} (planned: {}); re-plan with dsv41c plan --decode-rows/"
                            "--prefill-rows", flag, value, name, fmt::join(planned, ", "));
    picked.push_back(p);
    return Status::ok();
  };
  for (int64_t r : o.rows) DSV41_TRY(pick(fmt::format("decode.r{}", r), "--rows", r));
  for (int64_t n : o.prefill) DSV41_TRY(pick(fmt::format("prefill.n{}", n), "--prefill", n));
  if (o.draft > 0) {
    DSV41_ASSIGN_OR_RETURN(const Phase* draft, draft_phase_of(phases, o.draft));
    picked.push_back(draft);
    DSV41_ASSIGN_OR_RETURN(const Phase* verify, verify_phase_of(phases, o.draft));
    if (std::find(picked.begin(), picked.end(), verify) == picked.end()) picked.push_back(verify);
  }
  return picked;
}

Result<std::vector<int32_t>> bench_statics(const Phase& phase, int64_t fill, int64_t slots, int64_t context,
                                           int64_t vocab, int64_t sequence_rows) {
  const int64_t rows = phase.rows;
  DSV41_CHECK(rows >= 1 && slots >= 1 && vocab >= 1);
  const bool prefill = phase.kind == PhaseKind::Prefill;
  const int64_t per_slot = prefill ? rows : sequence_rows > 0 ? sequence_rows : (rows + slots - 1) / slots;
  if (fill + per_slot > context)
    return Status::errorf("--fill {}: phase {} puts {} row{} of a sequence at positions {} .. {}, past the context of {} "
                          "tokens (use a fill of at most {})",
                          fill, phase.name, per_slot, per_slot == 1 ? "" : "s", fill, fill + per_slot - 1, context,
                          context - per_slot);
  std::vector<int32_t> statics(static_cast<size_t>(rows * kStaticsFields));
  for (int64_t r = 0; r < rows; ++r) {
    int32_t* s = &statics[static_cast<size_t>(r * kStaticsFields)];
    s[kStaticToken] = static_cast<int32_t>((17 + 7919 * r) % vocab);
    s[kStaticSlot] = static_cast<int32_t>(r / per_slot);
    s[kStaticPosition] = static_cast<int32_t>(fill + r % per_slot);
    s[kStaticFirstRow] = static_cast<int32_t>(r / per_slot * per_slot);
  }
  return statics;
}

}  // namespace dsv41::gpu
