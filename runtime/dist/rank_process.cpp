// runtime/dist/rank_process.cpp — one rank per process: join the world, boot this rank's session (CPU or CUDA), then lead (rank 0) or follow.
#include "runtime/dist/rank_process.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fmt/ranges.h>

#include "common/hashing.h"
#include "common/model_config.h"
#include "runtime/dist/control.h"
#include "runtime/dist/rank_backend.h"

namespace dsv41::dist {
namespace {

namespace fs = std::filesystem;

Result<ProgramFile> load_rank_program(const RankProcessOptions& o) {
  std::error_code ec;
  const std::string path = fs::is_directory(o.generate.program_dir, ec)
                               ? (fs::path(o.generate.program_dir) / fmt::format("rank{}.fb", o.rank)).string()
                               : o.generate.program_dir;
  DSV41_ASSIGN_OR_RETURN(ProgramFile program, ProgramFile::load(path));
  if (program.program().rank() != o.rank || program.program().world() != o.world)
    return Status::errorf("{}: holds rank {} of world {}, but this process is --rank {} --world {}", path,
                          program.program().rank(), program.program().world(), o.rank, o.world);
  return program;
}

std::vector<uint8_t> run_phase_payload(const std::string& phase, const std::vector<int32_t>& statics) {
  return PayloadWriter().str(phase).i32s(statics).take();
}

// With --logits-digests: this rank's whole logits buffer after each phase (XXH3 of its bytes), as one line on stderr, so
// a test can see that every rank holds the same bits.
Status report_digest(const RankProcessOptions& o, RankSession& session, const Phase& phase, int step) {
  if (!o.logits_digests || phase.rows <= 0) return Status::ok();
  const auto vocab_row = std::find_if(phase.buffers.begin(), phase.buffers.end(),
                                       [](const BufferDecl& b) { return b.name == "logits"; });
  if (vocab_row == phase.buffers.end()) return Status::ok();
  std::vector<float> all(vocab_row->bytes / sizeof(float));
  DSV41_TRY(session.read_logits(phase, 0, phase.rows, all.data()));
  std::fprintf(stderr, "dsv41-rt: rank %d: step %d %s logits digest %s\n", session.rank(), step, phase.name.c_str(),
               hex64(hash_bytes(all.data(), all.size() * sizeof(float))).c_str());
  return Status::ok();
}

// What rank 0 drives: the phases and statics of every step, checked against the planned settings.
class Leader {
 public:
  Leader(Control& control, RankSession& session, const RankProcessOptions& o)
      : control_(control), session_(session), options_(o) {}

  // Every follower first, then this rank: the followers' collectives wait on rank 0's.
  Status run(const std::string& name, const std::vector<int32_t>& statics) {
    const Phase* phase = session_.find_phase(name);
    if (!phase) return Status::errorf("no phase {} in rank 0's program", name);
    DSV41_TRY(control_.broadcast(FrameType::RunPhase, run_phase_payload(name, statics)));
    DSV41_TRY(session_.run(*phase, statics));
    return report_digest(options_, session_, *phase, ++steps_);
  }

  Result<std::vector<float>> logits(const std::string& name, int64_t row, int64_t vocab) {
    const Phase* phase = session_.find_phase(name);
    std::vector<float> out(static_cast<size_t>(vocab));
    DSV41_TRY(session_.read_logits(*phase, row, 1, out.data()));
    return out;
  }

 private:
  Control& control_;
  RankSession& session_;
  const RankProcessOptions& options_;
  int steps_ = 0;
};

Result<GenerateResult> lead(const RankProcessOptions& o, const GeneratePlan& plan, Control& control,
                            RankSession& session) {
  Leader leader(control, session, o);
  GenerateResult out;
  DSV41_TRY(control.broadcast(FrameType::ResetSlot, PayloadWriter().u32(0).take()));
  session.reset_slot(0);
  const std::vector<int32_t>& prompt = o.generate.prompt;
  const int64_t rows = static_cast<int64_t>(prompt.size()), n = plan.segment_rows;
  std::vector<float> last;
  for (int64_t begin = 0; begin < rows; begin += n) {
    std::vector<int32_t> statics(static_cast<size_t>(n * kStaticsFields), 0);
    const int64_t active = std::min(n, rows - begin);
    for (int64_t r = 0; r < n; ++r) {
      int32_t* row = statics.data() + r * kStaticsFields;
      row[kStaticToken] = r < active ? prompt[begin + r] : 0;
      row[kStaticSlot] = r < active ? 0 : -1;
      row[kStaticPosition] = r < active ? static_cast<int32_t>(begin + r) : 0;
    }
    DSV41_TRY(leader.run(plan.prefill_phase, statics));
    for (int64_t r = o.generate.all_logits ? 0 : active - 1; r < active; ++r) {
      DSV41_ASSIGN_OR_RETURN(std::vector<float> row, leader.logits(plan.prefill_phase, r, plan.vocab));
      if (r == active - 1) last = row;
      if (o.generate.all_logits) out.logits.push_back(std::move(row));
    }
  }
  if (!o.generate.all_logits) out.logits.push_back(last);
  int32_t next = greedy_token(last.data(), plan.vocab);
  for (int64_t position = rows; o.generate.max_tokens > 0; ++position) {
    out.tokens.push_back(next);
    if (next == plan.eos || static_cast<int>(out.tokens.size()) >= o.generate.max_tokens) break;
    if (o.on_decode_step) o.on_decode_step(static_cast<int>(out.tokens.size()));
    if (o.step_pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.step_pause_ms));
    DSV41_TRY(leader.run("decode.r1", {next, 0, static_cast<int32_t>(position), 0}));
    DSV41_ASSIGN_OR_RETURN(std::vector<float> row, leader.logits("decode.r1", 0, plan.vocab));
    next = greedy_token(row.data(), plan.vocab);
    out.logits.push_back(std::move(row));
  }
  DSV41_TRY(control.stop());
  return out;
}

Status follow(const RankProcessOptions& o, Control& control, RankSession& session, int slots) {
  for (int steps = 0;;) {
    DSV41_ASSIGN_OR_RETURN(Frame frame, control.next_command());
    const std::string what = fmt::format("rank 0's {}", frame_type_name(static_cast<uint16_t>(frame.type)));
    PayloadReader r(frame.payload, what);
    switch (frame.type) {
      case FrameType::Stop:
        return control.stop();
      case FrameType::ResetSlot: {
        const uint32_t slot = r.u32("slot");
        DSV41_TRY(r.finish());
        if (slot >= static_cast<uint32_t>(slots))
          return Status::errorf("{}: slot {} outside 0..{}", what, slot, slots - 1);
        session.reset_slot(static_cast<int>(slot));
        break;
      }
      case FrameType::RunPhase: {
        const std::string name = r.str("phase");
        const std::vector<int32_t> statics = r.i32s("statics");
        DSV41_TRY(r.finish());
        const Phase* phase = session.find_phase(name);
        if (!phase) return Status::errorf("{}: no phase {} in this rank's program", what, name);
        DSV41_TRY(session.run(*phase, statics));
        DSV41_TRY(report_digest(o, session, *phase, ++steps));
        break;
      }
      default:
        return Status::errorf("{}: not a command a generate follower takes (RunPhase, ResetSlot, Stop)", what);
    }
  }
}

}  // namespace

Result<GenerateResult> generate_as_rank(const RankProcessOptions& o) {
  DSV41_ASSIGN_OR_RETURN(ProgramFile program, load_rank_program(o));
  ControlOptions control_options;
  control_options.rank = o.rank;
  control_options.world = o.world;
  DSV41_ASSIGN_OR_RETURN(control_options.master, parse_host_port(o.master, "--master"));
  control_options.connect_timeout_ms = o.connect_timeout_ms;
  control_options.watchdog_ms = o.watchdog_ms;
  std::shared_ptr<RankBackend> backend = o.backend ? o.backend : cpu_rank_backend(o.generate.model_dir);
  // The backend hears of a peer's failure first (an NCCL abort), then the caller (which may end the process).
  control_options.on_peer_failure = [backend, then = o.on_peer_failure](const std::string& reason) {
    backend->abort(reason);
    if (then) then(reason);
  };
  DSV41_ASSIGN_OR_RETURN(std::unique_ptr<Control> control,
                         Control::join(control_options, facts_of(program, backend->arch())));
  // From here on a failure of this rank is every rank's: tell the others before returning it.
  auto run = [&]() -> Result<GenerateResult> {
    GeneratePlan plan;
    if (control->leader()) {
      DSV41_ASSIGN_OR_RETURN(plan, plan_generation(o.generate, program));
    }
    DSV41_ASSIGN_OR_RETURN(std::unique_ptr<RankSession> session, backend->create(program, *control));
    if (control->leader()) return lead(o, plan, *control, *session);
    DSV41_TRY(follow(o, *control, *session, program.program().settings()->slots()));
    return GenerateResult{};
  };
  Result<GenerateResult> result = run();
  if (!result.is_ok()) control->fail(rank_reason(o.rank, result.status().message()));
  backend->close();
  return result;
}

}  // namespace dsv41::dist
