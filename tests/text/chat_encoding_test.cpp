// tests/text/chat_encoding_test.cpp — the encoder against the literal examples of the serving reference.
#include <gtest/gtest.h>

#include "runtime/text/chat_encoding.h"

namespace dsv41::text {
namespace {

ChatMessage msg(std::string role, std::string content, std::string reasoning = "") {
  ChatMessage m;
  m.role = std::move(role);
  m.content = std::move(content);
  m.reasoning_content = std::move(reasoning);
  return m;
}

std::string encode(const std::vector<ChatMessage>& messages, bool thinking, int effort = 75, std::string tools = "") {
  ChatOptions options;
  options.thinking = thinking;
  options.reasoning_effort = effort;
  options.tools_json = std::move(tools);
  auto result = encode_chat(messages, options);
  EXPECT_TRUE(result.is_ok()) << result.status().message();
  return result.is_ok() ? result.value() : "";
}

// Reference §2.7 A (official test_v41_leading_system_message_uses_system_token).
TEST(ChatEncoding, ChatModeWithSystem) {
  EXPECT_EQ(encode({msg("system", "You are a helpful assistant."), msg("user", "hello")}, false),
            "<｜begin▁of▁sentence｜><｜System｜>You are a helpful assistant.<｜User｜>hello<｜Assistant｜></think>");
}

// Reference §2.7 A, second: thinking mode, effort "low" = 50, no system message.
TEST(ChatEncoding, ThinkingLowEffortWithoutSystem) {
  EXPECT_EQ(encode({msg("user", "Explain the fix.")}, true, 50),
            "<｜begin▁of▁sentence｜><｜System｜>Reasoning Effort: 50 (range 1-100, the higher the value, the more "
            "thorough the reasoning)\n\n<｜User｜>Explain the fix.<｜Assistant｜><think>");
}

// Reference §2.7 B (official golden test_output_2): history reasoning dropped, the last turn's kept.
TEST(ChatEncoding, ThinkingMultiTurnDropsHistoryReasoning) {
  const std::vector<ChatMessage> messages = {
      msg("system", "You are a helpful assistant."), msg("user", "Hello"),
      msg("assistant", "Hi there! How can I help you?", "The user greets me."),
      msg("user", "What is the capital of France?"),
      msg("assistant", "The capital of France is Paris.", "The user asks about the capital of France. It is Paris.")};
  EXPECT_EQ(encode(messages, true),
            "<｜begin▁of▁sentence｜><｜System｜>Reasoning Effort: 75 (range 1-100, the higher the value, the more "
            "thorough the reasoning)\n\nYou are a helpful assistant.<｜User｜>Hello<｜Assistant｜></think>Hi there! How "
            "can I help you?<｜end▁of▁sentence｜><｜User｜>What is the capital of France?<｜Assistant｜><think>The user "
            "asks about the capital of France. It is Paris.</think>The capital of France is Paris.<｜end▁of▁sentence｜>");
  // Up to the second user turn it ends ready for the assistant, thinking.
  const std::vector<ChatMessage> open(messages.begin(), messages.end() - 1);
  const std::string prompt = encode(open, true);
  EXPECT_EQ(prompt.substr(prompt.size() - std::string("France?<｜Assistant｜><think>").size()),
            "France?<｜Assistant｜><think>");
}

// Reference §2.7 D (official test_v41_mid_conversation_system_message), effort 88.
TEST(ChatEncoding, MidConversationSystem) {
  EXPECT_EQ(encode({msg("system", "sys"), msg("user", "q1"), msg("assistant", "a1"), msg("system", "mid sys")}, true, 88),
            "<｜begin▁of▁sentence｜><｜System｜>Reasoning Effort: 88 (range 1-100, the higher the value, the more "
            "thorough the reasoning)\n\nsys<｜User｜>q1<｜Assistant｜></think>a1<｜end▁of▁sentence｜><｜System｜>mid "
            "sys<｜Assistant｜><think>");
}

// Reference §2.7 C, the short chat-mode call (kiojuvr fixture "tool"), arguments as a JSON string.
TEST(ChatEncoding, ChatModeToolCallWithoutToolsBlock) {
  ChatMessage call = msg("assistant", "");
  call.tool_calls.push_back({"call_1", "lookup", "{\"query\":\"value\"}"});
  EXPECT_EQ(encode({msg("user", "lookup value"), call}, false),
            "<｜begin▁of▁sentence｜><｜User｜>lookup value<｜Assistant｜></think>\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke "
            "name=\"lookup\">\n<｜DSML｜ parameter name=\"query\" string=\"true\">value</｜DSML｜ parameter>\n</｜DSML｜ "
            "invoke>\n</｜DSML｜ calls><｜end▁of▁sentence｜>");
}

// The §2.4 tools block, literal, with the two schemas of §2.7 C (the reference elides the second
// schema's body, so it is ours), then the call, the merged result and the final answer.
TEST(ChatEncoding, ToolsBlockCallAndResultThinking) {
  const std::string weather =
      R"({"name": "get_weather", "description": "Get the weather for a specific location", "parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "The city name"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"}}, "required": ["location"]}})";
  const std::string search = R"({"name": "search", "description": "Search the web", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}})";
  const std::string tools = R"([{"type": "function", "function": )" + weather +
                            R"(}, {"type": "function", "function": )" + search + "}]";
  ChatMessage call = msg("assistant", "", "The user wants to know the weather in Beijing. I should use the get_weather tool.");
  call.tool_calls.push_back({"call_a", "get_weather", R"({"location": "Beijing", "unit": "celsius"})"});
  ChatMessage result = msg("tool", R"({"temperature": 22, "condition": "sunny", "humidity": 45})");
  result.tool_call_id = "call_a";
  const std::vector<ChatMessage> messages = {
      msg("system", "You are a helpful assistant."), msg("user", "What's the weather in Beijing?"), call, result,
      msg("assistant", "The weather in Beijing is currently sunny with a temperature of 22°C and 45% humidity.",
          "Got the weather data. Let me format a nice response.")};
  const std::string expected =
      "<｜begin▁of▁sentence｜><｜System｜>Reasoning Effort: 75 (range 1-100, the higher the value, the more thorough "
      "the reasoning)\n\nYou are a helpful assistant.\n\n## Tools\n\nYou have access to a set of tools to help answer "
      "the user's question. You can invoke tools by writing a \"<｜DSML｜ calls>\" block like the following:\n\n<｜DSML｜ "
      "calls>\n<｜DSML｜ invoke name=\"$TOOL_NAME\">\n<｜DSML｜ parameter name=\"$PARAMETER_NAME\" "
      "string=\"true|false\">$PARAMETER_VALUE</｜DSML｜ parameter>\n...\n</｜DSML｜ invoke>\n<｜DSML｜ invoke "
      "name=\"$TOOL_NAME2\">\n...\n</｜DSML｜ invoke>\n</｜DSML｜ calls>\n\nString parameters should be specified as is "
      "and set `string=\"true\"`. For all other types (numbers, booleans, arrays, objects), pass the value in JSON "
      "format and set `string=\"false\"`.\n\nIf thinking_mode is enabled (triggered by <think>), you MUST output your "
      "complete reasoning inside <think>...</think> BEFORE any tool calls or final response.\n\nOtherwise, output "
      "directly after </think> with tool calls or final response.\n\n### Available Tool Schemas\n\n" + weather + "\n" +
      search + "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool "
      "calls.\n<｜User｜>What's the weather in Beijing?<｜Assistant｜><think>The user wants to know the weather in "
      "Beijing. I should use the get_weather tool.</think>\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke "
      "name=\"get_weather\">\n<｜DSML｜ parameter name=\"location\" string=\"true\">Beijing</｜DSML｜ parameter>\n<｜DSML｜ "
      "parameter name=\"unit\" string=\"true\">celsius</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ "
      "calls><｜end▁of▁sentence｜><｜User｜><tool_result>{\"temperature\": 22, \"condition\": \"sunny\", \"humidity\": "
      "45}</tool_result><｜Assistant｜><think>Got the weather data. Let me format a nice response.</think>The weather "
      "in Beijing is currently sunny with a temperature of 22°C and 45% humidity.<｜end▁of▁sentence｜>";
  EXPECT_EQ(encode(messages, true, 75, tools), expected);
}

// Reference §2.7 F: tools with no system message get an empty one; chat mode.
TEST(ChatEncoding, ToolsWithoutSystemAddAnEmptySystem) {
  const std::string prompt = encode({msg("user", "hi")}, false, 75, R"([{"type":"function","function":{"name":"f"}}])");
  EXPECT_EQ(prompt.rfind("<｜begin▁of▁sentence｜><｜System｜>\n\n## Tools\n\n", 0), 0u) << prompt;
  EXPECT_NE(prompt.find("### Available Tool Schemas\n\n{\"name\": \"f\"}\n\n"), std::string::npos) << prompt;
  const std::string tail = "calls.\n<｜User｜>hi<｜Assistant｜></think>";
  EXPECT_EQ(prompt.substr(prompt.size() - tail.size()), tail);
}

// Results merge into one user turn in the order of the calls, whatever order they came in; non-string
// arguments are written as Python's json.dumps writes them.
TEST(ChatEncoding, ToolResultsMergeInCallOrder) {
  ChatMessage call = msg("assistant", "");
  call.tool_calls = {{"id1", "a", R"({"n": 2, "xs": [1, 2.5, null], "o": {"k": "é"}})"}, {"id2", "b", "not json"}};
  ChatMessage r2 = msg("tool", "second"), r1 = msg("tool", "first");
  r2.tool_call_id = "id2";
  r1.tool_call_id = "id1";
  const std::string prompt = encode({msg("user", "go"), call, r2, r1}, false);
  EXPECT_NE(prompt.find("<｜User｜><tool_result>first</tool_result>\n\n<tool_result>second</tool_result><｜Assistant｜></think>"),
            std::string::npos) << prompt;
  EXPECT_NE(prompt.find(R"(<｜DSML｜ parameter name="n" string="false">2</｜DSML｜ parameter>)"), std::string::npos);
  EXPECT_NE(prompt.find(R"(name="xs" string="false">[1, 2.5, null]<)"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find(R"(name="o" string="false">{"k": "é"}<)"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find(R"(name="arguments" string="true">not json<)"), std::string::npos) << prompt;
}

TEST(ChatEncoding, ChatModeHasNoEffortOrSystemToken) {
  EXPECT_EQ(encode({msg("user", "hi")}, false, 100), "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜></think>");
}

TEST(ChatEncoding, LatestReminderFollowsWithoutHeader) {
  EXPECT_EQ(encode({msg("user", "q"), msg("latest_reminder", "r")}, false),
            "<｜begin▁of▁sentence｜><｜User｜>q<｜Assistant｜></think><｜latest_reminder｜>r");
}

TEST(ChatEncoding, RefusesUnknownRoleAndBadTools) {
  ChatOptions options;
  auto bad_role = encode_chat({msg("user", "x"), msg("developer", "y")}, options);
  ASSERT_FALSE(bad_role.is_ok());
  EXPECT_NE(bad_role.status().message().find("messages[1].role \"developer\""), std::string::npos)
      << bad_role.status().message();
  options.tools_json = R"({"not": "an array"})";
  auto bad_tools = encode_chat({msg("user", "x")}, options);
  ASSERT_FALSE(bad_tools.is_ok());
  EXPECT_NE(bad_tools.status().message().find("tools: not a JSON array"), std::string::npos);
  options.tools_json.clear();
  options.reasoning_effort = 0;
  auto bad_effort = encode_chat({msg("user", "x")}, options);
  ASSERT_FALSE(bad_effort.is_ok());
  EXPECT_NE(bad_effort.status().message().find("reasoning_effort 0"), std::string::npos);
}

// Official effort table: None→75, low 50, high 75, max 100, 1, 42, 100; refused: -1, 0, 101,
// "medium", true, false, 1.5.
TEST(ReasoningEffort, OfficialTable) {
  EXPECT_EQ(default_reasoning_effort(), 75);
  const std::pair<nlohmann::json, int> accepted[] = {{"low", 50}, {"high", 75}, {"max", 100}, {1, 1}, {42, 42}, {100, 100}};
  for (const auto& [value, expected] : accepted) {
    auto r = parse_reasoning_effort(value);
    ASSERT_TRUE(r.is_ok()) << value.dump() << ": " << r.status().message();
    EXPECT_EQ(*r, expected) << value.dump();
  }
  for (const nlohmann::json& value : {nlohmann::json(-1), nlohmann::json(0), nlohmann::json(101), nlohmann::json("medium"),
                                     nlohmann::json(true), nlohmann::json(false), nlohmann::json(1.5)}) {
    auto r = parse_reasoning_effort(value);
    ASSERT_FALSE(r.is_ok()) << value.dump();
    EXPECT_NE(r.status().message().find("reasoning_effort " + value.dump()), std::string::npos) << r.status().message();
  }
}

TEST(ReasoningEffort, FrameworkMapping) {
  EXPECT_EQ(default_reasoning_effort(EffortMapping::framework), 50);
  EXPECT_EQ(*parse_reasoning_effort("low", EffortMapping::framework), 25);
  EXPECT_EQ(*parse_reasoning_effort("high", EffortMapping::framework), 50);
  EXPECT_EQ(*parse_reasoning_effort("xhigh", EffortMapping::framework), 75);
  EXPECT_FALSE(parse_reasoning_effort("xhigh").is_ok());
}

}  // namespace
}  // namespace dsv41::text
