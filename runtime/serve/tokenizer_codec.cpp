// runtime/serve/tokenizer_codec.cpp — the TextCodec over the model's tokenizer.json and the DeepSeek-V4.1 chat encoding (runtime/text).
#include <fmt/format.h>

#include "runtime/serve/text_codec.h"
#include "runtime/text/chat_encoding.h"
#include "runtime/text/openai_chat.h"
#include "runtime/text/tokenizer.h"

namespace dsv41::serve {
namespace {

class TokenizerStream final : public TextStream {
 public:
  explicit TokenizerStream(const text::Tokenizer& t) : decoder_(t) {}
  std::string push(int32_t id) override { return decoder_.push(id); }
  std::string finish() override { return decoder_.finish(); }

 private:
  text::StreamDecoder decoder_;
};

class TokenizerCodec final : public TextCodec {
 public:
  explicit TokenizerCodec(text::Tokenizer t) : tokenizer_(std::move(t)) {}
  bool has_tokenizer() const override { return true; }
  Result<std::vector<int32_t>> encode(const std::string& s) const override { return tokenizer_.encode(s); }

  Result<ChatPrompt> chat_prompt(const std::string& body) const override {
    const auto request = nlohmann::ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (request.is_discarded() || !request.contains("messages")) return Status::error("messages: required");
    DSV41_ASSIGN_OR_RETURN(std::vector<text::ChatMessage> messages, text::messages_from_openai(request["messages"]));
    DSV41_ASSIGN_OR_RETURN(text::ChatOptions options, text::chat_options_from_openai(request, text::ChatDefaults{}));
    DSV41_ASSIGN_OR_RETURN(std::string prompt, text::encode_chat(messages, options));
    return ChatPrompt{tokenizer_.encode(prompt), options.thinking};
  }

  std::unique_ptr<TextStream> stream() const override { return std::make_unique<TokenizerStream>(tokenizer_); }
  std::string token_text(int32_t id) const override { return text::utf8_lossy(tokenizer_.token_bytes(id)); }

 private:
  text::Tokenizer tokenizer_;
};

}  // namespace

Result<std::unique_ptr<TextCodec>> tokenizer_codec(const std::string& tokenizer_json) {
  DSV41_ASSIGN_OR_RETURN(text::Tokenizer t, text::Tokenizer::load(tokenizer_json));
  return std::unique_ptr<TextCodec>(std::make_unique<TokenizerCodec>(std::move(t)));
}

}  // namespace dsv41::serve
