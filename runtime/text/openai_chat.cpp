// runtime/text/openai_chat.cpp — OpenAI chat request fields read into the encoder's inputs.
#include "runtime/text/openai_chat.h"

namespace dsv41::text {
namespace {

using json = nlohmann::ordered_json;

Result<std::string> content_text(const json& content, const std::string& where) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return Status::errorf("{}: expected a string, null or an array of parts, got {}", where,
                                                 content.type_name());
  std::string text;
  for (size_t k = 0; k < content.size(); ++k) {
    const json& part = content[k];
    const std::string type = part.is_object() ? part.value("type", "") : "";
    if (type != "text" || !part.contains("text") || !part["text"].is_string()) {
      return Status::errorf("{}[{}].type {:?}: only text parts are supported", where, k, type);
    }
    if (k > 0) text += "\n\n";
    text += part["text"].get<std::string>();
  }
  return text;
}

Result<std::string> string_field(const json& object, const char* field, const std::string& where) {
  if (!object.contains(field) || object[field].is_null()) return std::string();
  if (!object[field].is_string()) return Status::errorf("{}.{}: expected a string, got {}", where, field, object[field].type_name());
  return object[field].get<std::string>();
}

Result<ToolCall> tool_call_from_openai(const json& call, const std::string& where) {
  if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
    return Status::errorf("{}: expected {{\"id\", \"type\": \"function\", \"function\": {{\"name\", \"arguments\"}}}}", where);
  }
  ToolCall result;
  DSV41_ASSIGN_OR_RETURN(result.id, string_field(call, "id", where));
  DSV41_ASSIGN_OR_RETURN(result.name, string_field(call["function"], "name", where + ".function"));
  const json& arguments = call["function"].value("arguments", json());
  result.arguments_json = arguments.is_string() ? arguments.get<std::string>() : arguments.is_null() ? "{}" : arguments.dump();
  return result;
}

}  // namespace

Result<std::vector<ChatMessage>> messages_from_openai(const json& messages) {
  if (!messages.is_array() || messages.empty()) return Status::error("messages: expected a non-empty array");
  std::vector<ChatMessage> result;
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string where = fmt::format("messages[{}]", i);
    const json& m = messages[i];
    if (!m.is_object()) return Status::errorf("{}: expected an object", where);
    ChatMessage message;
    DSV41_ASSIGN_OR_RETURN(message.role, string_field(m, "role", where));
    DSV41_ASSIGN_OR_RETURN(message.content, content_text(m.value("content", json()), where + ".content"));
    DSV41_ASSIGN_OR_RETURN(message.name, string_field(m, "name", where));
    if (message.role == "assistant") {
      const char* field = m.contains("reasoning_content") ? "reasoning_content" : "reasoning";
      DSV41_ASSIGN_OR_RETURN(message.reasoning_content, string_field(m, field, where));
      const json& calls = m.value("tool_calls", json());
      if (!calls.is_null() && !calls.is_array()) return Status::errorf("{}.tool_calls: expected an array", where);
      for (size_t k = 0; calls.is_array() && k < calls.size(); ++k) {
        DSV41_ASSIGN_OR_RETURN(ToolCall call, tool_call_from_openai(calls[k], fmt::format("{}.tool_calls[{}]", where, k)));
        message.tool_calls.push_back(std::move(call));
      }
    } else if (message.role == "tool") {
      DSV41_ASSIGN_OR_RETURN(message.tool_call_id, string_field(m, "tool_call_id", where));
    }
    result.push_back(std::move(message));
  }
  return result;
}

Result<ChatOptions> chat_options_from_openai(const json& request, const ChatDefaults& defaults) {
  ChatOptions options;
  options.thinking = defaults.thinking;
  const json kwargs = request.value("chat_template_kwargs", json::object());
  for (const char* key : {"enable_thinking", "thinking"}) {
    if (kwargs.is_object() && kwargs.contains(key) && kwargs[key].is_boolean()) options.thinking = kwargs[key].get<bool>();
  }
  json effort;  // the first one given wins
  const json thinking = request.value("thinking", json());
  if (thinking.is_object()) {
    const std::string type = thinking.value("type", "");
    if (type == "enabled") options.thinking = true;
    else if (type == "disabled") options.thinking = false;
    else return Status::errorf("thinking.type {:?}: expected \"enabled\" or \"disabled\"", type);
    if (thinking.contains("effort")) effort = thinking["effort"];
  } else if (!thinking.is_null()) {
    return Status::errorf("thinking: expected an object {{\"type\": \"enabled\"|\"disabled\"}}, got {}", thinking.dump());
  }
  if (effort.is_null() && request.contains("reasoning_effort")) effort = request["reasoning_effort"];
  if (effort.is_null() && kwargs.is_object() && kwargs.contains("reasoning_effort")) effort = kwargs["reasoning_effort"];
  if (effort == "none") {
    options.thinking = false;
    effort = json();
  }
  options.reasoning_effort = default_reasoning_effort(defaults.effort_mapping);
  if (!effort.is_null()) {
    DSV41_ASSIGN_OR_RETURN(options.reasoning_effort,
                           parse_reasoning_effort(nlohmann::json(effort), defaults.effort_mapping));
  }
  const json tools = request.value("tools", json());
  if (!tools.is_null() && !tools.is_array()) return Status::errorf("tools: expected an array, got {}", tools.type_name());
  if (tools.is_array() && !tools.empty() && request.value("tool_choice", json()) != "none") options.tools_json = tools.dump();
  return options;
}

json tool_calls_to_openai(const std::vector<ToolCall>& calls) {
  json out = json::array();
  for (const auto& call : calls) {
    out.push_back({{"id", call.id}, {"type", "function"},
                   {"function", {{"name", call.name}, {"arguments", call.arguments_json}}}});
  }
  return out;
}

}  // namespace dsv41::text
