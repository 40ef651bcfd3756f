// runtime/text/reply_parser.cpp — the assistant's text → reasoning, content and tool calls, as it streams.
#include <algorithm>
#include <vector>

#include "runtime/text/chat_encoding.h"
#include "runtime/text/dsml.h"

namespace dsv41::text {
namespace {

using namespace markers;

// "\n\n" + calls is how the encoder writes a calls block; the bare marker is accepted too, so a
// reply that drops the blank line still yields its calls.
const std::string kCallsWithBreak = "\n\n" + std::string(kCallsStart);

struct Hit {
  size_t pos = std::string::npos;
  std::string_view marker;
};

Hit earliest(const std::string& buffer, const std::vector<std::string_view>& markers) {
  Hit best;
  for (const auto marker : markers) {
    const size_t pos = buffer.find(marker);
    if (pos < best.pos || (pos == best.pos && pos != std::string::npos && marker.size() > best.marker.size())) {
      best = {pos, marker};
    }
  }
  return best;
}

// How many trailing bytes could still grow into one of the markers: those are held back.
size_t undecided_tail(const std::string& buffer, const std::vector<std::string_view>& markers) {
  size_t keep = 0;
  for (const auto marker : markers) {
    for (size_t k = std::min(marker.size() - 1, buffer.size()); k > keep; --k) {
      if (buffer.compare(buffer.size() - k, k, marker, 0, k) == 0) {
        keep = k;
        break;
      }
    }
  }
  return keep;
}

}  // namespace

ReplyParser::ReplyParser(bool thinking) : stage_(thinking ? Stage::reasoning : Stage::content) {}

ReplyDelta ReplyParser::push(std::string_view text) {
  buffer_.append(text);
  return drain(false);
}

ReplyDelta ReplyParser::finish() { return drain(true); }

ReplyDelta ReplyParser::drain(bool at_end) {
  ReplyDelta delta;
  while (true) {
    if (stage_ == Stage::reasoning || stage_ == Stage::content) {
      const bool reasoning = stage_ == Stage::reasoning;
      std::string& out = reasoning ? delta.reasoning_content : delta.content;
      static const std::vector<std::string_view> kReasoningMarkers = {kThinkEnd, kEos};
      static const std::vector<std::string_view> kContentMarkers = {kCallsWithBreak, kCallsStart, kEos, kThinkEnd};
      const auto& markers = reasoning ? kReasoningMarkers : kContentMarkers;
      const Hit hit = earliest(buffer_, markers);
      if (hit.pos == std::string::npos) {
        const size_t keep = at_end ? 0 : undecided_tail(buffer_, markers);
        out.append(buffer_, 0, buffer_.size() - keep);
        buffer_.erase(0, buffer_.size() - keep);
        return delta;
      }
      out.append(buffer_, 0, hit.pos);
      buffer_.erase(0, hit.pos + hit.marker.size());
      if (hit.marker == kEos) stage_ = Stage::done;
      else if (hit.marker == kThinkEnd) stage_ = Stage::content;  // in content: a stray `</think>`, dropped
      else {
        stage_ = Stage::calls;
        calls_marker_ = hit.marker;
      }
      continue;
    }
    if (stage_ == Stage::calls) {
      const size_t first = buffer_.find_first_not_of(" \n");
      if (first != std::string::npos && buffer_.compare(first, kCallsEnd.size(), kCallsEnd) == 0) {
        buffer_.erase(0, first + kCallsEnd.size());
        stage_ = Stage::done;  // the reply ends here; text after the block (normally only EOS) is ignored
        continue;
      }
      const size_t end = buffer_.find(kInvokeEnd);
      if (end != std::string::npos) {
        const size_t length = end + kInvokeEnd.size();
        if (auto call = parse_dsml_invoke(std::string_view(buffer_).substr(0, length))) {
          call->id = "call_" + std::to_string(call_count_++);
          delta.tool_calls.push_back(std::move(*call));
        } else {
          delta.content.append(buffer_, 0, length);  // malformed markup is shown, not lost
        }
        buffer_.erase(0, length);
        continue;
      }
      if (at_end) {  // an unterminated block: what is left of it is returned as content
        if (buffer_.find_first_not_of(" \n") != std::string::npos) delta.content += calls_marker_ + buffer_;
        buffer_.clear();
      }
      return delta;
    }
    buffer_.clear();  // done: nothing after EOS or the calls block belongs to the reply
    return delta;
  }
}

}  // namespace dsv41::text
