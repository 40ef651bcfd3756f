// runtime/serve/openai_json.cpp — builds the OpenAI response, chunk and error objects.
#include "runtime/serve/openai_json.h"

namespace dsv41::serve {

using json = nlohmann::json;

namespace {

json bytes_of(const std::string& s) {
  json out = json::array();
  for (unsigned char c : s) out.push_back(static_cast<int>(c));
  return out;
}

json base(const ReplyHeader& h, bool chunk) {
  return {{"id", h.id},
          {"object", h.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", h.created},
          {"model", h.model},
          {"system_fingerprint", "dsv41"},
          {"seed", h.seed}};
}

json finish_or_null(const std::string& reason) { return reason.empty() ? json(nullptr) : json(reason); }

}  // namespace

json error_json(const ApiError& e) {
  return {{"error",
           {{"message", e.message}, {"type", e.type}, {"param", e.param.empty() ? json(nullptr) : json(e.param)},
            {"code", e.status == 404 && e.param == "model" ? json("model_not_found") : json(nullptr)}}}};
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

json logprobs_json(bool chat, const std::vector<TokenEvent>& tokens, const TextCodec& codec, int64_t text_offset) {
  if (chat) {
    json content = json::array();
    for (const TokenEvent& t : tokens) {
      const std::string text = codec.token_text(t.id);
      json top = json::array();
      for (const auto& [id, lp] : t.top) top.push_back({{"token", codec.token_text(id)}, {"logprob", lp}, {"bytes", bytes_of(codec.token_text(id))}});
      content.push_back({{"token", text}, {"logprob", t.logprob}, {"bytes", bytes_of(text)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json out = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
              {"text_offset", json::array()}};
  for (const TokenEvent& t : tokens) {
    const std::string text = codec.token_text(t.id);
    out["tokens"].push_back(text);
    out["token_logprobs"].push_back(t.logprob);
    json top = json::object();
    for (const auto& [id, lp] : t.top) top[codec.token_text(id)] = lp;
    out["top_logprobs"].push_back(top);
    out["text_offset"].push_back(text_offset);
    text_offset += static_cast<int64_t>(text.size());
  }
  return out;
}

json reply_json(const ReplyHeader& h, const ReplyText& text, const json& logprobs, const std::string& finish_reason,
                int64_t prompt_tokens, int64_t completion_tokens) {
  json out = base(h, false);
  json choice = {{"index", 0}, {"logprobs", logprobs}, {"finish_reason", finish_or_null(finish_reason)}};
  if (h.chat) {
    json message = {{"role", "assistant"}, {"content", text.content}};
    if (!text.reasoning.empty()) message["reasoning_content"] = text.reasoning;
    if (!text.tool_calls.empty()) message["tool_calls"] = text.tool_calls;
    choice["message"] = message;
  } else {
    choice["text"] = text.content;
  }
  out["choices"] = json::array({choice});
  out["usage"] = usage_json(prompt_tokens, completion_tokens);
  return out;
}

json chunk_json(const ReplyHeader& h, const ReplyText& text, const json& logprobs, const std::string& finish_reason,
                bool first) {
  json out = base(h, true);
  json choice = {{"index", 0}, {"logprobs", logprobs}, {"finish_reason", finish_or_null(finish_reason)}};
  if (h.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.content.empty() || first) delta["content"] = text.content;
    if (!text.reasoning.empty()) delta["reasoning_content"] = text.reasoning;
    if (!text.tool_calls.empty()) delta["tool_calls"] = text.tool_calls;
    choice["delta"] = delta;
  } else {
    choice["text"] = text.content;
  }
  out["choices"] = json::array({choice});
  return out;
}

json usage_chunk_json(const ReplyHeader& h, int64_t prompt_tokens, int64_t completion_tokens) {
  json out = base(h, true);
  out["choices"] = json::array();
  out["usage"] = usage_json(prompt_tokens, completion_tokens);
  return out;
}

}  // namespace dsv41::serve
