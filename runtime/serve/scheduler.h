// runtime/serve/scheduler.h — the scheduler thread: admission, slots, rounds on a RoundRunner (the World, or rank 0 of rank processes), sampling, finishing, drain.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <condition_variable>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "runtime/draft_verify.h"
#include "runtime/dspark_drafter.h"
#include "runtime/serve/api_error.h"
#include "runtime/serve/metrics.h"
#include "runtime/serve/request_stream.h"
#include "runtime/serve/round_planner.h"
#include "runtime/serve/sampler.h"
#include "runtime/round_runner.h"

namespace dsv41::serve {

struct SchedulerOptions {
  int max_queue = 32;        // admitted requests waiting for a slot; beyond: 503
  int prefill_segments = 1;  // prefill segments per round (fairness to running streams)
  // Drafts each decoding sequence proposes per round (0: serial), at most the world's planned
  // draft_tokens. Verification keeps exactly the tokens serial decoding would sample.
  int64_t draft_tokens = 0;
  Drafter drafter;  // empty: the DSpark Draft phases of `dspark` when it has them, else lookup_drafts
  DsparkPlan dspark;
};

struct GenerationRequest {
  std::vector<int32_t> prompt;
  int64_t max_tokens = 16;
  SamplingParams sampling;
  bool ignore_eos = false;
};

class Scheduler {
 public:
  using Clock = std::chrono::steady_clock;
  Scheduler(RoundRunner& world, Metrics& metrics, SchedulerOptions options);
  ~Scheduler();  // stops the thread; requests still running end with an error

  // 400 when the prompt plus max_tokens exceed the planned context; 503 when the queue is full,
  // the server is draining, or the world has failed.
  std::variant<std::shared_ptr<RequestStream>, ApiError> submit(GenerationRequest request);
  // Stops admitting; requests still running at `deadline` end with an error at a round boundary.
  // A later call with an earlier deadline cuts the drain short.
  void drain(Clock::time_point deadline);
  bool draining() const;
  // Nothing running or queued.
  bool idle() const;
  std::string failure() const;

 private:
  struct Sequence {
    std::shared_ptr<RequestStream> stream;
    GenerationRequest request;
    int slot = -1;
    bool needs_reset = true;
    int64_t prefilled = 0, position = 0, generated = 0;
    int32_t next_token = 0;
    Clock::time_point admitted, last_token;
    std::vector<int32_t> history;  // prompt then every token emitted (appended as emitted): what drafters read
    std::vector<int32_t> drafts;   // this round's, verified after next_token
    bool verifying = false;        // this round decodes it with drafting on (even when nothing was drafted)
    DraftStats drafting;
  };

  void loop();
  // Under the lock: drops cancelled sequences, ends everything past the drain deadline, fills free slots.
  void housekeep(Clock::time_point now);
  // Unlocked, on the scheduler thread: each decoding sequence's drafts for this round (one Draft phase
  // for all of them, or the drafter per sequence); a failed Draft phase fails the world like a round.
  Status draft(const std::vector<Sequence*>& round);
  void end(Sequence& sequence, Finish finish);
  void take_token(Sequence& sequence, const std::vector<float>& logits, int64_t position, Clock::time_point now);
  void emit(Sequence& sequence, const Sampled& token, int64_t position, Clock::time_point now);
  // The rows of one drafted sequence: accept_drafts with the keyed sampler, then each kept token.
  void take_verified(Sequence& sequence, const std::vector<std::vector<float>>& rows, Clock::time_point now);

  RoundRunner& world_;
  Metrics& metrics_;
  const SchedulerOptions options_;
  PlannerShape shape_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Sequence>> queue_;
  std::vector<std::unique_ptr<Sequence>> running_;  // admission order
  std::vector<bool> slot_busy_;
  int64_t next_id_ = 1;
  uint64_t round_ = 0;
  bool stopping_ = false;
  std::optional<Clock::time_point> drain_deadline_;
  std::string failure_;
  std::thread thread_;
};

}  // namespace dsv41::serve
