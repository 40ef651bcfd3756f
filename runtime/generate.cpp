// runtime/generate.cpp — loads a world's programs, runs one RankSession per rank on its own thread, prefills, decodes greedily.
#include "runtime/generate.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/ranges.h>

#include "common/model_config.h"
#include "runtime/cpu/cpu_session.h"
#include "runtime/exchange.h"

namespace dsv41 {
namespace {

namespace fs = std::filesystem;

// What every rank runs, decided once before the threads start.
struct Steps {
  std::string model_dir;
  std::vector<int32_t> prompt;
  std::string prefill_phase;  // "prefill.nN" or "decode.r1"
  int64_t segment_rows = 0;
  int max_tokens = 0;
  bool stop_at_eos = true, all_logits = false;
  int32_t eos = -1;
  int64_t vocab = 0;
};

// The CPU backend as a Backend: each rank a CpuSession, one in-process exchange.
class CpuRankSession final : public RankSession {
 public:
  explicit CpuRankSession(std::unique_ptr<cpu::CpuSession> session) : session_(std::move(session)) {}
  int rank() const override { return session_->rank(); }
  const std::vector<Phase>& phases() const override { return session_->phases(); }
  const Phase* find_phase(const std::string& name) const override { return session_->find_phase(name); }
  Status run(const Phase& phase, const std::vector<int32_t>& statics) override { return session_->run(phase, statics); }
  Status read_logits(const Phase& phase, int64_t first_row, int64_t rows, float* out) override {
    DSV41_ASSIGN_OR_RETURN(cpu::TensorView view, session_->output(phase, "logits"));
    const int64_t vocab = session_->config().vocab_size;
    if (view.dtype != DType::F32 || view.numel() != phase.rows * vocab)
      return Status::errorf("phase {}: logits buffer is {} [{}], expected F32 [{}, {}]", phase.name,
                            dtype_name(view.dtype), fmt::join(view.shape, ", "), phase.rows, vocab);
    if (first_row < 0 || rows < 0 || first_row + rows > phase.rows)
      return Status::errorf("phase {}: logits rows [{}, {}) outside 0..{}", phase.name, first_row, first_row + rows, phase.rows);
    std::memcpy(out, view.data + first_row * vocab * 4, static_cast<size_t>(rows * vocab) * 4);
    return Status::ok();
  }
  void reset_slot(int slot) override { session_->reset_slot(slot); }

 private:
  std::unique_ptr<cpu::CpuSession> session_;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(int world, std::string model_dir) : exchange_(world), model_dir_(std::move(model_dir)) {}
  Result<std::unique_ptr<RankSession>> create(const ProgramFile& program) override {
    DSV41_ASSIGN_OR_RETURN(auto session, cpu::CpuSession::create(program, model_dir_, exchange_));
    return std::unique_ptr<RankSession>(std::make_unique<CpuRankSession>(std::move(session)));
  }
  void abort(const std::string& reason) override { exchange_.abort(reason); }

 private:
  InProcessExchange exchange_;
  std::string model_dir_;
};

// The rank number in a "rank{N}.fb" file name, or -1.
int rank_of_file_name(const std::string& name) {
  if (name.size() < 8 || name.rfind("rank", 0) != 0 || name.substr(name.size() - 3) != ".fb") return -1;
  const std::string digits = name.substr(4, name.size() - 7);
  if (digits.empty() || digits.size() > 4 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  if (digits.size() > 1 && digits[0] == '0') return -1;
  return std::stoi(digits);
}

Result<const Phase*> phase_named(const RankSession& session, const std::string& name, int64_t rows,
                                 const std::string& source) {
  const Phase* phase = session.find_phase(name);
  if (!phase) {
    std::vector<std::string> names;
    for (const Phase& p : session.phases()) names.push_back(p.name);
    return Status::errorf("{}: no phase {} (phases: {})", source, name,
                          names.empty() ? std::string("none; was it planned without call lists?")
                                        : fmt::format("{}", fmt::join(names, ", ")));
  }
  if (phase->rows != rows) return Status::errorf("{}: phase {} has {} rows, expected {}", source, name, phase->rows, rows);
  return phase;
}

// Row `row` of the phase's "logits" buffer, F32 [rows, vocab].
Result<std::vector<float>> logits_row(RankSession& session, const Phase& phase, int64_t row, int64_t vocab) {
  std::vector<float> out(static_cast<size_t>(vocab));
  DSV41_TRY(session.read_logits(phase, row, 1, out.data()));
  return out;
}

// One rank's whole generation. Every rank runs exactly the same phases in the same order, so the
// collectives inside them pair up; only rank 0 keeps logits.
Status run_rank(const ProgramFile& program, const Steps& steps, Backend& backend, GenerateResult& out) {
  DSV41_ASSIGN_OR_RETURN(std::unique_ptr<RankSession> session, backend.create(program));
  const bool keep_logits = session->rank() == 0;
  DSV41_ASSIGN_OR_RETURN(const Phase* prefill, phase_named(*session, steps.prefill_phase, steps.segment_rows,
                                                           program.source()));
  const Phase* decode = nullptr;
  if (steps.max_tokens > 1) {
    DSV41_ASSIGN_OR_RETURN(decode, phase_named(*session, "decode.r1", 1, program.source()));
  }
  session->reset_slot(0);

  const int64_t prompt_rows = static_cast<int64_t>(steps.prompt.size()), n = steps.segment_rows;
  std::vector<float> last;
  for (int64_t begin = 0; begin < prompt_rows; begin += n) {
    std::vector<int32_t> statics(static_cast<size_t>(n * kStaticsFields), 0);
    const int64_t active = std::min(n, prompt_rows - begin);
    for (int64_t r = 0; r < n; ++r) {
      int32_t* row = statics.data() + r * kStaticsFields;
      if (r < active) {
        row[kStaticToken] = steps.prompt[begin + r];
        row[kStaticSlot] = 0;
        row[kStaticPosition] = static_cast<int32_t>(begin + r);
      } else {
        row[kStaticSlot] = -1;  // beyond the prompt: inactive
      }
      row[kStaticFirstRow] = 0;  // every row of the segment belongs to the one sequence
    }
    DSV41_TRY(session->run(*prefill, statics));
    for (int64_t r = steps.all_logits && keep_logits ? 0 : active - 1; r < active; ++r) {
      DSV41_ASSIGN_OR_RETURN(std::vector<float> row, logits_row(*session, *prefill, r, steps.vocab));
      if (r == active - 1) last = row;
      if (steps.all_logits && keep_logits) out.logits.push_back(std::move(row));
    }
  }
  if (!steps.all_logits && keep_logits) out.logits.push_back(last);

  int32_t next = greedy_token(last.data(), steps.vocab);
  for (int64_t position = prompt_rows; steps.max_tokens > 0; ++position) {
    out.tokens.push_back(next);
    if ((steps.stop_at_eos && next == steps.eos) || static_cast<int>(out.tokens.size()) >= steps.max_tokens) break;
    const std::vector<int32_t> statics = {next, 0, static_cast<int32_t>(position), 0};
    DSV41_TRY(session->run(*decode, statics));
    DSV41_ASSIGN_OR_RETURN(std::vector<float> row, logits_row(*session, *decode, 0, steps.vocab));
    next = greedy_token(row.data(), steps.vocab);
    if (keep_logits) out.logits.push_back(std::move(row));
  }
  return Status::ok();
}

// Checks the request against the world's config and settings and decides the steps.
Result<Steps> plan_steps(const GenerateOptions& options, const ProgramFile& program0) {
  const fb::Program& p = program0.program();
  DSV41_ASSIGN_OR_RETURN(ModelConfig config, parse_model_config(p.config_json()->str(), program0.source()));
  Steps steps;
  steps.model_dir = options.model_dir;
  steps.prompt = options.prompt;
  steps.max_tokens = options.max_tokens;
  steps.stop_at_eos = options.stop_at_eos;
  steps.all_logits = options.all_logits;
  steps.eos = static_cast<int32_t>(config.eos_token_id);
  steps.vocab = config.vocab_size;
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
  const auto* planned = p.settings()->prefill_rows();
  const std::vector<int64_t> sizes = planned ? std::vector<int64_t>(planned->begin(), planned->end()) : std::vector<int64_t>{};
  const std::string listed = sizes.empty() ? std::string("none") : fmt::format("{}", fmt::join(sizes, ", "));
  if (options.segment_rows < 0) return Status::errorf("segment rows {}: must be 0 (the default), 1 or a planned prefill size ({})", options.segment_rows, listed);
  steps.segment_rows = options.segment_rows == 0 ? (sizes.empty() ? 0 : sizes[0]) : options.segment_rows;
  if (steps.segment_rows == 1) {
    steps.prefill_phase = "decode.r1";
  } else if (std::find(sizes.begin(), sizes.end(), steps.segment_rows) != sizes.end()) {
    steps.prefill_phase = fmt::format("prefill.n{}", steps.segment_rows);
  } else {
    return Status::errorf("segment rows {}: not a planned prefill size of {} (planned: {}; 1 runs token by token)",
                          options.segment_rows, program0.source(), listed);
  }
  return steps;
}

}  // namespace

int32_t greedy_token(const float* logits, int64_t n) {
  int32_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > logits[best] || (logits[best] != logits[best] && logits[i] == logits[i])) best = static_cast<int32_t>(i);
  return best;
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
  DSV41_ASSIGN_OR_RETURN(const Steps steps, plan_steps(options, programs[0]));
  const int world = static_cast<int>(programs.size());
  std::unique_ptr<Backend> backend;
  if (options.backend) {
    DSV41_ASSIGN_OR_RETURN(backend, options.backend(world));
  } else {
    backend = std::make_unique<CpuBackend>(world, options.model_dir);
  }
  std::mutex failure_mutex;
  std::string first_failure;
  std::vector<GenerateResult> results(world);
  std::vector<Status> statuses(world);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank)
    threads.emplace_back([&, rank] {
      Status status;
      try {
        status = run_rank(programs[rank], steps, *backend, results[rank]);
      } catch (const std::exception& e) {
        status = Status::errorf("threw: {}", e.what());
      }
      // The first failure aborts the exchange, waking every rank blocked in a collective; its
      // message is the one reported. Ranks that fail because of the abort add nothing.
      if (!status.is_ok()) {
        const std::string reason = fmt::format("rank {}: {}", rank, status.message());
        {
          std::lock_guard lock(failure_mutex);
          if (first_failure.empty()) first_failure = reason;
        }
        backend->abort(reason);
      }
      statuses[rank] = status;
    });
  for (std::thread& t : threads) t.join();
  for (const Status& status : statuses)
    if (!status.is_ok()) return Status::error(first_failure);
  for (int rank = 1; rank < world; ++rank)
    if (results[rank].tokens != results[0].tokens)
      return Status::errorf("rank {} chose tokens [{}] but rank 0 chose [{}]: ranks must hold the same logits (a bug "
                            "in an exchange or an op)", rank, fmt::join(results[rank].tokens, " "),
                            fmt::join(results[0].tokens, " "));
  return std::move(results[0]);
}

}  // namespace dsv41
