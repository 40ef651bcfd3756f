// runtime/serve/request_stream.cpp — the token queue's push / finish / wait.
#include "runtime/serve/request_stream.h"

namespace dsv41::serve {

void RequestStream::push(TokenEvent token) {
  {
    std::lock_guard lock(mutex_);
    tokens_.push_back(std::move(token));
  }
  wake_.notify_all();
}

void RequestStream::finish(Finish finish) {
  {
    std::lock_guard lock(mutex_);
    if (!finish_) finish_ = std::move(finish);
  }
  wake_.notify_all();
}

std::vector<TokenEvent> RequestStream::wait(std::chrono::milliseconds timeout, std::optional<Finish>& finished) {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, timeout, [&] { return !tokens_.empty() || finish_.has_value(); });
  std::vector<TokenEvent> out(std::make_move_iterator(tokens_.begin()), std::make_move_iterator(tokens_.end()));
  tokens_.clear();
  if (finish_) finished = finish_;
  return out;
}

}  // namespace dsv41::serve
