// tests/serve/e2e/serve_chat_test.cpp — with the tiny tokenizer: chat and text prompts, streamed and whole, and a stop string.
#include <gtest/gtest.h>

#include "tests/serve/e2e/serve_fixture.h"

namespace dsv41 {
namespace {

using json = nlohmann::json;

test::TestServer& chat_server() {
  static test::TestServer* server = [] {
    serve::ServeConfig config;
    config.tokenizer = (test::fs::path(DSV41_SOURCE_DIR) / "fixtures/dsv41-tiny/tokenizer.json").string();
    return new test::TestServer(config);
  }();
  return *server;
}

std::pair<int, std::string> post(const json& body, const std::string& path = "/v1/chat/completions") {
  httplib::Client c = chat_server().client();
  auto res = c.Post(path, body.dump(), "application/json");
  return res ? std::make_pair(res->status, res->body) : std::make_pair(-1, std::string());
}

TEST(ServeChat, StreamedChatEqualsTheWholeReply) {
  json body = {{"model", "tiny"}, {"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "What is 2 + 2?"}}}},
               {"max_tokens", 10}, {"temperature", 0.7}, {"seed", 5}, {"ignore_eos", true}};
  const auto [status, text] = post(body);
  ASSERT_EQ(status, 200) << text;
  const json whole = json::parse(text);
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(whole["usage"]["completion_tokens"], 10);
  EXPECT_GT(whole["usage"]["prompt_tokens"].get<int>(), 8) << "the chat encoding adds its markers to the messages";
  body["stream"] = true;
  const auto [stream_status, stream_text] = post(body);
  ASSERT_EQ(stream_status, 200);
  const test::SseReply sse = test::parse_sse(stream_text);
  EXPECT_TRUE(sse.done);
  EXPECT_EQ(sse.chunks.front()["object"], "chat.completion.chunk");
  EXPECT_EQ(sse.chunks.front()["choices"][0]["delta"]["role"], "assistant");
  const json& message = whole["choices"][0]["message"];
  EXPECT_EQ(sse.text, message["content"].get<std::string>());
  EXPECT_EQ(sse.reasoning, message.value("reasoning_content", std::string()));
  EXPECT_FALSE(sse.reasoning.empty()) << "thinking is on by default: the reply starts as reasoning";
}

TEST(ServeChat, WithThinkingDisabledTheReplyIsContent) {
  const json body = {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 6},
                     {"temperature", 0}, {"ignore_eos", true}, {"thinking", {{"type", "disabled"}}}};
  const auto [status, text] = post(body);
  ASSERT_EQ(status, 200) << text;
  const json message = json::parse(text)["choices"][0]["message"];
  EXPECT_FALSE(message.contains("reasoning_content")) << text;
  EXPECT_FALSE(message["content"].get<std::string>().empty()) << text;
  const auto [bad_status, bad] = post({{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}});
  EXPECT_EQ(bad_status, 400) << bad;
  EXPECT_NE(bad.find("messages[0].content[0]"), std::string::npos) << bad;
}

TEST(ServeChat, ATextPromptIsTokenizedAndAStopStringEndsTheReply) {
  json body = {{"model", "tiny"}, {"prompt", "The capital of France is"}, {"max_tokens", 24}, {"temperature", 0},
               {"ignore_eos", true}};
  const auto [status, text] = post(body, "/v1/completions");
  ASSERT_EQ(status, 200) << text;
  const std::string full = json::parse(text)["choices"][0]["text"];
  ASSERT_GE(full.size(), 4u) << text;
  // A stop string taken from the middle of the greedy reply cuts it there.
  size_t at = full.size() / 2;  // one whole UTF-8 code point from the middle
  while (at > 0 && (static_cast<unsigned char>(full[at]) & 0xC0) == 0x80) --at;
  size_t end = at + 1;
  while (end < full.size() && (static_cast<unsigned char>(full[end]) & 0xC0) == 0x80) ++end;
  const std::string stop = full.substr(at, end - at);
  body["stop"] = stop;
  const auto [stop_status, stop_text] = post(body, "/v1/completions");
  ASSERT_EQ(stop_status, 200) << stop_text;
  const json stopped = json::parse(stop_text);
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(stopped["choices"][0]["text"], full.substr(0, full.find(stop)));
  body["stream"] = true;
  const auto [sse_status, sse_text] = post(body, "/v1/completions");
  EXPECT_EQ(test::parse_sse(sse_text).text, full.substr(0, full.find(stop))) << "streamed with the same stop";
}

}  // namespace
}  // namespace dsv41
