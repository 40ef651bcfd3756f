// tests/serve/e2e/serve_fixture.h — a real server on an ephemeral loopback port over the tiny model at world 2, and an HTTP client for it.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "runtime/serve/serving_app.h"
#include "tests/support/test_support.h"

namespace dsv41::test {

// The tiny pack planned at world 2 with 4 slots, context 96, prefill segments 8 and 4, decode buckets 1, 2 and 4
// (made once per process; removed at exit).
const fs::path& serve_programs();

class TestServer {
 public:
  explicit TestServer(serve::ServeConfig config = {});  // fills program, model and port 0
  ~TestServer();   // drains (cut short) and joins
  int port() const { return app_->port(); }
  serve::ServingApp& app() { return *app_; }
  httplib::Client client() const;
  // Waits for run() to return (after a drain).
  void join();

 private:
  std::unique_ptr<serve::ServingApp> app_;
  std::thread thread_;
};

struct SseReply {
  std::vector<nlohmann::json> chunks;
  std::vector<std::string> comments;
  bool done = false;  // ended with data: [DONE]
  std::string text;   // every chunk's text (or delta content) joined
  std::string reasoning;  // every chat chunk's delta reasoning_content joined
};
// Parses a text/event-stream body.
SseReply parse_sse(const std::string& body);

// One counter or gauge of /metrics (first line starting with `name`), or -1.
double metric(httplib::Client& client, const std::string& name);

}  // namespace dsv41::test
