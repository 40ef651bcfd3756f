// runtime/serve/serving_app.cpp — wires programs, the World (CPU or a given backend) or given rounds, the text codec, the scheduler and the HTTP server together.
#include "runtime/serve/serving_app.h"

#include <cstdio>
#include <filesystem>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/generate.h"

namespace dsv41::serve {

namespace fs = std::filesystem;

namespace {

// The World of rank threads that the programs of config.program make.
Result<std::unique_ptr<World>> start_world(const ServeConfig& config) {
  std::error_code ec;
  const std::string dir = fs::is_directory(config.program, ec) ? config.program : fs::path(config.program).parent_path().string();
  if (!fs::is_directory(config.program, ec) && !fs::is_regular_file(config.program, ec))
    return Status::errorf("{}: no such program (give rank0.fb of a world, or the folder holding rank0.fb ..)", config.program);
  if (!fs::is_directory(config.program, ec) && fs::path(config.program).filename() != "rank0.fb")
    return Status::errorf("{}: serve starts from rank0.fb (rank 0 runs the scheduler; its sibling rank files are the "
                          "other ranks)", config.program);
  DSV41_ASSIGN_OR_RETURN(std::vector<ProgramFile> programs, load_world_programs(dir.empty() ? "." : dir));
  const int world = static_cast<int>(programs.size());
  DSV41_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, cpu::make_backend(config.backend, config.model_dir, world));
  return World::start(std::move(programs), std::move(backend));
}

}  // namespace

Result<std::unique_ptr<ServingApp>> ServingApp::start(const ServeConfig& config, RoundRunner* rounds) {
  std::error_code ec;
  std::unique_ptr<ServingApp> app(new ServingApp());
  app->model_name_ = config.model_name.empty() ? fs::path(config.model_dir).lexically_normal().filename().string()
                                               : config.model_name;
  if (app->model_name_.empty()) app->model_name_ = "dsv41";
  if (!rounds) {
    DSV41_ASSIGN_OR_RETURN(app->world_, start_world(config));
    rounds = app->world_.get();
  }
  app->rounds_ = rounds;
  std::string tokenizer = config.tokenizer;
  if (tokenizer.empty() && fs::is_regular_file(fs::path(config.model_dir) / "tokenizer.json", ec))
    tokenizer = (fs::path(config.model_dir) / "tokenizer.json").string();
  if (tokenizer.empty()) {
    app->codec_ = ids_only_codec(config.model_dir);
  } else {
    auto codec = tokenizer_codec(tokenizer);
    if (!codec.is_ok()) return codec.status().with_context("--tokenizer");
    app->codec_ = std::move(codec).value();
  }
  const WorldFacts& f = app->rounds_->facts();
  if (config.scheduler.draft_tokens < 0 || config.scheduler.draft_tokens > f.draft_tokens)
    return Status::errorf("--draft-tokens {}: must be between 0 and the {} the programs were planned for (dsv41c plan "
                          "--draft-tokens)", config.scheduler.draft_tokens, f.draft_tokens);
  SchedulerOptions scheduling = config.scheduler;
  scheduling.dspark = f.dspark;  // its Draft phases propose, when planned
  if (scheduling.draft_tokens > 0)
    std::fprintf(stderr, "dsv41-rt: drafting by %s, up to %lld drafts a round\n",
                 scheduling.drafter ? "the given drafter" : scheduling.dspark.drafter(),
                 static_cast<long long>(scheduling.draft_tokens));
  app->scheduler_ = std::make_unique<Scheduler>(*app->rounds_, app->metrics_, scheduling);
  RequestLimits limits{app->model_name_, f.context, f.vocab, config.default_max_tokens};
  app->http_ = std::make_unique<HttpServer>(*app->scheduler_, app->metrics_, *app->codec_, config.http, limits);
  DSV41_ASSIGN_OR_RETURN(app->port_, app->http_->bind());
  return app;
}

ServingApp::~ServingApp() {
  if (http_) http_->stop();
  http_.reset();  // no handler runs past here
  scheduler_.reset();
  world_.reset();
}

}  // namespace dsv41::serve
