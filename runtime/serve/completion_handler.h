// runtime/serve/completion_handler.h — answers one admitted generation request: the whole reply, or an SSE stream of chunks.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "runtime/serve/metrics.h"
#include "runtime/serve/openai_json.h"
#include "runtime/serve/request_parse.h"
#include "runtime/serve/request_stream.h"
#include "runtime/serve/text_codec.h"

namespace httplib {
struct Response;
}

namespace dsv41::serve {

struct CompletionContext {
  ParsedRequest request;
  ReplyHeader header;
  std::shared_ptr<RequestStream> stream;
  const TextCodec* codec = nullptr;
  int keepalive_ms = 2000;
  std::function<void()> on_done;  // called once the reply is fully written (or abandoned)
};

// Waits for the whole reply and sets `res` (200, or 503 with an error object when the request ended
// in error). Returns the HTTP status.
int respond_whole(CompletionContext context, httplib::Response& res);
// Sets a chunked text/event-stream provider: chunks as tokens arrive, SSE comments as keepalives
// before the first, then an optional usage chunk and `data: [DONE]`. A write that fails (the client
// left) cancels the request, and the scheduler frees its slot at the next round.
void respond_stream(CompletionContext context, httplib::Response& res);

}  // namespace dsv41::serve
