// runtime/serve/request_parse.h — a completions or chat request body to checked generation parameters; every refusal names the field.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "runtime/serve/api_error.h"
#include "runtime/serve/scheduler.h"
#include "runtime/serve/text_codec.h"

namespace dsv41::serve {

struct RequestLimits {
  std::string model;        // the one served model's id
  int64_t context = 0;      // planned context (prompt + max_tokens must fit)
  int64_t vocab = 0;
  int64_t default_max_tokens = 256;
};

struct ParsedRequest {
  bool chat = false;
  GenerationRequest generation;
  bool seed_given = false;
  std::vector<std::string> stop;
  bool stream = false, include_usage = false;
  bool logprobs = false;  // report each token's logprob (and top_logprobs alternatives)
  bool thinking = false;  // chat: thinking mode (the reply starts with reasoning)
};

// `chat`: /v1/chat/completions (messages) rather than /v1/completions (prompt). Without a seed the
// caller draws one. 400 for malformed JSON, a wrong type or an out-of-range value; 404 for another model.
std::variant<ParsedRequest, ApiError> parse_request(const std::string& body, bool chat, const RequestLimits& limits,
                                                    const TextCodec& codec);

}  // namespace dsv41::serve
