// tests/serve/e2e/serve_http_test.cpp — the server over real sockets: completions, streaming, concurrency, seeds, errors.
#include <algorithm>
#include <future>
#include <sstream>

#include <gtest/gtest.h>

#include "runtime/generate.h"
#include "tests/runtime/runtime_fixtures.h"
#include "tests/serve/e2e/serve_fixture.h"

namespace dsv41 {
namespace {

using json = nlohmann::json;

test::TestServer& shared_server() {
  static test::TestServer* server = new test::TestServer();
  return *server;
}

json post(const std::string& path, const json& body, int expect_status = 200) {
  httplib::Client c = shared_server().client();
  auto res = c.Post(path, body.dump(), "application/json");
  EXPECT_TRUE(res) << "no reply to " << body.dump();
  if (!res) return {};
  EXPECT_EQ(res->status, expect_status) << res->body;
  return json::parse(res->body, nullptr, false);
}

std::vector<int32_t> ids_of(const std::string& text) {  // the ids-only codec's "<id> " text
  std::vector<int32_t> out;
  std::istringstream in(text);
  std::string word;
  while (in >> word) out.push_back(std::stoi(word.substr(1, word.size() - 2)));
  return out;
}

TEST(ServeHttp, ModelsListsTheServedModel) {
  httplib::Client c = shared_server().client();
  auto res = c.Get("/v1/models");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  const json body = json::parse(res->body);
  EXPECT_EQ(body["object"], "list");
  EXPECT_EQ(body["data"][0]["id"], "tiny");
  EXPECT_EQ(body["data"][0]["max_model_len"], 96);
  EXPECT_EQ(c.Get("/v1/models/other")->status, 404);
  auto health = c.Get("/health");
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(json::parse(health->body)["status"], "ready");
}

TEST(ServeHttp, GreedyCompletionEqualsGenerate) {
  const std::vector<int32_t> prompt = {5, 6, 7, 8, 9, 10, 300, 301, 1000, 17, 4};
  const json reply = post("/v1/completions", {{"model", "tiny"}, {"prompt", prompt}, {"max_tokens", 6},
                                              {"temperature", 0}, {"ignore_eos", true}});
  ASSERT_TRUE(reply.contains("choices")) << reply.dump();
  EXPECT_EQ(reply["object"], "text_completion");
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(reply["usage"]["prompt_tokens"], 11);
  EXPECT_EQ(reply["usage"]["completion_tokens"], 6);
  GenerateOptions o;
  o.program_dir = test::serve_programs().string();
  o.model_dir = test::tiny_pack("release").string();
  o.prompt = prompt;
  o.max_tokens = 6;
  o.stop_at_eos = false;
  auto expected = generate(o);
  ASSERT_TRUE(expected.is_ok()) << expected.status().message();
  EXPECT_EQ(ids_of(reply["choices"][0]["text"]), expected->tokens);
}

TEST(ServeHttp, StreamingEqualsNonStreaming) {
  json body = {{"model", "tiny"}, {"prompt", {11, 12, 13, 14, 15}}, {"max_tokens", 12}, {"temperature", 0.9},
               {"top_p", 0.95}, {"seed", 77}, {"ignore_eos", true}, {"logprobs", 2}};
  const json whole = post("/v1/completions", body);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  httplib::Client c = shared_server().client();
  auto res = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  const test::SseReply sse = test::parse_sse(res->body);
  EXPECT_TRUE(sse.done) << res->body;
  EXPECT_EQ(sse.text, whole["choices"][0]["text"].get<std::string>());
  ASSERT_GE(sse.chunks.size(), 2u);
  const json& usage = sse.chunks.back();
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 12);
  EXPECT_EQ(sse.chunks[sse.chunks.size() - 2]["choices"][0]["finish_reason"], "length");
  std::vector<double> streamed;
  for (const json& chunk : sse.chunks)
    if (!chunk["choices"].empty() && chunk["choices"][0]["logprobs"].is_object())
      for (const json& lp : chunk["choices"][0]["logprobs"]["token_logprobs"]) streamed.push_back(lp);
  EXPECT_EQ(json(streamed), whole["choices"][0]["logprobs"]["token_logprobs"]);
}

TEST(ServeHttp, EightConcurrentRequestsEachEqualItsSoloRun) {
  auto body = [](int i) {
    return json{{"model", "tiny"}, {"prompt", std::vector<int32_t>(static_cast<size_t>(3 + i * 2), 20 + i)},
                {"max_tokens", 4 + i % 4}, {"temperature", i % 2 ? 0.0 : 1.0}, {"seed", 1000 + i}, {"ignore_eos", true}};
  };
  std::vector<std::string> solo;
  for (int i = 0; i < 8; ++i) solo.push_back(post("/v1/completions", body(i))["choices"][0]["text"]);
  std::vector<std::future<std::string>> runs;
  for (int i = 0; i < 8; ++i)
    runs.push_back(std::async(std::launch::async, [&, i] {
      json b = body(i);
      if (i % 3 == 0) {  // some streamed: the same tokens either way
        b["stream"] = true;
        httplib::Client c = shared_server().client();
        auto res = c.Post("/v1/completions", b.dump(), "application/json");
        return res ? test::parse_sse(res->body).text : std::string("no reply");
      }
      return post("/v1/completions", b)["choices"][0]["text"].get<std::string>();
    }));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(runs[i].get(), solo[i]) << "request " << i;
  httplib::Client c = shared_server().client();
  const double batched = std::max(0.0, test::metric(c, "dsv41_phase_runs_total{phase=\"decode.r2\"}")) +
                         std::max(0.0, test::metric(c, "dsv41_phase_runs_total{phase=\"decode.r4\"}"));
  EXPECT_GT(batched, 0) << "the concurrent requests never shared a decode round";
}

TEST(ServeHttp, SeedsRepeatAndADrawnSeedIsReported) {
  const json body = {{"model", "tiny"}, {"prompt", {40, 41, 42}}, {"max_tokens", 6}, {"temperature", 1.2}, {"ignore_eos", true}};
  const json first = post("/v1/completions", body);
  ASSERT_TRUE(first.contains("seed"));
  json again = body;
  again["seed"] = first["seed"];
  EXPECT_EQ(post("/v1/completions", again)["choices"][0]["text"], first["choices"][0]["text"]);
  std::set<std::string> texts;
  for (int seed = 0; seed < 4; ++seed) {
    json b = body;
    b["seed"] = seed;
    texts.insert(post("/v1/completions", b)["choices"][0]["text"].get<std::string>());
  }
  EXPECT_GT(texts.size(), 1u) << "four seeds at temperature 1.2 gave one text";
}

TEST(ServeHttp, ADisconnectedStreamFreesItsSlot) {
  httplib::Client c = shared_server().client();
  const double before = test::metric(c, "dsv41_generated_tokens_total");
  const json body = {{"model", "tiny"}, {"prompt", {7, 8, 9}}, {"max_tokens", 90}, {"stream", true}, {"ignore_eos", true}};
  int chunks = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 2; };  // leave after 2 chunks
  c.send(req);
  double busy = -1;
  for (int i = 0; i < 200 && busy != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    busy = test::metric(c, "dsv41_slots_busy");
  }
  EXPECT_EQ(busy, 0) << "the slot is still held after the client left";
  EXPECT_LT(test::metric(c, "dsv41_generated_tokens_total") - before, 90) << "all 90 tokens were generated anyway";
}

TEST(ServeHttp, BadRequestsGetTheirStatusAndTheServerKeepsServing) {
  httplib::Client c = shared_server().client();
  struct Case {
    std::string path, body;
    int status;
    std::string words;
  };
  const std::vector<Case> cases = {
      {"/v1/completions", "{oops", 400, "not valid JSON"},
      {"/v1/completions", R"({"model":"tiny","prompt":[1],"max_tokens":"5"})", 400, "max_tokens: expected an integer"},
      {"/v1/completions", R"({"model":"nope","prompt":[1]})", 404, "\"nope\" does not exist"},
      {"/v1/completions", R"({"model":"tiny","prompt":[1],"temperature":9})", 400, "temperature: 9"},
      {"/v1/completions", R"({"model":"tiny","prompt":[1,2,3],"max_tokens":94})", 400, "prompt of 3 tokens + max_tokens 94 = 97 exceeds the planned context of 96"},
      {"/v1/chat/completions", R"({"model":"tiny","messages":"hi"})", 400, "messages"},
      {"/v1/completions", std::string(2 << 20, ' '), 413, "exceeds the server's limit"},
      {"/v1/nothing", "{}", 404, "no such endpoint"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.body.substr(0, 80));
    auto res = c.Post(k.path, k.body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, k.status) << res->body;
    const json error = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(error.contains("error")) << res->body;
    EXPECT_NE(error["error"]["message"].get<std::string>().find(k.words), std::string::npos) << res->body;
  }
  EXPECT_EQ(post("/v1/completions", {{"model", "tiny"}, {"prompt", {1, 2}}, {"max_tokens", 2}})["usage"]["completion_tokens"], 2);
}

}  // namespace
}  // namespace dsv41
