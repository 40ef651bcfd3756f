// runtime/world.cpp — rank threads, session creation through the Backend, lockstep rounds, and the one-failure rule.
#include "runtime/world.h"

#include <fmt/format.h>

namespace dsv41 {

Result<std::unique_ptr<World>> World::start(std::vector<ProgramFile> programs, std::unique_ptr<Backend> backend) {
  if (programs.empty()) return Status::error("world: no programs");
  std::unique_ptr<World> w(new World());
  DSV41_ASSIGN_OR_RETURN(w->facts_, world_facts(programs[0], static_cast<int>(programs.size())));
  const WorldFacts& f = w->facts_;
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
        // Only rank 0 writes logits_.
        status = plan.is_ok() ? run_round_on_session(*session, *plan, facts_.slots, facts_.vocab,
                                                     rank == 0 ? &logits_ : nullptr)
                              : plan.status();
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
