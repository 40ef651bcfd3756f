// runtime/serve/serving_app.h — the whole server of one world: programs, World (CPU backend unless a factory is given) or given rounds, scheduler, text, HTTP; used by the CLI and tests.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "runtime/serve/http_server.h"
#include "runtime/serve/metrics.h"
#include "runtime/serve/scheduler.h"
#include "runtime/serve/text_codec.h"
#include "runtime/world.h"

namespace dsv41::serve {

struct ServeConfig {
  std::string program;     // rank0.fb (its sibling rank{N}.fb are the other ranks) or the folder holding them
  std::string model_dir;
  std::string model_name;  // the id clients send; empty: the model folder's name
  std::string tokenizer;   // tokenizer.json; empty: MODEL_DIR/tokenizer.json when present, else ids only
  ServerOptions http;
  SchedulerOptions scheduler;
  int64_t default_max_tokens = 256;  // chat requests without max_tokens
  BackendFactory backend;            // empty: the CPU backend
};

class ServingApp {
 public:
  // Loads every rank, starts the world and the scheduler, and binds the port (not yet serving).
  // With `rounds` (rank 0 of a world of rank processes, which outlives the app) the scheduler runs
  // its rounds there instead, and config.program is not read.
  static Result<std::unique_ptr<ServingApp>> start(const ServeConfig& config, RoundRunner* rounds = nullptr);
  ~ServingApp();
  int port() const { return port_; }
  const std::string& model_name() const { return model_name_; }
  // Serves until a drain ends or stop(); returns once every accepted request has its reply.
  void run() { http_->listen(); }
  void begin_drain() { http_->begin_drain(); }
  void stop() { http_->stop(); }

 private:
  ServingApp() = default;
  std::string model_name_;
  int port_ = 0;
  Metrics metrics_;
  std::unique_ptr<TextCodec> codec_;
  std::unique_ptr<World> world_;  // ranks as threads; empty when the rounds were given
  RoundRunner* rounds_ = nullptr;  // world_, or the given rounds
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<HttpServer> http_;
};

}  // namespace dsv41::serve
