// runtime/serve/request_parse.cpp — JSON fields, their types and ranges, the prompt (text or ids) and chat messages.
#include "runtime/serve/request_parse.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dsv41::serve {
namespace {

using json = nlohmann::json;

// Thrown inside parsing and turned into the ApiError it carries: keeps each check one line.
struct Refused {
  ApiError error;
};

[[noreturn]] void refuse(const std::string& param, const std::string& message) { throw Refused{invalid(param, message)}; }

const char* type_name(const json& v) { return v.type_name(); }

double number(const json& body, const char* field, double fallback, double lo, double hi) {
  if (!body.contains(field) || body[field].is_null()) return fallback;
  const json& v = body[field];
  if (!v.is_number()) refuse(field, fmt::format("{}: expected a number, got {}", field, type_name(v)));
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi)) refuse(field, fmt::format("{}: {} is outside {}..{}", field, x, lo, hi));
  return x;
}

int64_t integer(const json& body, const char* field, int64_t fallback, int64_t lo, int64_t hi) {
  if (!body.contains(field) || body[field].is_null()) return fallback;
  const json& v = body[field];
  if (!v.is_number_integer()) refuse(field, fmt::format("{}: expected an integer, got {}", field, type_name(v)));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
    refuse(field, fmt::format("{}: {} is outside {}..{}", field, v.get<uint64_t>(), lo, hi));
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) refuse(field, fmt::format("{}: {} is outside {}..{}", field, x, lo, hi));
  return x;
}

bool boolean(const json& body, const char* field, bool fallback) {
  if (!body.contains(field) || body[field].is_null()) return fallback;
  if (!body[field].is_boolean()) refuse(field, fmt::format("{}: expected true or false, got {}", field, type_name(body[field])));
  return body[field].get<bool>();
}

std::vector<int32_t> prompt_of(const json& body, const RequestLimits& limits, const TextCodec& codec) {
  if (!body.contains("prompt")) refuse("prompt", "prompt: required (a string or an array of token ids)");
  const json& p = body["prompt"];
  std::vector<int32_t> ids;
  if (p.is_string()) {
    auto encoded = codec.encode(p.get<std::string>());
    if (!encoded.is_ok()) refuse("prompt", encoded.status().message());
    ids = std::move(encoded).value();
  } else if (p.is_array()) {
    if (p.size() > static_cast<size_t>(limits.context))
      refuse("prompt", fmt::format("prompt: {} token ids exceed the planned context of {}", p.size(), limits.context));
    for (size_t i = 0; i < p.size(); ++i) {
      if (!p[i].is_number_integer())
        refuse("prompt", fmt::format("prompt[{}]: expected a token id (an integer), got {} (one prompt per request; "
                                     "batches of prompts are not served)", i, type_name(p[i])));
      const int64_t id = p[i].get<int64_t>();
      if (id < 0 || id >= limits.vocab || (p[i].is_number_unsigned() && p[i].get<uint64_t>() >= static_cast<uint64_t>(limits.vocab)))
        refuse("prompt", fmt::format("prompt[{}]: token id {} is outside the vocabulary 0..{}", i, p[i].dump(), limits.vocab - 1));
      ids.push_back(static_cast<int32_t>(id));
    }
  } else {
    refuse("prompt", fmt::format("prompt: expected a string or an array of token ids, got {}", type_name(p)));
  }
  if (ids.empty()) refuse("prompt", "prompt: empty; give at least one token");
  return ids;
}

std::vector<std::string> stops_of(const json& body) {
  std::vector<std::string> out;
  if (!body.contains("stop") || body["stop"].is_null()) return out;
  const json& s = body["stop"];
  if (s.is_string()) {
    out.push_back(s.get<std::string>());
  } else if (s.is_array()) {
    if (s.size() > 4) refuse("stop", fmt::format("stop: {} strings, at most 4", s.size()));
    for (size_t i = 0; i < s.size(); ++i) {
      if (!s[i].is_string()) refuse("stop", fmt::format("stop[{}]: expected a string, got {}", i, type_name(s[i])));
      out.push_back(s[i].get<std::string>());
    }
  } else {
    refuse("stop", fmt::format("stop: expected a string or an array of strings, got {}", type_name(s)));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].empty()) refuse("stop", fmt::format("stop[{}]: empty string", i));
    if (out[i].size() > 256) refuse("stop", fmt::format("stop[{}]: {} bytes, at most 256", i, out[i].size()));
  }
  return out;
}

ParsedRequest parse(const json& body, const std::string& raw, bool chat, const RequestLimits& limits,
                    const TextCodec& codec) {
  if (!body.is_object()) refuse("", fmt::format("the request body must be a JSON object, got {}", type_name(body)));
  if (!body.contains("model") || !body["model"].is_string())
    refuse("model", body.contains("model") ? fmt::format("model: expected a string, got {}", type_name(body["model"]))
                                           : std::string("model: required"));
  if (body["model"].get<std::string>() != limits.model)
    throw Refused{{404, "invalid_request_error",
                   fmt::format("model: \"{}\" does not exist; this server serves \"{}\"", body["model"].get<std::string>(),
                               limits.model),
                   "model", 0}};
  ParsedRequest r;
  r.chat = chat;
  if (integer(body, "n", 1, 1, 1) != 1) refuse("n", "n: only 1 is served");
  GenerationRequest& g = r.generation;
  SamplingParams& s = g.sampling;
  s.temperature = static_cast<float>(number(body, "temperature", 1.0, 0.0, 2.0));
  s.top_p = static_cast<float>(number(body, "top_p", 1.0, 0.0, 1.0));
  if (s.top_p <= 0) refuse("top_p", "top_p: 0 keeps nothing; give a value in (0, 1]");
  s.top_k = static_cast<int>(integer(body, "top_k", 0, 0, limits.vocab));
  s.min_p = static_cast<float>(number(body, "min_p", 0.0, 0.0, 1.0));
  r.seed_given = body.contains("seed") && !body["seed"].is_null();
  s.seed = static_cast<uint64_t>(integer(body, "seed", 0, 0, INT64_MAX));
  g.ignore_eos = boolean(body, "ignore_eos", false);
  r.stream = boolean(body, "stream", false);
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const json& o = body["stream_options"];
    if (!o.is_object()) refuse("stream_options", fmt::format("stream_options: expected an object, got {}", type_name(o)));
    r.include_usage = boolean(o, "include_usage", false);
  }
  r.stop = stops_of(body);
  if (chat) {
    r.logprobs = boolean(body, "logprobs", false);
    s.top_logprobs = static_cast<int>(integer(body, "top_logprobs", 0, 0, 20));
    if (s.top_logprobs > 0 && !r.logprobs) refuse("top_logprobs", "top_logprobs: needs logprobs: true");
    const char* field = body.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    g.max_tokens = integer(body, field, limits.default_max_tokens, 1, limits.context);
    if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty())
      refuse("messages", body.contains("messages") ? fmt::format("messages: expected a non-empty array, got {}",
                                                                 body["messages"].is_array() ? "an empty array" : type_name(body["messages"]))
                                                   : std::string("messages: required"));
    for (size_t i = 0; i < body["messages"].size(); ++i) {
      const json& m = body["messages"][i];
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
        refuse("messages", fmt::format("messages[{}]: expected an object with a string role", i));
    }
    auto prompt = codec.chat_prompt(raw);
    if (!prompt.is_ok()) refuse("messages", prompt.status().message());
    r.thinking = prompt->thinking;
    g.prompt = std::move(prompt->ids);
  } else {
    const int64_t logprobs = integer(body, "logprobs", 0, 0, 5);
    r.logprobs = body.contains("logprobs") && !body["logprobs"].is_null();
    s.top_logprobs = static_cast<int>(logprobs);
    g.max_tokens = integer(body, "max_tokens", std::min<int64_t>(16, limits.context), 1, limits.context);
    g.prompt = prompt_of(body, limits, codec);
  }
  if (static_cast<int64_t>(g.prompt.size()) >= limits.context)
    refuse(chat ? "messages" : "prompt", fmt::format("the prompt of {} tokens leaves no room in the planned context of {} "
                                                     "tokens", g.prompt.size(), limits.context));
  return r;
}

}  // namespace

std::variant<ParsedRequest, ApiError> parse_request(const std::string& body, bool chat, const RequestLimits& limits,
                                                    const TextCodec& codec) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return invalid("", "the request body is not valid JSON");
  try {
    return parse(parsed, body, chat, limits, codec);
  } catch (const Refused& r) {
    return r.error;
  } catch (const json::exception& e) {
    return invalid("", fmt::format("the request body could not be read: {}", e.what()));
  }
}

}  // namespace dsv41::serve
