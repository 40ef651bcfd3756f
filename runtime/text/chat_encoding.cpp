// runtime/text/chat_encoding.cpp — messages → DeepSeek-V4.1 prompt text, as the official encoder renders it.
#include "runtime/text/chat_encoding.h"

#include <algorithm>
#include <map>

#include "runtime/text/dsml.h"
#include "runtime/text/python_json.h"

namespace dsv41::text {
namespace {

using namespace markers;
using nlohmann::ordered_json;

// A message after tool messages are merged into user turns: user turns are lists of blocks.
struct Block {
  bool tool_result = false;
  std::string text;          // the text, or the tool result's content
  std::string tool_call_id;  // tool results only
};
struct Turn {
  std::string role;
  const ChatMessage* message = nullptr;  // system, assistant, latest_reminder
  std::vector<Block> blocks;             // user
  bool has_tools = false;                // the system turn the tools block follows
};

Result<std::vector<Turn>> merge_turns(const std::vector<ChatMessage>& messages, bool has_tools,
                                      std::vector<ChatMessage>& storage) {
  // Servers attach the request's tools to the first system message, adding an empty one first if
  // there is none (the encoder itself reads tools from a message).
  std::vector<const ChatMessage*> order;
  storage.clear();
  storage.reserve(1);
  const bool has_system = std::any_of(messages.begin(), messages.end(), [](const auto& m) { return m.role == "system"; });
  if (has_tools && !has_system) {
    ChatMessage empty_system;
    empty_system.role = "system";
    storage.push_back(std::move(empty_system));
    order.push_back(&storage.back());
  }
  for (const auto& m : messages) order.push_back(&m);

  std::vector<Turn> turns;
  bool tools_placed = false;
  for (size_t i = 0; i < order.size(); ++i) {
    const ChatMessage& m = *order[i];
    const bool user_like = m.role == "user" || m.role == "tool";
    if (user_like) {
      Block block{m.role == "tool", m.content, m.tool_call_id};
      if (!turns.empty() && turns.back().role == "user") turns.back().blocks.push_back(std::move(block));
      else turns.push_back(Turn{"user", nullptr, {std::move(block)}});
    } else if (m.role == "system" || m.role == "assistant" || m.role == "latest_reminder") {
      Turn turn{m.role, &m, {}};
      if (m.role == "system" && has_tools && !tools_placed) turn.has_tools = tools_placed = true;
      turns.push_back(std::move(turn));
    } else {
      return Status::errorf("messages[{}].role {:?}: unknown (system, user, assistant, tool, latest_reminder)",
                            i - storage.size(), m.role);
    }
  }
  // Tool results of one turn follow the order of the calls in the latest assistant turn before it
  // (a stable sort; an id not among the calls sorts first).
  std::map<std::string, size_t> call_order;
  for (auto& turn : turns) {
    if (turn.role == "assistant" && !turn.message->tool_calls.empty()) {
      call_order.clear();
      for (size_t k = 0; k < turn.message->tool_calls.size(); ++k) {
        if (!turn.message->tool_calls[k].id.empty()) call_order.emplace(turn.message->tool_calls[k].id, k);
      }
    } else if (turn.role == "user" && !call_order.empty()) {
      std::vector<Block> results;
      for (const auto& b : turn.blocks) if (b.tool_result) results.push_back(b);
      auto rank = [&](const Block& b) { const auto it = call_order.find(b.tool_call_id); return it == call_order.end() ? 0 : it->second; };
      std::stable_sort(results.begin(), results.end(), [&](const Block& a, const Block& b) { return rank(a) < rank(b); });
      size_t next = 0;
      for (auto& b : turn.blocks) if (b.tool_result) b = results[next++];
    }
  }
  return turns;
}

Result<std::string> render_tools(const std::string& tools_json) {
  const ordered_json tools = ordered_json::parse(tools_json, nullptr, false);
  if (tools.is_discarded() || !tools.is_array()) {
    return Status::errorf("tools: not a JSON array: {:.80}", tools_json);
  }
  std::string schemas;
  for (size_t i = 0; i < tools.size(); ++i) {
    if (!tools[i].is_object() || !tools[i].contains("function") || !tools[i]["function"].is_object()) {
      return Status::errorf("tools[{}]: expected {{\"type\": \"function\", \"function\": {{...}}}}, got {:.80}", i,
                            tools[i].dump());
    }
    if (i > 0) schemas += "\n";
    schemas += python_json_dumps(tools[i]["function"]);
  }
  const std::string calls(kCallsStart), calls_end(kCallsEnd), invoke(kInvokeStart), invoke_end(kInvokeEnd),
      parameter(kParameterStart), parameter_end(kParameterEnd), think(kThinkStart), think_end(kThinkEnd);
  return "## Tools\n\nYou have access to a set of tools to help answer the user's question. You can invoke tools "
         "by writing a \"" + calls + "\" block like the following:\n\n" + calls + "\n" + invoke +
         "$TOOL_NAME\">\n" + parameter + "$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE" +
         parameter_end + "\n...\n" + invoke_end + "\n" + invoke + "$TOOL_NAME2\">\n...\n" + invoke_end + "\n" +
         calls_end +
         "\n\nString parameters should be specified as is and set `string=\"true\"`. For all other types "
         "(numbers, booleans, arrays, objects), pass the value in JSON format and set `string=\"false\"`.\n\n"
         "If thinking_mode is enabled (triggered by " + think + "), you MUST output your complete reasoning "
         "inside " + think + "..." + think_end + " BEFORE any tool calls or final response.\n\nOtherwise, "
         "output directly after " + think_end + " with tool calls or final response.\n\n### Available Tool "
         "Schemas\n\n" + schemas + "\n\nYou MUST strictly follow the above defined tool name and parameter "
         "schemas to invoke tool calls.\n";
}

}  // namespace

Result<std::string> encode_chat(const std::vector<ChatMessage>& messages, const ChatOptions& options) {
  if (options.reasoning_effort < 1 || options.reasoning_effort > 100) {
    return Status::errorf("reasoning_effort {}: out of range 1..100", options.reasoning_effort);
  }
  const bool has_tools = !options.tools_json.empty();
  std::string tools_block;
  if (has_tools) {
    DSV41_ASSIGN_OR_RETURN(tools_block, render_tools(options.tools_json));
  }
  std::vector<ChatMessage> storage;
  DSV41_ASSIGN_OR_RETURN(const std::vector<Turn> turns, merge_turns(messages, has_tools, storage));

  // With tools the reasoning of every turn is kept (the encoder forces drop_thinking off).
  const bool drop = options.drop_thinking && !has_tools;
  const bool thinking = options.thinking;
  int last_user = -1;  // a user turn, or a system turn after the first
  for (int i = static_cast<int>(turns.size()) - 1; i >= 0 && last_user < 0; --i) {
    if (turns[i].role == "user" || (turns[i].role == "system" && i > 0)) last_user = i;
  }

  std::string prompt(kBos);
  for (int i = 0; i < static_cast<int>(turns.size()); ++i) {
    const Turn& turn = turns[i];
    if (i == 0 && (thinking || turn.role == "system")) prompt += kSystem;
    if (i == 0 && thinking) {
      prompt += fmt::format("Reasoning Effort: {} (range 1-100, the higher the value, the more thorough the reasoning)\n\n",
                            options.reasoning_effort);
    }
    if (turn.role == "system") {
      if (i > 0) prompt += kSystem;
      prompt += turn.message->content;
      if (turn.has_tools) prompt += "\n\n" + tools_block;
    } else if (turn.role == "user") {
      prompt += kUser;
      for (size_t b = 0; b < turn.blocks.size(); ++b) {
        if (b > 0) prompt += "\n\n";
        const Block& block = turn.blocks[b];
        prompt += block.tool_result ? "<tool_result>" + block.text + "</tool_result>" : block.text;
      }
    } else if (turn.role == "latest_reminder") {
      prompt += std::string(kLatestReminder) + turn.message->content;
    } else {  // assistant: history reasoning survives only when not dropped or after the last user turn
      if (thinking && (!drop || i > last_user)) prompt += turn.message->reasoning_content + std::string(kThinkEnd);
      prompt += turn.message->content;
      if (!turn.message->tool_calls.empty()) prompt += render_dsml_calls(turn.message->tool_calls);
      prompt += kEos;
    }
    const bool next_continues = i + 1 < static_cast<int>(turns.size()) &&
                                (turns[i + 1].role == "assistant" || turns[i + 1].role == "latest_reminder");
    if (i + 1 < static_cast<int>(turns.size()) && !next_continues) continue;
    if (turn.role == "user" || (turn.role == "system" && i > 0)) {
      prompt += kAssistant;
      prompt += thinking && (!drop || i >= last_user) ? kThinkStart : kThinkEnd;
    }
  }
  return prompt;
}

int default_reasoning_effort(EffortMapping mapping) { return mapping == EffortMapping::official ? 75 : 50; }

Result<int> parse_reasoning_effort(const nlohmann::json& value, EffortMapping mapping) {
  if (value.is_number_integer()) {  // booleans and floats are refused, as the official encoder does
    const int64_t v = value.get<int64_t>();
    if (v >= 1 && v <= 100) return static_cast<int>(v);
    return Status::errorf("reasoning_effort {}: out of range (an integer 1..100, or low/high/max)", v);
  }
  if (value.is_string()) {
    const std::string word = value.get<std::string>();
    const std::map<std::string, int> words = mapping == EffortMapping::official
        ? std::map<std::string, int>{{"low", 50}, {"high", 75}, {"max", 100}}
        : std::map<std::string, int>{{"low", 25}, {"high", 50}, {"xhigh", 75}, {"max", 100}};
    if (const auto it = words.find(word); it != words.end()) return it->second;
  }
  return Status::errorf("reasoning_effort {}: not an integer 1..100 or one of {}", value.dump(),
                        mapping == EffortMapping::official ? "low, high, max" : "low, high, xhigh, max");
}

}  // namespace dsv41::text
