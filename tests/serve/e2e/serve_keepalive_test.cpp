// tests/serve/e2e/serve_keepalive_test.cpp — SSE comments keep a stream alive while its long prompt is prefilled.
#include <gtest/gtest.h>

#include "tests/serve/e2e/serve_fixture.h"

namespace dsv41 {
namespace {

using json = nlohmann::json;

TEST(ServeKeepalive, CommentsComeBeforeTheFirstTokenThenChunks) {
  serve::ServeConfig config;
  config.http.keepalive_ms = 1;  // far below one prefill segment's time, so comments must appear
  test::TestServer server(config);
  httplib::Client c = server.client();
  const json body = {{"model", "tiny"}, {"prompt", std::vector<int32_t>(80, 9)}, {"max_tokens", 2}, {"stream", true}};
  auto res = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  const test::SseReply reply = test::parse_sse(res->body);
  EXPECT_TRUE(reply.done);
  ASSERT_FALSE(reply.comments.empty()) << res->body;
  EXPECT_EQ(reply.comments[0], ": keepalive");
  EXPECT_LT(res->body.find(": keepalive"), res->body.find("data: ")) << "a comment precedes the first chunk";
}

}  // namespace
}  // namespace dsv41
