// tests/text/openai_chat_test.cpp — OpenAI request bodies read into messages and options, and refusals.
#include <gtest/gtest.h>

#include "runtime/text/openai_chat.h"

namespace dsv41::text {
namespace {

using json = nlohmann::ordered_json;

TEST(OpenAiChat, MessagesWithPartsCallsAndResults) {
  const json body = json::parse(R"([
    {"role": "system", "content": null},
    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    {"role": "assistant", "content": "", "reasoning_content": "why",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}},
                    {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{\"y\":2}"}}]},
    {"role": "tool", "tool_call_id": "c2", "content": "r2"}])");
  auto messages = messages_from_openai(body);
  ASSERT_TRUE(messages.is_ok()) << messages.status().message();
  ASSERT_EQ(messages->size(), 4u);
  EXPECT_EQ((*messages)[0].content, "");
  EXPECT_EQ((*messages)[1].content, "a\n\nb");
  EXPECT_EQ((*messages)[2].reasoning_content, "why");
  ASSERT_EQ((*messages)[2].tool_calls.size(), 2u);
  EXPECT_EQ((*messages)[2].tool_calls[0].arguments_json, R"({"x":1})");
  EXPECT_EQ((*messages)[2].tool_calls[1].arguments_json, R"({"y":2})");
  EXPECT_EQ((*messages)[3].tool_call_id, "c2");
  const json calls = tool_calls_to_openai((*messages)[2].tool_calls);
  EXPECT_EQ(calls[1]["function"]["name"], "g");
  EXPECT_EQ(calls[1]["type"], "function");
}

TEST(OpenAiChat, RefusalsNameTheField) {
  auto image = messages_from_openai(json::parse(R"([{"role":"user","content":[{"type":"image_url"}]}])"));
  ASSERT_FALSE(image.is_ok());
  EXPECT_NE(image.status().message().find("messages[0].content[0].type \"image_url\""), std::string::npos)
      << image.status().message();
  auto role = messages_from_openai(json::parse(R"([{"role": 3}])"));
  ASSERT_FALSE(role.is_ok());
  EXPECT_NE(role.status().message().find("messages[0].role: expected a string"), std::string::npos);
  EXPECT_FALSE(messages_from_openai(json::array()).is_ok());
  auto effort = chat_options_from_openai(json{{"reasoning_effort", "medium"}}, ChatDefaults{});
  ASSERT_FALSE(effort.is_ok());
  EXPECT_NE(effort.status().message().find("reasoning_effort \"medium\""), std::string::npos);
}

TEST(OpenAiChat, ThinkingAndEffortPrecedence) {
  const ChatDefaults defaults;
  auto plain = chat_options_from_openai(json::object(), defaults);
  ASSERT_TRUE(plain.is_ok());
  EXPECT_TRUE(plain->thinking);
  EXPECT_EQ(plain->reasoning_effort, 75);
  auto kwargs = chat_options_from_openai(json::parse(R"({"chat_template_kwargs": {"thinking": false, "reasoning_effort": "max"}})"), defaults);
  EXPECT_FALSE(kwargs->thinking);
  EXPECT_EQ(kwargs->reasoning_effort, 100);
  auto top = chat_options_from_openai(json::parse(R"({"reasoning_effort": 33, "chat_template_kwargs": {"reasoning_effort": "max"}})"), defaults);
  EXPECT_EQ(top->reasoning_effort, 33);
  auto explicit_thinking = chat_options_from_openai(
      json::parse(R"({"thinking": {"type": "enabled", "effort": "low"}, "reasoning_effort": 90, "chat_template_kwargs": {"thinking": false}})"), defaults);
  EXPECT_TRUE(explicit_thinking->thinking);
  EXPECT_EQ(explicit_thinking->reasoning_effort, 50);
  auto none = chat_options_from_openai(json{{"reasoning_effort", "none"}}, defaults);
  EXPECT_FALSE(none->thinking);
  ChatDefaults framework;
  framework.effort_mapping = EffortMapping::framework;
  EXPECT_EQ(chat_options_from_openai(json{{"reasoning_effort", "high"}}, framework)->reasoning_effort, 50);
}

TEST(OpenAiChat, ToolsUnlessToolChoiceNone) {
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}])");
  auto with = chat_options_from_openai(json{{"tools", tools}}, ChatDefaults{});
  EXPECT_EQ(json::parse(with->tools_json), tools);
  // Key order survives into the prompt (name before description, as given).
  auto prompt = encode_chat({ChatMessage{"user", "hi", "", {}, "", ""}}, *with);
  ASSERT_TRUE(prompt.is_ok()) << prompt.status().message();
  EXPECT_NE(prompt->find(R"({"name": "f", "description": "d", "parameters": {}})"), std::string::npos) << *prompt;
  auto none = chat_options_from_openai(json{{"tools", tools}, {"tool_choice", "none"}}, ChatDefaults{});
  EXPECT_TRUE(none->tools_json.empty());
}

}  // namespace
}  // namespace dsv41::text
