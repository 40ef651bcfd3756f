// runtime/text/chat_encoding.h — DeepSeek-V4.1 chat encoding (messages → prompt text) and reply parsing.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace dsv41::text {

struct ToolCall {
  std::string id, name, arguments_json;  // arguments: a JSON object text
};

// One OpenAI chat message. role: system, user, assistant, tool, latest_reminder.
struct ChatMessage {
  std::string role;
  std::string content;
  std::string reasoning_content;  // assistant only
  std::vector<ToolCall> tool_calls;  // assistant only
  std::string tool_call_id, name;  // tool only
};

// Which published word → effort mapping: the official encoder's (low/high/max = 50/75/100, default 75)
// or the one some framework copies use (low/high/xhigh/max = 25/50/75/100, default 50).
enum class EffortMapping { official, framework };

struct ChatOptions {
  bool thinking = false;
  int reasoning_effort = 75;  // 1..100, printed only in thinking mode
  std::string tools_json;  // an OpenAI tools array (JSON text) or empty
  bool drop_thinking = true;  // the encoder's default; forced off when tools are given
};

// The prompt text, BOS first, ending ready for the assistant (`<｜Assistant｜><think>` or `…</think>`)
// after a user turn, or with nothing added after an assistant turn.
Result<std::string> encode_chat(const std::vector<ChatMessage>& messages, const ChatOptions& options);

// An exact integer 1..100, or "low"/"high"/"max" (or the framework mapping's words). The error names the value.
Result<int> parse_reasoning_effort(const nlohmann::json& value,
                                   EffortMapping mapping = EffortMapping::official);
int default_reasoning_effort(EffortMapping mapping = EffortMapping::official);

// What a push or finish adds. tool_calls are complete calls (id, name, arguments JSON object).
struct ReplyDelta {
  std::string reasoning_content, content;
  std::vector<ToolCall> tool_calls;
  bool empty() const { return reasoning_content.empty() && content.empty() && tool_calls.empty(); }
};

// The assistant's generated text → OpenAI fields, incrementally: text that could still be the start
// of a marker (`</think>`, `\n\n<｜DSML｜ calls>`, EOS) is held back until it is decided.
class ReplyParser {
 public:
  explicit ReplyParser(bool thinking);
  ReplyDelta push(std::string_view text);
  ReplyDelta finish();  // flushes what is held back; an unterminated calls block is returned as content

 private:
  enum class Stage { reasoning, content, calls, done };
  ReplyDelta drain(bool at_end);
  Stage stage_;
  std::string buffer_;        // undecided text
  std::string calls_marker_;  // the marker that opened the calls block, to show an unterminated one
  int call_count_ = 0;
};

}  // namespace dsv41::text
