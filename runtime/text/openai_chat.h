// runtime/text/openai_chat.h — an OpenAI /v1/chat/completions request body → ChatMessages and ChatOptions.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "runtime/text/chat_encoding.h"

namespace dsv41::text {

// Parse request bodies with nlohmann::ordered_json: tool schemas and object arguments are written
// into the prompt in their key order, as the official encoder does (nlohmann::json sorts keys).

// What a server decides when the request does not say.
struct ChatDefaults {
  bool thinking = true;  // vLLM's and TensorFold's default for V4.1; the official encoder has none
  EffortMapping effort_mapping = EffortMapping::official;
};

// `messages`: role, content (a string, null, or text parts joined by "\n\n"), assistant
// reasoning_content (or reasoning) and tool_calls (arguments a JSON string or an object), tool
// tool_call_id. Errors name the message index and field, e.g. `messages[2].content[0].type "image_url"`.
Result<std::vector<ChatMessage>> messages_from_openai(const nlohmann::ordered_json& messages);

// Thinking: `thinking: {"type": "enabled"|"disabled"}` first, then chat_template_kwargs `thinking` /
// `enable_thinking`, then the default; `reasoning_effort: "none"` turns it off. Effort: thinking.effort,
// then top-level reasoning_effort, then chat_template_kwargs.reasoning_effort, then the mapping's
// default (an effort alone does not turn thinking on). Tools: `tools` unless tool_choice is "none".
Result<ChatOptions> chat_options_from_openai(const nlohmann::ordered_json& request, const ChatDefaults& defaults);

// Reply tool calls as OpenAI's message.tool_calls: [{"id", "type": "function", "function": {...}}].
nlohmann::ordered_json tool_calls_to_openai(const std::vector<ToolCall>& calls);

}  // namespace dsv41::text
