// runtime/serve/completion_handler.cpp — the whole-reply wait loop and the SSE content provider.
#include "runtime/serve/completion_handler.h"

#include <httplib.h>

#include "runtime/serve/reply.h"

namespace dsv41::serve {
namespace {

using json = nlohmann::json;

ApiError ended_in_error(const Finish& finish) { return {503, "server_error", finish.error, "", 0}; }

// One request's progress, shared by the provider calls of a stream.
struct Job {
  explicit Job(CompletionContext c) : ctx(std::move(c)), reply(*ctx.codec, ctx.request.stop) {}
  CompletionContext ctx;
  Reply reply;
  int64_t text_offset = 0;
  bool first = true;
  json logprobs(const std::vector<TokenEvent>& tokens) {
    if (!ctx.request.logprobs) return nullptr;
    json out = logprobs_json(ctx.request.chat, tokens, *ctx.codec, text_offset);
    return out;
  }
  int64_t prompt_tokens() const { return static_cast<int64_t>(ctx.request.generation.prompt.size()); }
};

}  // namespace

int respond_whole(CompletionContext context, httplib::Response& res) {
  Job job(std::move(context));
  std::string text;
  std::vector<TokenEvent> tokens;
  std::optional<Finish> finish;
  while (!finish) {
    const std::vector<TokenEvent> events = job.ctx.stream->wait(std::chrono::milliseconds(500), finish);
    ReplyPiece piece = job.reply.add(events);
    text += piece.text;
    tokens.insert(tokens.end(), piece.tokens.begin(), piece.tokens.end());
    if (job.reply.stopped()) {
      job.ctx.stream->cancel("stop");
      finish = Finish{"stop", ""};
    }
  }
  int status = 200;
  if (finish->reason == "error") {
    status = 503;
    res.status = status;
    res.set_content(error_json(ended_in_error(*finish)).dump(), "application/json");
  } else {
    ReplyPiece piece = job.reply.end(*finish);
    text += piece.text;
    tokens.insert(tokens.end(), piece.tokens.begin(), piece.tokens.end());
    const json body = reply_json(job.ctx.header, text, job.logprobs(tokens), job.reply.finish_reason(),
                                 job.prompt_tokens(), job.reply.completion_tokens());
    res.set_content(body.dump(), "application/json");
  }
  if (job.ctx.on_done) job.ctx.on_done();
  return status;
}

void respond_stream(CompletionContext context, httplib::Response& res) {
  auto job = std::make_shared<Job>(std::move(context));
  auto provider = [job](size_t, httplib::DataSink& sink) -> bool {
    auto send = [&](const std::string& event) {
      if (!sink.is_writable() || !sink.write(event.data(), event.size())) {
        job->ctx.stream->cancel();  // the client left: free the slot at the next round
        return false;
      }
      return true;
    };
    auto data = [&](const json& j) { return send("data: " + j.dump() + "\n\n"); };
    std::optional<Finish> finish;
    const std::vector<TokenEvent> events = job->ctx.stream->wait(std::chrono::milliseconds(job->ctx.keepalive_ms), finish);
    if (events.empty() && !finish) return job->first ? send(": keepalive\n\n") : send(": \n\n");
    ReplyPiece piece = job->reply.add(events);
    if (job->reply.stopped()) {
      job->ctx.stream->cancel("stop");
      finish = Finish{"stop", ""};
    }
    if (!piece.text.empty() || !piece.tokens.empty() || (job->first && job->ctx.request.chat)) {
      if (!data(chunk_json(job->ctx.header, piece.text, job->logprobs(piece.tokens), "", job->first))) return false;
      job->first = false;
      job->text_offset += static_cast<int64_t>(piece.text.size());
    }
    if (!finish) return true;
    if (finish->reason == "error") {
      if (!data(error_json(ended_in_error(*finish)))) return false;
    } else {
      ReplyPiece last = job->reply.end(*finish);
      if (!data(chunk_json(job->ctx.header, last.text, job->logprobs(last.tokens), job->reply.finish_reason(), job->first)))
        return false;
      if (job->ctx.request.include_usage &&
          !data(usage_chunk_json(job->ctx.header, job->prompt_tokens(), job->reply.completion_tokens())))
        return false;
    }
    if (!send("data: [DONE]\n\n")) return false;
    sink.done();
    return true;
  };
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", provider, [job](bool success) {
    if (!success) job->ctx.stream->cancel();
    if (job->ctx.on_done) job->ctx.on_done();
  });
}

}  // namespace dsv41::serve
