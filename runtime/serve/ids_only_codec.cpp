// runtime/serve/ids_only_codec.cpp — the TextCodec of a model folder without tokenizer.json: token ids in, "<id> " out.
#include <fmt/format.h>

#include "runtime/serve/text_codec.h"

namespace dsv41::serve {
namespace {

class IdsStream final : public TextStream {
 public:
  std::string push(int32_t id) override { return fmt::format("<{}> ", id); }
  std::string finish() override { return ""; }
};

class IdsOnlyCodec final : public TextCodec {
 public:
  explicit IdsOnlyCodec(std::string model_dir) : model_dir_(std::move(model_dir)) {}
  bool has_tokenizer() const override { return false; }
  Result<std::vector<int32_t>> encode(const std::string&) const override {
    return Status::errorf("prompt: text needs a tokenizer, and {} has no tokenizer.json; give the prompt as an array "
                          "of token ids", model_dir_);
  }
  Result<ChatPrompt> chat_prompt(const std::string&) const override {
    return Status::errorf("messages: chat needs a tokenizer, and {} has no tokenizer.json; use /v1/completions with "
                          "token ids", model_dir_);
  }
  std::unique_ptr<TextStream> stream() const override { return std::make_unique<IdsStream>(); }
  std::string token_text(int32_t id) const override { return fmt::format("<{}> ", id); }

 private:
  std::string model_dir_;
};

}  // namespace

std::unique_ptr<TextCodec> ids_only_codec(const std::string& model_dir) { return std::make_unique<IdsOnlyCodec>(model_dir); }

}  // namespace dsv41::serve
