// runtime/serve/text_codec.h — what the server needs of text: prompt text to ids, chat messages to ids, ids to streamed text.
//
// Two forms: the model folder's tokenizer (runtime/text), or, for a folder without tokenizer.json,
// ids only: prompts must be token id arrays and each generated token reads as "<id>" followed by a space.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace dsv41::serve {

// Text for ids as they arrive; the concatenation of push() and finish() is the whole reply's text.
class TextStream {
 public:
  virtual ~TextStream() = default;
  virtual std::string push(int32_t id) = 0;
  virtual std::string finish() = 0;
};

class TextCodec {
 public:
  virtual ~TextCodec() = default;
  virtual bool has_tokenizer() const = 0;
  virtual Result<std::vector<int32_t>> encode(const std::string& text) const = 0;
  // The chat request (its raw body: key order matters to the encoding) as prompt ids, ready for the
  // assistant, and whether the reply starts in thinking mode.
  struct ChatPrompt {
    std::vector<int32_t> ids;
    bool thinking = false;
  };
  virtual Result<ChatPrompt> chat_prompt(const std::string& body) const = 0;
  virtual std::unique_ptr<TextStream> stream() const = 0;
  virtual std::string token_text(int32_t id) const = 0;  // one token alone (logprobs)
};

// The model's tokenizer.json and the DeepSeek-V4.1 chat encoding (runtime/text).
Result<std::unique_ptr<TextCodec>> tokenizer_codec(const std::string& tokenizer_json);

// Ids only: encode and chat refuse (naming the missing tokenizer), tokens read as "<id> ".
std::unique_ptr<TextCodec> ids_only_codec(const std::string& model_dir);

}  // namespace dsv41::serve
