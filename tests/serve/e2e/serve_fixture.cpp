// tests/serve/e2e/serve_fixture.cpp — plans the serving fixture once, runs a ServingApp on a thread, reads SSE and metrics.
#include "tests/serve/e2e/serve_fixture.h"

#include <sstream>

#include <gtest/gtest.h>

#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::test {

const fs::path& serve_programs() {
  static TempDir* dir = [] {
    auto* d = new TempDir("serve");
    ServingSettings s = small_settings();
    s.context = 96;
    s.slots = 4;
    s.decode_rows = {1, 2, 4};
    write_programs(d->path() / "w2", tiny_pack("release"), 2, s);
    return d;
  }();
  static const fs::path path = dir->path() / "w2";
  return path;
}

TestServer::TestServer(serve::ServeConfig config) {
  config.program = (serve_programs() / "rank0.fb").string();
  config.model_dir = tiny_pack("release").string();
  if (config.model_name.empty()) config.model_name = "tiny";
  config.http.port = 0;
  auto app = serve::ServingApp::start(config);
  if (!app.is_ok()) {
    ADD_FAILURE() << app.status().message();
    std::abort();
  }
  app_ = std::move(app).value();
  thread_ = std::thread([this] { app_->run(); });
}

TestServer::~TestServer() {
  if (thread_.joinable()) {
    app_->begin_drain();
    app_->begin_drain();
    thread_.join();
  }
}

void TestServer::join() { thread_.join(); }

httplib::Client TestServer::client() const {
  httplib::Client c("127.0.0.1", port());
  // A reply is read for up to 120 s: a 90-token completion took 8 s in the ASan tree on 2 idle cores and
  // over 30 s (the old limit: the drain tests then read -1) while other builds shared the cores.
  c.set_read_timeout(120, 0);
  return c;
}

SseReply parse_sse(const std::string& body) {
  SseReply out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == ':') {
      out.comments.push_back(line);
    } else if (line.rfind("data: ", 0) == 0) {
      const std::string data = line.substr(6);
      if (data == "[DONE]") {
        out.done = true;
        continue;
      }
      nlohmann::json chunk = nlohmann::json::parse(data);
      if (chunk.contains("choices") && !chunk["choices"].empty()) {
        const auto& c = chunk["choices"][0];
        if (c.contains("text")) out.text += c["text"].get<std::string>();
        if (c.contains("delta") && c["delta"].contains("content")) out.text += c["delta"]["content"].get<std::string>();
        if (c.contains("delta") && c["delta"].contains("reasoning_content"))
          out.reasoning += c["delta"]["reasoning_content"].get<std::string>();
      }
      out.chunks.push_back(std::move(chunk));
    }
  }
  return out;
}

double metric(httplib::Client& client, const std::string& name) {
  auto res = client.Get("/metrics");
  if (!res || res->status != 200) return -1;
  std::istringstream in(res->body);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  return -1;
}

}  // namespace dsv41::test
