// runtime/serve/reply.h — one request's reply as tokens arrive: text through the codec, stop strings, logprobs, finish reason.
//
// Streamed and whole replies are built by the same object, so a stream's pieces concatenate to the
// whole reply. Text that could still begin a stop string is held back until it is decided.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/serve/request_stream.h"
#include "runtime/serve/text_codec.h"

namespace dsv41::serve {

// What one step adds to the reply.
struct ReplyPiece {
  std::string text;
  std::vector<TokenEvent> tokens;  // the tokens whose text is released in this piece (for logprobs)
};

class Reply {
 public:
  Reply(const TextCodec& codec, std::vector<std::string> stops);
  // Adds tokens; once a stop string matches, later tokens are dropped and stopped() is true.
  ReplyPiece add(const std::vector<TokenEvent>& tokens);
  // The end: flushes what is held back. `finish` is the scheduler's; a matched stop makes it "stop".
  ReplyPiece end(const Finish& finish);
  bool stopped() const { return stopped_; }
  const std::string& finish_reason() const { return finish_reason_; }
  int64_t completion_tokens() const { return completion_tokens_; }

 private:
  ReplyPiece release(bool at_end);
  std::unique_ptr<TextStream> text_;
  std::vector<std::string> stops_;
  size_t longest_stop_ = 0;
  std::string held_;               // decoded but not yet released
  std::vector<TokenEvent> held_tokens_;
  bool stopped_ = false;
  std::string finish_reason_;
  int64_t completion_tokens_ = 0;
};

}  // namespace dsv41::serve
