// tests/serve/request_parse_test.cpp — request validation: malformed JSON, wrong types, ranges, the model, the prompt; each names its field.
#include "runtime/serve/request_parse.h"

#include <gtest/gtest.h>

namespace dsv41::serve {
namespace {

const RequestLimits kLimits{"tiny", 64, 1280, 32};

ApiError refusal(const std::string& body, bool chat = false) {
  static const auto codec = ids_only_codec("/models/tiny");
  auto r = parse_request(body, chat, kLimits, *codec);
  if (auto* e = std::get_if<ApiError>(&r)) return *e;
  ADD_FAILURE() << "accepted: " << body;
  return {};
}

ParsedRequest accepted(const std::string& body) {
  static const auto codec = ids_only_codec("/models/tiny");
  auto r = parse_request(body, false, kLimits, *codec);
  if (auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << body << ": " << e->message;
    return {};
  }
  return std::get<ParsedRequest>(r);
}

TEST(RequestParse, AGoodCompletionRequestKeepsEveryField) {
  const ParsedRequest r = accepted(R"({"model":"tiny","prompt":[5,6,7],"max_tokens":9,"temperature":0.5,"top_p":0.9,
      "top_k":40,"min_p":0.1,"seed":42,"stop":["x"],"stream":true,"stream_options":{"include_usage":true},"logprobs":2})");
  EXPECT_EQ(r.generation.prompt, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(r.generation.max_tokens, 9);
  EXPECT_FLOAT_EQ(r.generation.sampling.temperature, 0.5f);
  EXPECT_EQ(r.generation.sampling.top_k, 40);
  EXPECT_EQ(r.generation.sampling.seed, 42u);
  EXPECT_TRUE(r.seed_given);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.generation.sampling.top_logprobs, 2);
  EXPECT_EQ(r.stop, std::vector<std::string>{"x"});
  EXPECT_FALSE(accepted(R"({"model":"tiny","prompt":[1]})").seed_given);
}

TEST(RequestParse, EachRefusalHasItsStatusAndNamesTheField) {
  struct Case {
    std::string body;
    int status;
    std::string param, words;
  };
  const std::vector<Case> cases = {
      {"{not json", 400, "", "not valid JSON"},
      {"[1,2]", 400, "", "JSON object"},
      {R"({"prompt":[1]})", 400, "model", "required"},
      {R"({"model":"big","prompt":[1]})", 404, "model", "\"big\" does not exist"},
      {R"({"model":"tiny","prompt":[1],"max_tokens":"9"})", 400, "max_tokens", "expected an integer, got string"},
      {R"({"model":"tiny","prompt":[1],"max_tokens":0})", 400, "max_tokens", "0 is outside 1..64"},
      {R"({"model":"tiny","prompt":[1],"temperature":3})", 400, "temperature", "outside 0..2"},
      {R"({"model":"tiny","prompt":[1],"top_p":0})", 400, "top_p", "top_p"},
      {R"({"model":"tiny","prompt":[1],"top_k":-1})", 400, "top_k", "outside 0..1280"},
      {R"({"model":"tiny","prompt":[1],"seed":-3})", 400, "seed", "outside"},
      {R"({"model":"tiny","prompt":[1],"stream":"yes"})", 400, "stream", "true or false"},
      {R"({"model":"tiny","prompt":[1],"stop":[1]})", 400, "stop", "stop[0]: expected a string"},
      {R"({"model":"tiny","prompt":[1],"n":2})", 400, "n", "outside 1..1"},
      {R"({"model":"tiny","prompt":[1],"logprobs":9})", 400, "logprobs", "outside 0..5"},
      {R"({"model":"tiny","prompt":[1, 1280]})", 400, "prompt", "prompt[1]: token id 1280 is outside the vocabulary 0..1279"},
      {R"({"model":"tiny","prompt":[]})", 400, "prompt", "empty"},
      {R"({"model":"tiny","prompt":"hello"})", 400, "prompt", "no tokenizer.json"},
      {R"({"model":"tiny","prompt":{"a":1}})", 400, "prompt", "got object"},
      {R"({"model":"tiny","prompt":[1,2],"max_tokens":63})", 0, "", ""},  // admitted here; the scheduler refuses 2 + 63 > 64
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    if (c.status == 0) {
      accepted(c.body);
      continue;
    }
    const ApiError e = refusal(c.body);
    EXPECT_EQ(e.status, c.status) << e.message;
    EXPECT_EQ(e.param, c.param) << e.message;
    EXPECT_NE(e.message.find(c.words), std::string::npos) << e.message;
  }
}

TEST(RequestParse, ChatNeedsMessagesAndATokenizer) {
  EXPECT_EQ(refusal(R"({"model":"tiny"})", true).param, "messages");
  EXPECT_NE(refusal(R"({"model":"tiny","messages":[]})", true).message.find("empty array"), std::string::npos);
  EXPECT_NE(refusal(R"({"model":"tiny","messages":[{"content":"hi"}]})", true).message.find("messages[0]"), std::string::npos);
  EXPECT_NE(refusal(R"({"model":"tiny","messages":[{"role":"user","content":"hi"}]})", true).message.find("tokenizer"),
            std::string::npos);
  EXPECT_EQ(refusal(R"({"model":"tiny","messages":[{"role":"user","content":"hi"}],"top_logprobs":3})", true).param,
            "top_logprobs");
}

}  // namespace
}  // namespace dsv41::serve
