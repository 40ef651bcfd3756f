// runtime/serve/reply.cpp — stop-string matching over the decoded text, with hold-back of a possible stop prefix.
#include "runtime/serve/reply.h"

#include <algorithm>

namespace dsv41::serve {

Reply::Reply(const TextCodec& codec, std::vector<std::string> stops) : text_(codec.stream()), stops_(std::move(stops)) {
  for (const std::string& s : stops_) longest_stop_ = std::max(longest_stop_, s.size());
}

ReplyPiece Reply::add(const std::vector<TokenEvent>& tokens) {
  for (const TokenEvent& t : tokens) {
    if (stopped_) break;
    ++completion_tokens_;
    if (!t.eos) held_ += text_->push(t.id);
    held_tokens_.push_back(t);
    size_t cut = std::string::npos;
    for (const std::string& s : stops_) cut = std::min(cut, held_.find(s));
    if (cut != std::string::npos) {
      held_.resize(cut);
      stopped_ = true;
      finish_reason_ = "stop";
    }
  }
  return release(stopped_);
}

ReplyPiece Reply::end(const Finish& finish) {
  if (!stopped_) {
    held_ += text_->finish();
    finish_reason_ = finish.reason;
  }
  return release(true);
}

ReplyPiece Reply::release(bool at_end) {
  ReplyPiece piece;
  // Keep the last longest_stop-1 bytes: they could be the start of a stop string still arriving.
  size_t keep = at_end || longest_stop_ == 0 ? 0 : std::min(held_.size(), longest_stop_ - 1);
  // Never cut inside a UTF-8 sequence: a piece is sent as a JSON string on its own.
  while (keep < held_.size() && keep > 0 && (static_cast<unsigned char>(held_[held_.size() - keep]) & 0xC0) == 0x80) ++keep;
  piece.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  if (keep == 0) piece.tokens = std::move(held_tokens_), held_tokens_.clear();
  return piece;
}

}  // namespace dsv41::serve
