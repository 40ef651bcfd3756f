// runtime/serve/completion_handler.cpp — the whole-reply wait loop and the SSE content provider.
#include "runtime/serve/completion_handler.h"

#include <httplib.h>

#include "runtime/serve/reply.h"
#include "runtime/text/chat_encoding.h"
#include "runtime/text/openai_chat.h"

namespace dsv41::serve {
namespace {

using json = nlohmann::json;

// Text is valid UTF-8 by construction (lossy decoding, cuts at code point boundaries); should a
// byte slip through, it is replaced rather than thrown from a writer thread.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

ApiError ended_in_error(const Finish& finish) { return {503, "server_error", finish.error, "", 0}; }

// One request's progress, shared by the provider calls of a stream.
struct Job {
  explicit Job(CompletionContext c) : ctx(std::move(c)), reply(*ctx.codec, ctx.request.stop) {
    if (ctx.request.chat && ctx.codec->has_tokenizer()) parser.emplace(ctx.request.thinking);
  }
  CompletionContext ctx;
  Reply reply;
  std::optional<text::ReplyParser> parser;  // chat: reasoning, content and tool calls from the text
  int tool_calls = 0;
  int64_t text_offset = 0;
  bool first = true;
  // The reply's fields for the next piece of generated text.
  ReplyText shape(const std::string& piece, bool at_end) {
    if (!parser) return {piece, "", json::array()};
    text::ReplyDelta delta = parser->push(piece);
    if (at_end) {
      text::ReplyDelta rest = parser->finish();
      delta.reasoning_content += rest.reasoning_content;
      delta.content += rest.content;
      delta.tool_calls.insert(delta.tool_calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
    }
    ReplyText out{delta.content, delta.reasoning_content, json::array()};
    for (const auto& call : text::tool_calls_to_openai(delta.tool_calls)) {
      json c = json::parse(call.dump());
      c["index"] = tool_calls++;  // a stream's deltas number their calls
      out.tool_calls.push_back(std::move(c));
    }
    return out;
  }
  std::string finish_reason() const {
    return tool_calls > 0 && reply.finish_reason() == "stop" ? "tool_calls" : reply.finish_reason();
  }
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
  ReplyText whole;
  std::vector<TokenEvent> tokens;
  auto add = [&](const ReplyPiece& piece, bool at_end) {
    const ReplyText t = job.shape(piece.text, at_end);
    whole.content += t.content;
    whole.reasoning += t.reasoning;
    for (const json& call : t.tool_calls) whole.tool_calls.push_back(call);
    tokens.insert(tokens.end(), piece.tokens.begin(), piece.tokens.end());
  };
  std::optional<Finish> finish;
  while (!finish) {
    const std::vector<TokenEvent> events = job.ctx.stream->wait(std::chrono::milliseconds(500), finish);
    add(job.reply.add(events), false);
    if (job.reply.stopped()) {
      job.ctx.stream->cancel("stop");
      finish = Finish{"stop", ""};
    }
  }
  int status = 200;
  if (finish->reason == "error") {
    status = 503;
    res.status = status;
    res.set_content(dump(error_json(ended_in_error(*finish))), "application/json");
  } else {
    add(job.reply.end(*finish), true);
    const json body = reply_json(job.ctx.header, whole, job.logprobs(tokens), job.finish_reason(), job.prompt_tokens(),
                                 job.reply.completion_tokens());
    res.set_content(dump(body), "application/json");
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
    auto data = [&](const json& j) { return send("data: " + dump(j) + "\n\n"); };
    std::optional<Finish> finish;
    const std::vector<TokenEvent> events = job->ctx.stream->wait(std::chrono::milliseconds(job->ctx.keepalive_ms), finish);
    if (events.empty() && !finish) return job->first ? send(": keepalive\n\n") : send(": \n\n");
    ReplyPiece piece = job->reply.add(events);
    if (job->reply.stopped()) {
      job->ctx.stream->cancel("stop");
      finish = Finish{"stop", ""};
    }
    const ReplyText shaped = job->shape(piece.text, false);
    if (!shaped.empty() || !piece.tokens.empty() || (job->first && job->ctx.request.chat)) {
      if (!data(chunk_json(job->ctx.header, shaped, job->logprobs(piece.tokens), "", job->first))) return false;
      job->first = false;
      job->text_offset += static_cast<int64_t>(piece.text.size());
    }
    if (!finish) return true;
    if (finish->reason == "error") {
      if (!data(error_json(ended_in_error(*finish)))) return false;
    } else {
      ReplyPiece last = job->reply.end(*finish);
      if (!data(chunk_json(job->ctx.header, job->shape(last.text, true), job->logprobs(last.tokens), job->finish_reason(),
                           job->first)))
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
