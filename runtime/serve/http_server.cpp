// runtime/serve/http_server.cpp — routes (/v1/models, /v1/completions, /v1/chat/completions, /health, /metrics), auth, errors, drain.
#include "runtime/serve/http_server.h"

#include <chrono>
#include <random>

#include <fmt/format.h>
#include <httplib.h>

#include "runtime/serve/completion_handler.h"
#include "runtime/serve/openai_json.h"

namespace dsv41::serve {
namespace {

using json = nlohmann::json;

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.retry_after_s > 0) res.set_header("Retry-After", std::to_string(e.retry_after_s));
  res.set_content(error_json(e).dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A seed for a request that gave none, reported back in the reply so the run can be repeated.
uint64_t draw_seed() {
  static std::mutex mutex;
  static std::mt19937_64 engine{std::random_device{}()};
  std::lock_guard lock(mutex);
  return engine() >> 1;  // fits the int64 range a client may send back
}

}  // namespace

HttpServer::HttpServer(Scheduler& scheduler, Metrics& metrics, const TextCodec& codec, ServerOptions options,
                       RequestLimits limits)
    : http_(std::make_unique<httplib::Server>()), scheduler_(scheduler), metrics_(metrics), codec_(codec),
      options_(std::move(options)), limits_(std::move(limits)) {
  const int threads = options_.threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_keep_alive_timeout(5);
  routes();
}

HttpServer::~HttpServer() {
  quitting_ = true;
  std::lock_guard lock(stop_mutex_);
  if (stop_watch_.joinable()) stop_watch_.join();
}

Result<int> HttpServer::bind() {
  if (options_.port == 0) {
    const int port = http_->bind_to_any_port(options_.host);
    if (port <= 0) return Status::errorf("--host {}: cannot bind any port", options_.host);
    return port;
  }
  if (!http_->bind_to_port(options_.host, options_.port))
    return Status::errorf("--host {} --port {}: cannot bind (in use, or not an address of this machine?)", options_.host,
                          options_.port);
  return options_.port;
}

void HttpServer::listen() { http_->listen_after_bind(); }

void HttpServer::stop() { http_->stop(); }

void HttpServer::begin_drain() {
  const int signals = ++drain_signals_;
  draining_ = true;
  const auto now = Scheduler::Clock::now();
  scheduler_.drain(signals == 1 ? now + std::chrono::seconds(options_.drain_s) : now);
  std::lock_guard lock(stop_mutex_);
  if (stop_watch_.joinable()) return;
  // Stops listening once every accepted request has its reply written; httplib's stop() then lets
  // the worker threads finish what they are writing.
  stop_watch_ = std::thread([this] {
    while (!quitting_ && !(scheduler_.idle() && in_flight_ == 0)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop();
  });
}

void HttpServer::routes() {
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (options_.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + options_.api_key)
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, {401, "invalid_request_error",
                     "missing or wrong API key: send the server's --api-key as \"Authorization: Bearer KEY\"", "", 0});
    metrics_.count_request(req.path, 401);
    return httplib::Server::HandlerResponse::Handled;
  });
  // Statuses httplib sets itself (unknown path, body too large) get an OpenAI-shaped body too.
  http_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.content_length_ > 0) return;
    ApiError e{res.status, "invalid_request_error", fmt::format("{} {}: HTTP {}", req.method, req.path, res.status), "", 0};
    if (res.status == 404) e.message = fmt::format("{} {}: no such endpoint", req.method, req.path);
    if (res.status == 413)
      e.message = fmt::format("the request body exceeds the server's limit of {} bytes (--max-body-bytes)", options_.max_body_bytes);
    send_error(res, e);
    metrics_.count_request(req.path, res.status);
  });

  http_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const std::string failure = scheduler_.failure();
    const char* state = !failure.empty() ? "failed" : draining_ ? "draining" : "ready";
    res.status = std::string(state) == "ready" ? 200 : 503;
    json body = {{"status", state}, {"live", failure.empty()}};
    if (!failure.empty()) body["error"] = failure;
    res.set_content(body.dump(), "application/json");
  });
  http_->Get("/health/live", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"live"})", "application/json");
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(), "text/plain; version=0.0.4");
  });
  auto model_json = [this] {
    return json{{"id", limits_.model}, {"object", "model"}, {"created", 0}, {"owned_by", "dsv41"},
                {"max_model_len", limits_.context}};
  };
  http_->Get("/v1/models", [this, model_json](const httplib::Request& req, httplib::Response& res) {
    res.set_content(json{{"object", "list"}, {"data", json::array({model_json()})}}.dump(), "application/json");
    metrics_.count_request(req.path, 200);
  });
  http_->Get(R"(/v1/models/(.+))", [this, model_json](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != limits_.model)
      send_error(res, {404, "invalid_request_error",
                       fmt::format("model: \"{}\" does not exist; this server serves \"{}\"", req.matches[1].str(), limits_.model),
                       "model", 0});
    else
      res.set_content(model_json().dump(), "application/json");
    metrics_.count_request("/v1/models/{id}", res.status);
  });

  auto generation = [this](bool chat) {
    return [this, chat](const httplib::Request& req, httplib::Response& res) {
      const std::string endpoint = chat ? "/v1/chat/completions" : "/v1/completions";
      if (draining_) {
        send_error(res, unavailable("the server is draining (shutting down); retry on another replica", 5));
        metrics_.count_request(endpoint, res.status);
        return;
      }
      auto parsed = parse_request(req.body, chat, limits_, codec_);
      if (auto* e = std::get_if<ApiError>(&parsed)) {
        send_error(res, *e);
        metrics_.count_request(endpoint, res.status);
        return;
      }
      ParsedRequest request = std::get<ParsedRequest>(std::move(parsed));
      if (!request.seed_given) request.generation.sampling.seed = draw_seed();
      ++in_flight_;
      auto submitted = scheduler_.submit(request.generation);
      if (auto* e = std::get_if<ApiError>(&submitted)) {
        --in_flight_;
        send_error(res, *e);
        metrics_.count_request(endpoint, res.status);
        return;
      }
      CompletionContext context;
      context.header = {chat, fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", next_reply_++), limits_.model, unix_now(),
                        request.generation.sampling.seed};
      context.request = std::move(request);
      context.stream = std::get<std::shared_ptr<RequestStream>>(submitted);
      context.codec = &codec_;
      context.keepalive_ms = options_.keepalive_ms;
      context.on_done = [this] { --in_flight_; };
      if (context.request.stream) {
        metrics_.count_request(endpoint, 200);
        respond_stream(std::move(context), res);
      } else {
        metrics_.count_request(endpoint, respond_whole(std::move(context), res));
      }
    };
  };
  http_->Post("/v1/completions", generation(false));
  http_->Post("/v1/chat/completions", generation(true));
}

}  // namespace dsv41::serve
