// runtime/serve/openai_json.h — the OpenAI-shaped JSON objects: completions, chat completions, their stream chunks, usage, errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/serve/api_error.h"
#include "runtime/serve/request_stream.h"
#include "runtime/serve/text_codec.h"

namespace dsv41::serve {

// What every object of one reply shares.
struct ReplyHeader {
  bool chat = false;
  std::string id, model;
  int64_t created = 0;
  uint64_t seed = 0;
};

// What a reply (or one chunk of it) says: completions use content only; chat splits the generated
// text into reasoning, content and tool calls (an OpenAI tool_calls array).
struct ReplyText {
  std::string content, reasoning;
  nlohmann::json tool_calls = nlohmann::json::array();
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
};

nlohmann::json error_json(const ApiError& error);
nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);
// The logprobs field of a choice for `tokens` (completions: tokens/token_logprobs/top_logprobs; chat: content[]).
nlohmann::json logprobs_json(bool chat, const std::vector<TokenEvent>& tokens, const TextCodec& codec, int64_t text_offset);
// A whole reply (non-streaming).
nlohmann::json reply_json(const ReplyHeader& h, const ReplyText& text, const nlohmann::json& logprobs,
                          const std::string& finish_reason, int64_t prompt_tokens, int64_t completion_tokens);
// One stream chunk; finish_reason empty: null. `first` (chat): the delta carries the role.
nlohmann::json chunk_json(const ReplyHeader& h, const ReplyText& text, const nlohmann::json& logprobs,
                          const std::string& finish_reason, bool first);
// The last chunk with stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk_json(const ReplyHeader& h, int64_t prompt_tokens, int64_t completion_tokens);

}  // namespace dsv41::serve
