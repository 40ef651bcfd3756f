// runtime/serve/http_server.h — the OpenAI-compatible HTTP server (cpp-httplib): routes, auth, limits, SSE, health, metrics, drain.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "runtime/serve/metrics.h"
#include "runtime/serve/request_parse.h"
#include "runtime/serve/scheduler.h"
#include "runtime/serve/text_codec.h"

namespace httplib {
class Server;
}

namespace dsv41::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless asked otherwise
  int port = 8000;                 // 0: any free port (tests)
  std::string api_key;             // when set, /v1/* need "Authorization: Bearer KEY"
  size_t max_body_bytes = 1 << 20;
  int drain_s = 30;                // running requests get this long after SIGTERM
  int keepalive_ms = 2000;         // SSE comment lines before the first token
  int threads = 32;                // HTTP worker threads (each streaming request holds one)
};

class HttpServer {
 public:
  HttpServer(Scheduler& scheduler, Metrics& metrics, const TextCodec& codec, ServerOptions options, RequestLimits limits);
  ~HttpServer();
  // Binds the listening socket; returns the port (the chosen one when options.port is 0).
  Result<int> bind();
  // Serves until stop() (or the end of a drain); returns once every accepted request has its reply.
  void listen();
  // SIGTERM: new requests get 503 with Retry-After and /health says draining; running ones get
  // --drain-s, then end with an error; once none is left the server stops. A second call cuts the
  // drain short (running requests end at the next round).
  void begin_drain();
  void stop();
  bool draining() const { return draining_; }

 private:
  void routes();
  std::unique_ptr<httplib::Server> http_;
  Scheduler& scheduler_;
  Metrics& metrics_;
  const TextCodec& codec_;
  const ServerOptions options_;
  const RequestLimits limits_;
  std::atomic<bool> draining_{false};
  std::atomic<int> drain_signals_{0};
  std::atomic<int64_t> in_flight_{0};  // accepted generation requests whose reply is not fully written
  std::atomic<int64_t> next_reply_{1};
  std::mutex stop_mutex_;
  std::thread stop_watch_;  // started by the first begin_drain; joined by the destructor
  std::atomic<bool> quitting_{false};
};

}  // namespace dsv41::serve
