// runtime/cli/serve_command.cpp — `dsv41-rt serve RANK0.fb --model DIR [--port N] ...`: the OpenAI-compatible server (ranks as threads, or this process one rank with --master).
#include "runtime/cli/serve_command.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <pthread.h>
#include <thread>

#include <fmt/format.h>

#include "runtime/cli/backend_flags.h"
#include "runtime/cli/rank_flags.h"
#include "runtime/serve/serving_app.h"

namespace dsv41::cli {
namespace {

// Serves until a drain ends: SIGTERM or SIGINT (blocked in every thread by the caller) begins the
// drain; a second cuts it short.
void serve_until_drained(serve::ServingApp& app, const serve::ServeConfig& config, sigset_t& signals) {
  std::fprintf(stderr, "dsv41-rt serve: model \"%s\" listening on http://%s:%d\n", app.model_name().c_str(),
               config.http.host.c_str(), app.port());
  std::fflush(stderr);
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    for (int seen = 0;; ++seen) {
      int signal = 0;
      if (sigwait(&signals, &signal) != 0) return;
      if (done) return;  // woken to exit
      std::fprintf(stderr, "dsv41-rt serve: %s: %s\n", signal == SIGTERM ? "SIGTERM" : "SIGINT",
                   seen == 0 ? "draining (new requests get 503; a second signal cuts the drain short)"
                             : "cutting the drain short");
      app.begin_drain();
    }
  });
  app.run();
  std::fprintf(stderr, "dsv41-rt serve: stopped\n");
  done = true;
  pthread_kill(watcher.native_handle(), SIGTERM);  // wakes sigwait, which sees `done` and returns
  watcher.join();
}

// One rank of a world of processes. Rank 0 serves, its scheduler's rounds going to every follower;
// after the drain it stops them. A follower ignores SIGTERM and SIGINT (launch forwards them to every
// rank): it ends at rank 0's stop, once rank 0's drain is over, or with exit 3 if rank 0 vanishes.
Status run_serve_as_rank(const serve::ServeConfig& config, dist::RankProcessOptions rank, const BackendFlags& backend,
                         sigset_t& signals) {
  rank.program = config.program;
  rank.purpose = "serve";
  DSV41_TRY(prepare_rank_process(rank, backend, config.model_dir, false));
  if (rank.rank != 0) {
    std::signal(SIGTERM, SIG_IGN);
    std::signal(SIGINT, SIG_IGN);
  }
  const Status status = dist::run_as_rank(rank, [&](dist::LeaderRounds& rounds, const ProgramFile&) -> Status {
    DSV41_ASSIGN_OR_RETURN(std::unique_ptr<serve::ServingApp> app, serve::ServingApp::start(config, &rounds));
    serve_until_drained(*app, config, signals);
    return Status::ok();  // the app (and its scheduler) is gone before the followers are stopped
  });
  return status.with_context(fmt::format("rank {}", rank.rank));
}

Status run_serve(const serve::ServeConfig& config, const dist::RankProcessOptions& rank, const BackendFlags& backend) {
  // Signals go to one thread that waits for them: block them before any other thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that leaves mid-stream is a failed write, not a death
  if (!rank.master.empty()) return run_serve_as_rank(config, rank, backend, signals);
  DSV41_ASSIGN_OR_RETURN(std::unique_ptr<serve::ServingApp> app, serve::ServingApp::start(config));
  serve_until_drained(*app, config, signals);
  return Status::ok();
}

}  // namespace

Runner add_serve_command(CLI::App& app) {
  auto c = std::make_shared<serve::ServeConfig>();
  auto backend = std::make_shared<BackendFlags>();
  auto rank = std::make_shared<dist::RankProcessOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "The OpenAI-compatible HTTP server: /v1/models, /v1/completions, /v1/chat/completions, /health, /metrics.\n"
      "Rank 0's program runs the scheduler; its sibling rank{N}.fb files are the other ranks, each a thread of\n"
      "this process (CPU backend, or --backend cuda: every rank a thread on one GPU). SIGTERM drains: new requests get 503, running ones get --drain-s seconds.\n"
      "With --rank/--world/--master (or `dsv41-rt launch --world 2 serve DIR ...`, `launch --gpus 0,1 serve DIR ... --backend\n"
      "cuda`) every rank is its own process: rank 0 serves HTTP and sends each round's plan to the others; after its\n"
      "drain it stops them (docs/distributed.md).\n"
      "docs/serving.md shows every endpoint.\n\n"
      "Example:\n"
      "  dsv41-rt serve work/tiny-w4/rank0.fb --model work/dsv41-tiny --tokenizer fixtures/dsv41-tiny/tokenizer.json");
  cmd->add_option("PROGRAM", c->program, "rank0.fb of a world (or the folder holding rank0.fb .. rank{W-1}.fb)")->required();
  cmd->add_option("--model", c->model_dir, "the model folder the programs were planned from")->required();
  cmd->add_option("--tokenizer", c->tokenizer,
                  "tokenizer.json (default: the model folder's, when present; without one prompts must be token ids "
                  "and chat is refused)");
  cmd->add_option("--served-model-name", c->model_name, "the model id clients send (default: the model folder's name)");
  cmd->add_option("--host", c->http.host, "address to listen on (loopback by default; 0.0.0.0 for every interface)")
      ->capture_default_str();
  cmd->add_option("--port", c->http.port, "TCP port (0: any free port, printed at start)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--api-key", c->http.api_key, "require \"Authorization: Bearer KEY\" on /v1/* (401 otherwise)");
  cmd->add_option("--max-body-bytes", c->http.max_body_bytes, "largest request body (413 beyond)")
      ->check(CLI::Range(1024, 64 << 20))
      ->capture_default_str();
  cmd->add_option("--max-queue", c->scheduler.max_queue, "requests waiting for a slot (503 beyond)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  cmd->add_option("--prefill-segments", c->scheduler.prefill_segments,
                  "prefill segments per round beside the decode rows (fewer: running streams wait less)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  add_draft_tokens_flag(cmd, c->scheduler.draft_tokens, "in /metrics");
  cmd->add_option("--drain-s", c->http.drain_s, "seconds running requests get after SIGTERM before they end with an error")
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();
  cmd->add_option("--keepalive-ms", c->http.keepalive_ms, "SSE comment interval before a stream's first token")
      ->check(CLI::Range(100, 60000))
      ->capture_default_str();
  cmd->add_option("--http-threads", c->http.threads, "HTTP worker threads (each open stream holds one)")
      ->check(CLI::Range(2, 1024))
      ->capture_default_str();
  cmd->add_option("--default-max-tokens", c->default_max_tokens, "max_tokens of a chat request that gives none")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  add_backend_flags(cmd, *backend);
  add_rank_flags(cmd, *rank);
  return [c, backend, rank]() {
    c->backend = backend_factory(*backend, c->model_dir);
    return run_serve(*c, *rank, *backend);
  };
}

}  // namespace dsv41::cli
