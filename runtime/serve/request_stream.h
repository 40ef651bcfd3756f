// runtime/serve/request_stream.h — one admitted request's token queue between the scheduler thread and its HTTP handler.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/serve/sampler.h"

namespace dsv41::serve {

struct TokenEvent {
  int32_t id = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;
  bool eos = false;  // the end-of-sequence token that finished the request: counted, never shown as text
};

// The end of a request: "stop" (eos or a stop), "length" (max_tokens), "cancelled" (client gone),
// or "error" with a message (the world failed, or draining ran out of time).
struct Finish {
  std::string reason;
  std::string error;
};

class RequestStream {
 public:
  explicit RequestStream(int64_t id) : id_(id) {}
  int64_t id() const { return id_; }

  // Scheduler side.
  void push(TokenEvent token);
  void finish(Finish finish);

  // Handler side: waits up to `timeout` for tokens or the end. Returns the tokens taken (maybe none);
  // `finished` is set once every token has been taken and the request has ended.
  std::vector<TokenEvent> wait(std::chrono::milliseconds timeout, std::optional<Finish>& finished);
  // The client is gone (or a stop string matched): the scheduler frees the slot at the next round.
  void cancel(std::string reason = "cancelled") {
    std::lock_guard lock(mutex_);
    if (cancel_reason_.empty()) cancel_reason_ = std::move(reason);
    cancelled_ = true;
  }
  bool cancelled() const { return cancelled_; }
  std::string cancel_reason() const {
    std::lock_guard lock(mutex_);
    return cancel_reason_;
  }
  uint64_t seed = 0;  // the seed used (drawn by the server when the request gave none)

 private:
  const int64_t id_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<TokenEvent> tokens_;
  std::optional<Finish> finish_;
  std::atomic<bool> cancelled_{false};
  std::string cancel_reason_;
};

}  // namespace dsv41::serve
