// runtime/dist/rank_process.cpp — one rank per process: join the world, boot this rank's session (CPU or CUDA), then lead rounds (rank 0) or follow them.
#include "runtime/dist/rank_process.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "common/hashing.h"

namespace dsv41::dist {
namespace {

namespace fs = std::filesystem;

// With --logits-digests: this rank's whole logits buffer after each phase (XXH3 of its bytes), as one
// line on stderr, so a test can see that every rank holds the same bits.
AfterPhase digest_reporter(const RankProcessOptions& o) {
  if (!o.logits_digests) return {};
  return [steps = 0](RankSession& session, const Phase& phase) mutable -> Status {
    ++steps;
    const auto logits = std::find_if(phase.buffers.begin(), phase.buffers.end(),
                                     [](const BufferDecl& b) { return b.name == "logits"; });
    if (phase.rows <= 0 || logits == phase.buffers.end()) return Status::ok();
    std::vector<float> all(logits->bytes / sizeof(float));
    DSV41_TRY(session.read_logits(phase, 0, phase.rows, all.data()));
    std::fprintf(stderr, "dsv41-rt: rank %d: step %d %s logits digest %s\n", session.rank(), steps, phase.name.c_str(),
                 hex64(hash_bytes(all.data(), all.size() * sizeof(float))).c_str());
    return Status::ok();
  };
}

// Rank 0's hook before each round: with --step-pause-ms, announce and pause before each decode round.
std::function<void(const RoundPlan&)> decode_pacer(const RankProcessOptions& o) {
  if (!o.on_decode_step && o.step_pause_ms <= 0) return {};
  return [&o, steps = 0](const RoundPlan& plan) mutable {
    if (plan.runs.empty() || plan.runs[0].phase.rfind("decode.", 0) != 0) return;
    if (o.on_decode_step) o.on_decode_step(++steps);
    if (o.step_pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.step_pause_ms));
  };
}

}  // namespace

Result<ProgramFile> load_rank_program(const RankProcessOptions& o) {
  std::error_code ec;
  const std::string path =
      fs::is_directory(o.program, ec) ? (fs::path(o.program) / fmt::format("rank{}.fb", o.rank)).string() : o.program;
  DSV41_ASSIGN_OR_RETURN(ProgramFile program, ProgramFile::load(path));
  if (program.program().rank() != o.rank || program.program().world() != o.world)
    return Status::errorf("{}: holds rank {} of world {}, but this process is --rank {} --world {}{}", path,
                          program.program().rank(), program.program().world(), o.rank, o.world,
                          fs::is_directory(o.program, ec) ? "" : " (give the folder of rank*.fb: each rank reads its own)");
  return program;
}

Status run_in_world(const RankProcessOptions& o, const ProgramFile& program, const RankWork& work) {
  const std::shared_ptr<RankBackend> backend = o.backend ? o.backend : cpu_rank_backend(o.model_dir);
  ControlOptions control_options;
  control_options.rank = o.rank;
  control_options.world = o.world;
  DSV41_ASSIGN_OR_RETURN(control_options.master, parse_host_port(o.master, "--master"));
  control_options.connect_timeout_ms = o.connect_timeout_ms;
  control_options.watchdog_ms = o.watchdog_ms;
  // The backend hears of a peer's failure first (an NCCL abort), then the caller (which may end the process).
  control_options.on_peer_failure = [backend, then = o.on_peer_failure](const std::string& reason) {
    backend->abort(reason);
    if (then) then(reason);
  };
  RankFacts facts = facts_of(program, backend->arch());
  if (!o.purpose.empty()) facts.settings += "; " + o.purpose;
  DSV41_ASSIGN_OR_RETURN(std::unique_ptr<Control> control, Control::join(control_options, facts));
  // From here on a failure of this rank is every rank's: tell the others before returning it.
  const Status status = work(*control, *backend);
  if (!status.is_ok()) control->fail(rank_reason(o.rank, status.message()));
  backend->close();
  return status;
}

Status run_as_rank(const RankProcessOptions& o, const Lead& lead) {
  DSV41_ASSIGN_OR_RETURN(ProgramFile program, load_rank_program(o));
  DSV41_ASSIGN_OR_RETURN(WorldFacts facts, world_facts(program, o.world));
  return run_in_world(o, program, [&](Control& control, RankBackend& backend) -> Status {
    DSV41_ASSIGN_OR_RETURN(std::unique_ptr<RankSession> session, backend.create(program, control));
    if (!control.leader()) return follow_rounds(control, *session, facts.slots, digest_reporter(o));
    LeaderRounds rounds(control, *session, facts, digest_reporter(o), decode_pacer(o));
    DSV41_TRY(lead(rounds, program));
    return control.stop();
  });
}

Result<GenerateResult> generate_as_rank(const RankProcessOptions& o, const GenerateOptions& generate) {
  GenerateResult result;
  DSV41_TRY(run_as_rank(o, [&](LeaderRounds& rounds, const ProgramFile& program) -> Status {
    DSV41_ASSIGN_OR_RETURN(const GeneratePlan plan, plan_generation(generate, program));
    DSV41_TRY(check_generation_phases(plan, generate.max_tokens, program));
    DSV41_ASSIGN_OR_RETURN(result, generate_on(rounds, generate, plan));
    return Status::ok();
  }));
  return result;
}

}  // namespace dsv41::dist
