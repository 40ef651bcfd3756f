// runtime/serve/tokenizer_codec.cpp — the TextCodec over the model's tokenizer.json and the DeepSeek-V4.1 chat encoding (runtime/text).
#include <fmt/format.h>

#include "runtime/serve/text_codec.h"
#include "runtime/text/chat_encoding.h"
#include "runtime/text/tokenizer.h"

namespace dsv41::serve {
namespace {

using json = nlohmann::json;

class TokenizerStream final : public TextStream {
 public:
  explicit TokenizerStream(const text::Tokenizer& t) : decoder_(t) {}
  std::string push(int32_t id) override { return decoder_.push(id); }
  std::string finish() override { return decoder_.finish(); }

 private:
  text::StreamDecoder decoder_;
};

// A message's content: a string, or an array of {"type": "text", "text": ...} parts.
Result<std::string> content_of(const json& m, size_t index) {
  if (!m.contains("content") || m["content"].is_null()) return std::string();
  const json& c = m["content"];
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) return Status::errorf("messages[{}].content: expected a string or an array of text parts, got {}", index, c.type_name());
  std::string out;
  for (size_t i = 0; i < c.size(); ++i) {
    if (!c[i].is_object() || c[i].value("type", "") != "text" || !c[i].contains("text") || !c[i]["text"].is_string())
      return Status::errorf("messages[{}].content[{}]: only {{\"type\": \"text\", \"text\": ...}} parts are served", index, i);
    out += c[i]["text"].get<std::string>();
  }
  return out;
}

class TokenizerCodec final : public TextCodec {
 public:
  explicit TokenizerCodec(text::Tokenizer t) : tokenizer_(std::move(t)) {}
  bool has_tokenizer() const override { return true; }
  Result<std::vector<int32_t>> encode(const std::string& s) const override { return tokenizer_.encode(s); }

  Result<std::vector<int32_t>> chat_prompt(const json& body) const override {
    std::vector<text::ChatMessage> messages;
    const json& list = body["messages"];
    for (size_t i = 0; i < list.size(); ++i) {
      const json& m = list[i];
      text::ChatMessage message;
      message.role = m["role"].get<std::string>();
      DSV41_ASSIGN_OR_RETURN(message.content, content_of(m, i));
      if (m.contains("reasoning_content") && m["reasoning_content"].is_string())
        message.reasoning_content = m["reasoning_content"].get<std::string>();
      if (m.contains("tool_call_id") && m["tool_call_id"].is_string()) message.tool_call_id = m["tool_call_id"].get<std::string>();
      if (m.contains("name") && m["name"].is_string()) message.name = m["name"].get<std::string>();
      if (m.contains("tool_calls") && m["tool_calls"].is_array())
        for (const json& call : m["tool_calls"]) {
          if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
            return Status::errorf("messages[{}].tool_calls: each call needs a function object", i);
          const json& f = call["function"];
          text::ToolCall tc;
          tc.id = call.value("id", "");
          tc.name = f.value("name", "");
          tc.arguments_json = f.contains("arguments") && f["arguments"].is_string() ? f["arguments"].get<std::string>() : "{}";
          message.tool_calls.push_back(std::move(tc));
        }
      messages.push_back(std::move(message));
    }
    text::ChatOptions options;
    const json kwargs = body.contains("chat_template_kwargs") && body["chat_template_kwargs"].is_object()
                            ? body["chat_template_kwargs"] : json::object();
    const json thinking = body.contains("thinking") ? body["thinking"] : kwargs.value("thinking", json(false));
    if (!thinking.is_boolean()) return Status::errorf("thinking: expected true or false, got {}", thinking.type_name());
    options.thinking = thinking.get<bool>();
    if (body.contains("reasoning_effort") && !body["reasoning_effort"].is_null()) {
      DSV41_ASSIGN_OR_RETURN(options.reasoning_effort, text::parse_reasoning_effort(body["reasoning_effort"]));
    }
    if (body.contains("tools") && !body["tools"].is_null()) {
      if (!body["tools"].is_array()) return Status::errorf("tools: expected an array, got {}", body["tools"].type_name());
      options.tools_json = body["tools"].dump();
    }
    DSV41_ASSIGN_OR_RETURN(std::string prompt, text::encode_chat(messages, options));
    return tokenizer_.encode(prompt);
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
