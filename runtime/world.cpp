// runtime/world.cpp — rank threads, session creation through the Backend, lockstep rounds, and the one-failure rule.
#include "runtime/world.h"

#include <fmt/format.h>

#include "common/model_config.h"

namespace dsv41 {

Result<std::unique_ptr<World>> World::start(std::vector<ProgramFile> programs, std::unique_ptr<Backend> backend) {
  if (programs.empty()) return Status::error("world: no programs");
  const fb::Program& p = programs[0].program();
  DSV41_ASSIGN_OR_RETURN(ModelConfig config, parse_model_config(p.config_json()->str(), programs[0].source()));
  std::unique_ptr<World> w(new World());
  WorldFacts& f = w->facts_;
  f.world = static_cast<int>(programs.size());
  f.slots = p.settings()->slots();
  f.context = p.settings()->context();
  f.vocab = config.vocab_size;
  f.eos = static_cast<int32_t>(config.eos_token_id);
  if (const auto* rows = p.settings()->prefill_rows()) f.prefill_rows.assign(rows->begin(), rows->end());
  if (const auto* rows = p.settings()->decode_rows()) f.decode_rows.assign(rows->begin(), rows->end());
  f.draft_tokens = p.settings()->draft_tokens();
  w->programs_ = std::move(programs);
  w->backend_ = std::move(backend);
  for (int rank = 0; rank < f.world; ++rank) w->threads_.emplace_back([world = w.get(), rank] { world->rank_main(rank); });
  std::unique_lock lock(w->mutex_);
  w->wake_caller_.wait(lock, [&] { return w->created_ == f.world; });
  if (!w->failure_.empty()) return Status::error(w->failure_);  // the destructor joins the threads
  return w;
}

World::~World() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_ranks_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::string World::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void World::fail(int rank, const Status& status) {
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    if (failure_.empty()) {
      failure_ = fmt::format("rank {}: {}", rank, status.message());
      first = true;
    }
  }
  if (first) backend_->abort(failure());
}

Status World::run_on_rank(RankSession& session, const RoundPlan& plan) {
  for (int32_t slot : plan.reset_slots) {
    if (slot < 0 || slot >= facts_.slots)
      return Status::errorf("round {}: reset slot {} outside 0..{}", plan.round, slot, facts_.slots - 1);
    session.reset_slot(slot);
  }
  for (const PhaseRun& run : plan.runs) {
    const Phase* phase = session.find_phase(run.phase);
    if (!phase) return Status::errorf("round {}: no phase {} in this program", plan.round, run.phase);
    DSV41_TRY(session.run(*phase, run.statics));
    if (session.rank() != 0) continue;
    for (int32_t row : run.logits_rows) {
      std::vector<float> out(static_cast<size_t>(facts_.vocab));
      DSV41_TRY(session.read_logits(*phase, row, 1, out.data()));
      logits_.push_back(std::move(out));  // only rank 0 writes logits_
    }
  }
  return Status::ok();
}

void World::rank_main(int rank) {
  std::unique_ptr<RankSession> session;
  {
    auto created = backend_->create(programs_[rank]);
    if (created.is_ok()) session = std::move(created).value();
    else fail(rank, created.status());
    std::lock_guard lock(mutex_);
    ++created_;
  }
  wake_caller_.notify_all();
  uint64_t seen = 0;
  for (;;) {
    std::vector<uint8_t> bytes;
    {
      std::unique_lock lock(mutex_);
      wake_ranks_.wait(lock, [&] { return stopping_ || generation_ > seen; });
      if (stopping_) break;
      seen = generation_;
      bytes = plan_bytes_;
    }
    Status status;
    if (!session) {
      status = Status::error("no session");
    } else {
      // Every rank decodes the bytes, as a follower process would: the encoding is exercised on every round.
      auto plan = decode_round_plan(bytes);
      try {
        status = plan.is_ok() ? run_on_rank(*session, *plan) : plan.status();
      } catch (const std::exception& e) {
        status = Status::errorf("threw: {}", e.what());
      }
    }
    if (!status.is_ok()) fail(rank, status);
    {
      std::lock_guard lock(mutex_);
      ++done_;
    }
    wake_caller_.notify_all();
  }
  session.reset();
}

Result<std::vector<std::vector<float>>> World::run(const RoundPlan& plan) {
  std::unique_lock lock(mutex_);
  if (!failure_.empty()) return Status::errorf("the world has stopped: {}", failure_);
  plan_bytes_ = encode_round_plan(plan);
  logits_.clear();
  done_ = 0;
  ++generation_;
  wake_ranks_.notify_all();
  wake_caller_.wait(lock, [&] { return done_ == facts_.world; });
  if (!failure_.empty()) return Status::error(failure_);
  return std::move(logits_);
}

}  // namespace dsv41
