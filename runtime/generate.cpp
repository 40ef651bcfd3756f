// runtime/generate.cpp — loads a world's programs, starts a World of them on a backend (CPU by default), prefills and decodes greedily round by round.
#include "runtime/generate.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <span>

#include <fmt/ranges.h>

#include "common/model_config.h"
#include "common/program_calls.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/dspark_drafter.h"
#include "runtime/window_fit.h"
#include "runtime/world.h"

namespace dsv41 {
namespace {

namespace fs = std::filesystem;

// What every round of a generation uses: the request and what plan_generation decided from it.
struct Steps {
  const GenerateOptions& options;
  GeneratePlan plan;
  DsparkPlan dspark;  // its Draft phases, when the programs have them
};

// The rank number in a "rank{N}.fb" file name, or -1.
int rank_of_file_name(const std::string& name) {
  if (name.size() < 8 || name.rfind("rank", 0) != 0 || name.substr(name.size() - 3) != ".fb") return -1;
  const std::string digits = name.substr(4, name.size() - 7);
  if (digits.empty() || digits.size() > 4 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  if (digits.size() > 1 && digits[0] == '0') return -1;
  return std::stoi(digits);
}

// One segment of the prompt (or one decode step) as a run of `rows` rows: `tokens` of slot 0 from
// position `begin`, the rows beyond them padding; the last token's logits, or every token's.
PhaseRun segment_run(const std::string& phase, int64_t rows, std::span<const int32_t> tokens, int64_t begin,
                     bool all_logits) {
  PhaseRun run = padded_run(phase, rows);
  write_sequence_rows(run, 0, 0, begin, tokens);
  const auto active = static_cast<int64_t>(tokens.size());
  for (int64_t r = all_logits ? 0 : active - 1; r < active; ++r) run.logits_rows.push_back(static_cast<int32_t>(r));
  return run;
}

// Decodes with drafting: each round feeds the pending token and its drafts (the Draft phase's, or prompt
// lookup's when the programs have none) through one decode window and keeps what accept_drafts keeps;
// rejected rows need no undo (positions are rewritten).
Status drive_drafted(RoundRunner& world, const Steps& steps, uint64_t round, int32_t pending, GenerateResult& out) {
  const GenerateOptions& o = steps.options;
  std::vector<int32_t> sequence = o.prompt;
  const TokenChooser greedy = [&](const std::vector<float>& logits, int64_t) {
    return greedy_token(logits.data(), steps.plan.vocab);
  };
  for (int64_t position = static_cast<int64_t>(o.prompt.size()); o.max_tokens > 0;) {
    out.tokens.push_back(pending);
    sequence.push_back(pending);
    const auto emitted = static_cast<int64_t>(out.tokens.size());
    if (pending == steps.plan.eos || emitted >= o.max_tokens) break;
    // Never draft past max_tokens: positions beyond it may lie outside the planned context.
    const int64_t k = std::min(o.draft_tokens, o.max_tokens - emitted - 1);
    std::vector<int32_t> drafts;
    if (o.drafter) {
      drafts = o.drafter(sequence, k);
    } else if (steps.dspark.enabled() && k > 0) {  // the model's draft blocks, from the pending token
      const std::vector<DraftSeat> seats{{0, position, pending}};
      DSV41_ASSIGN_OR_RETURN(auto proposed, dspark_drafts(world, steps.dspark, round++, seats, k));
      drafts = std::move(proposed[0]);
    } else {
      drafts = lookup_drafts(sequence, k);
    }
    if (static_cast<int64_t>(drafts.size()) > k) drafts.resize(static_cast<size_t>(k));
    // plan_generation checked that the largest bucket holds draft_tokens + 1 rows.
    const int64_t bucket = smallest_holding(steps.plan.decode_rows, static_cast<int64_t>(drafts.size()) + 1);
    RoundPlan plan;
    plan.round = round++;
    PhaseRun run = padded_run(fmt::format("decode.r{}", bucket), bucket);
    append_verify_rows(run, 0, 0, position, pending, drafts);
    plan.runs.push_back(std::move(run));
    DSV41_ASSIGN_OR_RETURN(auto logits, world.run(plan));
    const std::vector<int32_t> chosen = accept_drafts(logits, drafts, position + 1, greedy);
    out.drafting.add(static_cast<int64_t>(drafts.size()), static_cast<int64_t>(chosen.size()) - 1);
    // chosen[0..m-1] equal the drafts fed at position + 1 .. m: they are in the state already. As in
    // serial decoding, logits[i] are the ones that chose token i.
    for (size_t j = 0; j + 1 < chosen.size(); ++j) {
      out.logits.push_back(std::move(logits[j]));
      out.tokens.push_back(chosen[j]);
      sequence.push_back(chosen[j]);
      if (chosen[j] == steps.plan.eos || static_cast<int64_t>(out.tokens.size()) >= o.max_tokens) return Status::ok();
    }
    position += static_cast<int64_t>(chosen.size());
    pending = chosen.back();
    out.logits.push_back(std::move(logits[chosen.size() - 1]));
  }
  return Status::ok();
}

// Prefills then decodes greedily, one round per segment or step; rank 0's logits choose each token.
Status drive(RoundRunner& world, const Steps& steps, GenerateResult& out) {
  const int64_t prompt_rows = static_cast<int64_t>(steps.options.prompt.size()), n = steps.plan.segment_rows;
  std::vector<float> last;
  uint64_t round = 0;
  for (int64_t begin = 0; begin < prompt_rows; begin += n) {
    RoundPlan plan;
    plan.round = round++;
    if (begin == 0) plan.reset_slots = {0};
    const std::span<const int32_t> piece(steps.options.prompt.data() + begin,
                                         static_cast<size_t>(std::min(prompt_rows, begin + n) - begin));
    plan.runs.push_back(segment_run(steps.plan.prefill_phase, n, piece, begin, steps.options.all_logits));
    DSV41_ASSIGN_OR_RETURN(auto rows, world.run(plan));
    last = rows.back();
    if (steps.options.all_logits)
      for (auto& row : rows) out.logits.push_back(std::move(row));
  }
  if (!steps.options.all_logits) out.logits.push_back(last);

  if (steps.options.draft_tokens > 0) return drive_drafted(world, steps, round, greedy_token(last.data(), steps.plan.vocab), out);
  int32_t next = greedy_token(last.data(), steps.plan.vocab);
  for (int64_t position = prompt_rows; steps.options.max_tokens > 0; ++position) {
    out.tokens.push_back(next);
    if (next == steps.plan.eos || static_cast<int>(out.tokens.size()) >= steps.options.max_tokens) break;
    RoundPlan plan;
    plan.round = round++;
    plan.runs.push_back(segment_run("decode.r1", 1, std::span<const int32_t>(&next, 1), position, false));
    DSV41_ASSIGN_OR_RETURN(auto rows, world.run(plan));
    next = greedy_token(rows[0].data(), steps.plan.vocab);
    out.logits.push_back(std::move(rows[0]));
  }
  return Status::ok();
}

// A phase the plan needs, named with the phases the program has when missing.
Status check_phase_in(const ProgramFile& program, const std::string& name, int64_t rows) {
  auto calls = read_call_lists(program.program());
  if (!calls.is_ok()) return calls.status().with_context(program.source());
  std::vector<std::string> names;
  for (const Phase& p : calls->phases) {
    if (p.name == name) {
      if (p.rows != rows) return Status::errorf("{}: phase {} has {} rows, expected {}", program.source(), name, p.rows, rows);
      return Status::ok();
    }
    names.push_back(p.name);
  }
  return Status::errorf("{}: no phase {} (phases: {})", program.source(), name,
                        names.empty() ? std::string("none; was it planned without call lists?")
                                      : fmt::format("{}", fmt::join(names, ", ")));
}

}  // namespace

Status check_generation_phases(const GeneratePlan& plan, int max_tokens, const ProgramFile& program) {
  DSV41_TRY(check_phase_in(program, plan.prefill_phase, plan.segment_rows));
  if (max_tokens > 1) DSV41_TRY(check_phase_in(program, "decode.r1", 1));
  return Status::ok();
}

Result<GenerateResult> generate_on(RoundRunner& rounds, const GenerateOptions& options, const GeneratePlan& plan) {
  const Steps steps{options, plan, rounds.facts().dspark};
  GenerateResult result;
  if (options.draft_tokens > 0) result.drafter = options.drafter ? "the given drafter" : steps.dspark.drafter();
  DSV41_TRY(drive(rounds, steps, result));
  return result;
}

int32_t greedy_token(const float* logits, int64_t n) {
  int32_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > logits[best] || (logits[best] != logits[best] && logits[i] == logits[i])) best = static_cast<int32_t>(i);
  return best;
}

Result<GeneratePlan> plan_generation(const GenerateOptions& options, const ProgramFile& program0) {
  const fb::Program& p = program0.program();
  DSV41_ASSIGN_OR_RETURN(ModelConfig config, parse_model_config(p.config_json()->str(), program0.source()));
  GeneratePlan plan;
  plan.eos = options.stop_at_eos ? static_cast<int32_t>(config.eos_token_id) : -1;
  plan.vocab = config.vocab_size;
  if (options.prompt.empty()) return Status::error("prompt: empty; give at least one token id");
  for (size_t i = 0; i < options.prompt.size(); ++i)
    if (options.prompt[i] < 0 || options.prompt[i] >= config.vocab_size)
      return Status::errorf("prompt[{}]: token id {} outside the vocabulary 0..{} (vocab_size {})", i, options.prompt[i],
                            config.vocab_size - 1, config.vocab_size);
  if (options.max_tokens < 0) return Status::errorf("max tokens {}: must be 0 or more", options.max_tokens);
  const int64_t context = p.settings()->context();
  const int64_t needed = static_cast<int64_t>(options.prompt.size()) + options.max_tokens;
  if (needed > context)
    return Status::errorf("prompt of {} tokens + max tokens {} = {} positions exceeds the planned context {} of {}",
                          options.prompt.size(), options.max_tokens, needed, context, program0.source());
  if (const auto* buckets = p.settings()->decode_rows()) plan.decode_rows.assign(buckets->begin(), buckets->end());
  if (options.draft_tokens < 0 || options.draft_tokens > p.settings()->draft_tokens())
    return Status::errorf("draft tokens {}: must be between 0 and the {} planned in {} (dsv41c plan --draft-tokens)",
                          options.draft_tokens, p.settings()->draft_tokens(), program0.source());
  if (options.draft_tokens > 0 && (plan.decode_rows.empty() || plan.decode_rows.back() < options.draft_tokens + 1))
    return Status::errorf("draft tokens {}: {} plans no decode window of {} rows", options.draft_tokens,
                          program0.source(), options.draft_tokens + 1);
  const auto* planned = p.settings()->prefill_rows();
  const std::vector<int64_t> sizes = planned ? std::vector<int64_t>(planned->begin(), planned->end()) : std::vector<int64_t>{};
  const std::string listed = sizes.empty() ? std::string("none") : fmt::format("{}", fmt::join(sizes, ", "));
  if (options.segment_rows < 0) return Status::errorf("segment rows {}: must be 0 (the default), 1 or a planned prefill size ({})", options.segment_rows, listed);
  plan.segment_rows = options.segment_rows == 0 ? (sizes.empty() ? 0 : sizes[0]) : options.segment_rows;
  if (plan.segment_rows == 1) {
    plan.prefill_phase = "decode.r1";
  } else if (std::find(sizes.begin(), sizes.end(), plan.segment_rows) != sizes.end()) {
    plan.prefill_phase = fmt::format("prefill.n{}", plan.segment_rows);
  } else {
    return Status::errorf("segment rows {}: not a planned prefill size of {} (planned: {}; 1 runs token by token)",
                          options.segment_rows, program0.source(), listed);
  }
  return plan;
}


Result<std::vector<ProgramFile>> load_world_programs(const std::string& program_dir) {
  std::error_code ec;
  if (!fs::is_directory(program_dir, ec)) return Status::errorf("{}: not a folder of rank*.fb programs", program_dir);
  std::map<int, fs::path> files;
  for (const auto& entry : fs::directory_iterator(program_dir, ec)) {
    const int rank = rank_of_file_name(entry.path().filename().string());
    if (rank >= 0) files[rank] = entry.path();
  }
  if (ec) return Status::errorf("{}: cannot list: {}", program_dir, ec.message());
  if (files.empty())
    return Status::errorf("{}: no rank*.fb programs (write them with `dsv41c plan MODEL_DIR --world W --out {}`)",
                          program_dir, program_dir);
  if (!files.count(0)) return Status::errorf("{}: missing; every world has a rank 0", (fs::path(program_dir) / "rank0.fb").string());
  std::vector<ProgramFile> programs;
  DSV41_ASSIGN_OR_RETURN(ProgramFile first, ProgramFile::load(files[0].string()));
  const int world = first.program().world();
  const uint64_t agreement = first.program().agreement_digest();
  programs.push_back(std::move(first));
  for (const auto& [rank, path] : files)
    if (rank >= world)
      return Status::errorf("{}: rank {} is outside world {} of rank0.fb (a program of another plan?)", path.string(),
                            rank, world);
  for (int rank = 1; rank < world; ++rank) {
    const fs::path path = fs::path(program_dir) / fmt::format("rank{}.fb", rank);
    if (!files.count(rank))
      return Status::errorf("{}: missing; rank0.fb is of world {}, which needs rank0.fb .. rank{}.fb", path.string(),
                            world, world - 1);
    DSV41_ASSIGN_OR_RETURN(ProgramFile file, ProgramFile::load(path.string()));
    const fb::Program& p = file.program();
    if (p.world() != world)
      return Status::errorf("{}: world {}, but rank0.fb has world {}", path.string(), p.world(), world);
    if (p.rank() != rank) return Status::errorf("{}: holds rank {}, its name says rank {}", path.string(), p.rank(), rank);
    if (p.agreement_digest() != agreement)
      return Status::errorf("{}: agreement_digest {:016x}, but rank0.fb has {:016x}; plan every rank of a world "
                            "together (one `dsv41c plan --rank all`)", path.string(), p.agreement_digest(), agreement);
    programs.push_back(std::move(file));
  }
  if (programs[0].program().rank() != 0)
    return Status::errorf("{}: holds rank {}, its name says rank 0", programs[0].source(), programs[0].program().rank());
  return programs;
}

Result<GenerateResult> generate(const GenerateOptions& options) {
  DSV41_ASSIGN_OR_RETURN(std::vector<ProgramFile> programs, load_world_programs(options.program_dir));
  DSV41_ASSIGN_OR_RETURN(GeneratePlan plan, plan_generation(options, programs[0]));
  for (const ProgramFile& program : programs) DSV41_TRY(check_generation_phases(plan, options.max_tokens, program));
  const int world_size = static_cast<int>(programs.size());
  DSV41_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, cpu::make_backend(options.backend, options.model_dir, world_size));
  DSV41_ASSIGN_OR_RETURN(std::unique_ptr<World> world, World::start(std::move(programs), std::move(backend)));
  return generate_on(*world, options, plan);
}

}  // namespace dsv41
