// tests/serve/e2e/serve_drain_test.cpp — drain on SIGTERM (begin_drain), the drain deadline, the API key, and the queue bound.
#include <future>

#include <gtest/gtest.h>

#include "tests/serve/e2e/serve_fixture.h"

namespace dsv41 {
namespace {

using json = nlohmann::json;

const json kLong = {{"model", "tiny"}, {"prompt", {3, 4, 5}}, {"max_tokens", 90}, {"ignore_eos", true}};

// Waits until `n` slots are busy (a request is admitted and running).
void wait_busy(httplib::Client& c, double n) {
  for (int i = 0; i < 500 && test::metric(c, "dsv41_slots_busy") < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

TEST(ServeDrain, ARequestAcceptedBeforeTheSignalCompletesLaterOnesGet503) {
  test::TestServer server;
  httplib::Client c = server.client();
  auto running = std::async(std::launch::async, [&] {
    httplib::Client mine = server.client();
    auto res = mine.Post("/v1/completions", kLong.dump(), "application/json");
    return res ? std::make_pair(res->status, res->body) : std::make_pair(-1, std::string());
  });
  wait_busy(c, 1);
  server.app().begin_drain();
  auto refused = c.Post("/v1/completions", kLong.dump(), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->get_header_value("Retry-After"), "5");
  EXPECT_NE(refused->body.find("draining"), std::string::npos) << refused->body;
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(json::parse(health->body)["status"], "draining");
  const auto [status, body] = running.get();
  EXPECT_EQ(status, 200) << body;
  EXPECT_EQ(json::parse(body)["usage"]["completion_tokens"], 90);
  server.join();  // the server stops once the drain has nothing left
}

TEST(ServeDrain, RequestsStillRunningAtTheDeadlineEndWithAClearError) {
  serve::ServeConfig config;
  config.http.drain_s = 0;
  test::TestServer server(config);
  httplib::Client c = server.client();
  json streamed = kLong;
  streamed["stream"] = true;
  auto whole = std::async(std::launch::async, [&] { return server.client().Post("/v1/completions", kLong.dump(), "application/json"); });
  auto stream = std::async(std::launch::async, [&] { return server.client().Post("/v1/completions", streamed.dump(), "application/json"); });
  wait_busy(c, 2);
  server.app().begin_drain();
  auto res = whole.get();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_NE(res->body.find("--drain-s"), std::string::npos) << res->body;
  auto sse = stream.get();
  ASSERT_TRUE(sse);
  const test::SseReply reply = test::parse_sse(sse->body);
  EXPECT_TRUE(reply.done);
  ASSERT_FALSE(reply.chunks.empty());
  EXPECT_TRUE(reply.chunks.back().contains("error")) << sse->body;
  server.join();
}

TEST(ServeDrain, AnApiKeyGuardsV1Only) {
  serve::ServeConfig config;
  config.http.api_key = "sekret";
  test::TestServer server(config);
  httplib::Client c = server.client();
  auto refused = c.Get("/v1/models");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  EXPECT_NE(refused->body.find("--api-key"), std::string::npos);
  EXPECT_EQ(c.Get("/health")->status, 200);
  c.set_bearer_token_auth("sekret");
  EXPECT_EQ(c.Get("/v1/models")->status, 200);
}

TEST(ServeDrain, AFullHouseQueuesUpToTheBoundThen503) {
  serve::ServeConfig config;
  config.scheduler.max_queue = 1;
  test::TestServer server(config);
  httplib::Client c = server.client();
  std::vector<std::future<int>> running;
  json shorter = kLong;
  shorter["max_tokens"] = 30;
  for (int i = 0; i < 5; ++i)  // 4 slots and 1 queued
    running.push_back(std::async(std::launch::async, [&] {
      auto res = server.client().Post("/v1/completions", shorter.dump(), "application/json");
      return res ? res->status : -1;
    }));
  wait_busy(c, 4);
  for (int i = 0; i < 200 && test::metric(c, "dsv41_queue_depth") < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto refused = c.Post("/v1/completions", kLong.dump(), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503) << refused->body;
  EXPECT_NE(refused->body.find("--max-queue"), std::string::npos) << refused->body;
  for (auto& r : running) EXPECT_EQ(r.get(), 200);
}

}  // namespace
}  // namespace dsv41
