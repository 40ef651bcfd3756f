// runtime/serve/scheduler.cpp — admission, the round loop (plan, run on the World, sample, finish), cancellation and drain.
#include "runtime/serve/scheduler.h"

#include <algorithm>

#include <fmt/format.h>

namespace dsv41::serve {

Scheduler::Scheduler(RoundRunner& world, Metrics& metrics, SchedulerOptions options)
    : world_(world), metrics_(metrics), options_(options) {
  const WorldFacts& f = world_.facts();
  shape_.decode_rows = f.decode_rows;
  shape_.prefill_rows = f.prefill_rows;
  shape_.prefill_segments = std::max(1, options_.prefill_segments);
  slot_busy_.assign(static_cast<size_t>(f.slots), false);
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  for (auto& s : running_) end(*s, {"error", "the server stopped"});
  for (auto& s : queue_) end(*s, {"error", "the server stopped"});
}

std::variant<std::shared_ptr<RequestStream>, ApiError> Scheduler::submit(GenerationRequest request) {
  const WorldFacts& f = world_.facts();
  const int64_t prompt = static_cast<int64_t>(request.prompt.size());
  if (prompt + request.max_tokens > f.context)
    return invalid("max_tokens", fmt::format("prompt of {} tokens + max_tokens {} = {} exceeds the planned context of {} "
                                             "tokens", prompt, request.max_tokens, prompt + request.max_tokens, f.context));
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return ApiError{503, "server_error", "the model world has failed: " + failure_, "", 0};
  if (drain_deadline_) return unavailable("the server is draining (shutting down); retry on another replica", 5);
  // Requests wait in queue_ until the loop gives them a slot: free slots take that many beyond the bound.
  const auto free_slots = std::count(slot_busy_.begin(), slot_busy_.end(), false);
  if (static_cast<int64_t>(queue_.size()) >= free_slots + options_.max_queue)
    return unavailable(fmt::format("all {} slots are busy and the queue holds its limit of {} requests (--max-queue)",
                                   f.slots, options_.max_queue), 1);
  auto s = std::make_unique<Sequence>();
  s->stream = std::make_shared<RequestStream>(next_id_++);
  s->stream->seed = request.sampling.seed;
  s->request = std::move(request);
  s->history = s->request.prompt;  // from here on each emitted token is appended (emit)
  s->admitted = Clock::now();
  auto stream = s->stream;
  queue_.push_back(std::move(s));
  metrics_.queue_depth = static_cast<int64_t>(queue_.size());
  wake_.notify_all();
  return stream;
}

void Scheduler::drain(Clock::time_point deadline) {
  {
    std::lock_guard lock(mutex_);
    if (!drain_deadline_ || deadline < *drain_deadline_) drain_deadline_ = deadline;
  }
  wake_.notify_all();
}

bool Scheduler::draining() const {
  std::lock_guard lock(mutex_);
  return drain_deadline_.has_value();
}

bool Scheduler::idle() const {
  std::lock_guard lock(mutex_);
  return running_.empty() && queue_.empty();
}

std::string Scheduler::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void Scheduler::end(Sequence& s, Finish finish) {
  if (s.slot >= 0 && s.drafting.rounds > 0) metrics_.acceptance_length.observe(s.drafting.acceptance_length());
  if (s.slot >= 0) slot_busy_[s.slot] = false;
  s.slot = -1;
  s.stream->finish(std::move(finish));
}

void Scheduler::housekeep(Clock::time_point now) {
  const bool out_of_time = drain_deadline_ && now >= *drain_deadline_;
  auto drop = [&](auto& list) {
    for (auto it = list.begin(); it != list.end();) {
      Sequence& s = **it;
      if (s.stream->cancelled()) {
        end(s, {s.stream->cancel_reason(), ""});
      } else if (out_of_time) {
        end(s, {"error", "the server is shutting down: the request did not finish within the drain time (--drain-s)"});
      } else {
        ++it;
        continue;
      }
      it = list.erase(it);
    }
  };
  drop(running_);
  drop(queue_);
  while (!queue_.empty()) {
    auto free = std::find(slot_busy_.begin(), slot_busy_.end(), false);
    if (free == slot_busy_.end()) break;
    auto s = std::move(queue_.front());
    queue_.pop_front();
    s->slot = static_cast<int>(free - slot_busy_.begin());
    *free = true;
    running_.push_back(std::move(s));
  }
  metrics_.queue_depth = static_cast<int64_t>(queue_.size());
  metrics_.slots_busy = static_cast<int64_t>(running_.size());
}

void Scheduler::take_token(Sequence& s, const std::vector<float>& logits, int64_t position, Clock::time_point now) {
  emit(s, sample_row(logits.data(), static_cast<int64_t>(logits.size()), s.request.sampling, position), position, now);
}

void Scheduler::take_verified(Sequence& s, const std::vector<std::vector<float>>& rows, Clock::time_point now) {
  std::vector<Sampled> picks;
  const TokenChooser sample = [&](const std::vector<float>& logits, int64_t position) {
    picks.push_back(sample_row(logits.data(), static_cast<int64_t>(logits.size()), s.request.sampling, position));
    return picks.back().id;
  };
  const int64_t first = s.position + 1;
  const std::vector<int32_t> chosen = accept_drafts(rows, s.drafts, first, sample);
  const auto kept = static_cast<int64_t>(chosen.size()) - 1;
  s.drafting.add(static_cast<int64_t>(s.drafts.size()), kept);
  metrics_.draft_rounds += 1;
  metrics_.drafted_tokens += s.drafts.size();
  metrics_.accepted_tokens += static_cast<uint64_t>(kept);
  // Rejected rows need no undo: the next round writes their positions again.
  for (size_t j = 0; j < chosen.size() && s.slot >= 0; ++j) emit(s, picks[j], first + static_cast<int64_t>(j), now);
  s.drafts.clear();
  s.verifying = false;
}

void Scheduler::emit(Sequence& s, const Sampled& t, int64_t position, Clock::time_point now) {
  s.history.push_back(t.id);
  s.next_token = t.id;
  s.position = position;
  ++s.generated;
  metrics_.generated_tokens += 1;
  if (s.generated == 1) metrics_.time_to_first_token.observe(std::chrono::duration<double>(now - s.admitted).count());
  else metrics_.inter_token.observe(std::chrono::duration<double>(now - s.last_token).count());
  s.last_token = now;
  const bool eos = !s.request.ignore_eos && t.id == world_.facts().eos;
  s.stream->push({t.id, t.logprob, t.top, eos});
  if (eos) end(s, {"stop", ""});
  else if (s.generated >= s.request.max_tokens) end(s, {"length", ""});
}

Status Scheduler::draft(const std::vector<Sequence*>& round) {
  // DSpark drafts come from one Draft phase for every drafting sequence, run before the round.
  const bool dspark = !options_.drafter && options_.dspark.enabled();
  std::vector<DraftSeat> seats;
  std::vector<std::pair<Sequence*, int64_t>> seated;  // each seat's sequence and the drafts it wants
  for (Sequence* s : round) {
    const bool decoding = s->prefilled >= static_cast<int64_t>(s->request.prompt.size());
    s->verifying = decoding && options_.draft_tokens > 0;
    s->drafts.clear();
    // Never past max_tokens: a round yields up to drafts + 1 tokens, and positions beyond it may lie
    // outside the planned context.
    const int64_t k = std::min(options_.draft_tokens, s->request.max_tokens - s->generated - 1);
    if (!s->verifying || k <= 0) continue;
    if (dspark) {
      seats.push_back({s->slot, s->position, s->next_token});
      seated.emplace_back(s, k);
      continue;
    }
    s->drafts = options_.drafter ? options_.drafter(s->history, k) : lookup_drafts(s->history, k);
    if (static_cast<int64_t>(s->drafts.size()) > k) s->drafts.resize(static_cast<size_t>(k));
  }
  if (seats.empty()) return Status::ok();
  int64_t most = 0;
  for (const auto& [s, k] : seated) most = std::max(most, k);
  DSV41_ASSIGN_OR_RETURN(auto proposed, dspark_drafts(world_, options_.dspark, round_++, seats, most));
  for (size_t i = 0; i < seated.size(); ++i) {
    auto& [s, k] = seated[i];
    if (static_cast<int64_t>(proposed[i].size()) > k) proposed[i].resize(static_cast<size_t>(k));
    s->drafts = std::move(proposed[i]);
  }
  return Status::ok();
}

void Scheduler::loop() {
  for (;;) {
    std::vector<Sequence*> round;  // the running sequences, in admission order
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(20),
                     [&] { return stopping_ || !queue_.empty() || !running_.empty(); });
      if (stopping_) return;
      housekeep(Clock::now());
      for (const auto& s : running_) round.push_back(s.get());
    }
    if (round.empty()) continue;
    // Unlocked until the results: only this thread changes running_ (housekeep, below) and the
    // sequences' progress; submit, drain and the HTTP handlers touch the queue, the deadline and the
    // streams. So drafting (a Draft phase, or a drafter reading a whole history) and the round run
    // while requests are still admitted and /metrics still answers.
    const Status drafted = draft(round);
    std::vector<SlotView> views;
    for (const Sequence* s : round)
      views.push_back({s->stream->id(), s->slot, s->needs_reset, &s->request.prompt, s->prefilled, s->next_token,
                       s->position, s->drafts});
    PlannedRound planned = plan_round(shape_, views, round_++);
    auto logits = drafted.is_ok() ? world_.run(planned.plan) : Result<std::vector<std::vector<float>>>(drafted);
    const Clock::time_point now = Clock::now();
    std::lock_guard lock(mutex_);
    if (!logits.is_ok()) {
      failure_ = logits.status().message();
      for (auto& s : running_) end(*s, {"error", "the model world failed: " + failure_});
      for (auto& s : queue_) end(*s, {"error", "the model world failed: " + failure_});
      running_.clear();
      queue_.clear();
      stopping_ = true;
      return;
    }
    metrics_.rounds += 1;
    metrics_.padding_rows += static_cast<uint64_t>(planned.padding_rows);
    for (const PhaseRun& run : planned.plan.runs) metrics_.count_phase(run.phase);
    auto find = [&](int64_t id) -> Sequence* {
      for (auto& s : running_)
        if (s->stream->id() == id) return s.get();
      return nullptr;
    };
    for (auto& s : running_) s->needs_reset = false;
    for (const auto& [id, rows] : planned.prefilled) {
      find(id)->prefilled += rows;
      metrics_.prompt_tokens += static_cast<uint64_t>(rows);
    }
    for (size_t i = 0; i < planned.owners.size();) {
      Sequence& s = *find(planned.owners[i].id);
      if (!s.verifying) {
        take_token(s, (*logits)[i], planned.owners[i].position, now);
        ++i;
        continue;
      }
      const size_t rows = s.drafts.size() + 1;  // the sequence's rows are consecutive owners
      take_verified(s, std::vector<std::vector<float>>(logits->begin() + i, logits->begin() + i + rows), now);
      i += rows;
    }
    running_.erase(std::remove_if(running_.begin(), running_.end(), [](const auto& s) { return s->slot < 0; }), running_.end());
    metrics_.slots_busy = static_cast<int64_t>(running_.size());
  }
}

}  // namespace dsv41::serve
