// tests/text/reply_parser_test.cpp — replies → reasoning, content, tool calls; whole and split at every byte.
#include <gtest/gtest.h>

#include "runtime/text/chat_encoding.h"

namespace dsv41::text {
namespace {

// Everything a parser hands out, fed `text` in pieces of at most `step` bytes (0: all at once).
ReplyDelta parse(const std::string& text, bool thinking, size_t step = 0) {
  ReplyParser parser(thinking);
  ReplyDelta total;
  auto add = [&](const ReplyDelta& d) {
    total.reasoning_content += d.reasoning_content;
    total.content += d.content;
    total.tool_calls.insert(total.tool_calls.end(), d.tool_calls.begin(), d.tool_calls.end());
  };
  if (step == 0) step = text.size() + 1;
  for (size_t i = 0; i < text.size(); i += step) add(parser.push(std::string_view(text).substr(i, step)));
  add(parser.finish());
  return total;
}

// Whole, and split into 1-byte pieces, and split once at every byte position: the same result.
void expect_every_split(const std::string& text, bool thinking, const ReplyDelta& expected) {
  const ReplyDelta whole = parse(text, thinking);
  EXPECT_EQ(whole.reasoning_content, expected.reasoning_content);
  EXPECT_EQ(whole.content, expected.content);
  ASSERT_EQ(whole.tool_calls.size(), expected.tool_calls.size());
  for (size_t i = 0; i < expected.tool_calls.size(); ++i) {
    EXPECT_EQ(whole.tool_calls[i].name, expected.tool_calls[i].name);
    EXPECT_EQ(whole.tool_calls[i].arguments_json, expected.tool_calls[i].arguments_json);
  }
  const ReplyDelta bytes = parse(text, thinking, 1);
  EXPECT_EQ(bytes.reasoning_content, whole.reasoning_content) << "1-byte pieces";
  EXPECT_EQ(bytes.content, whole.content) << "1-byte pieces";
  EXPECT_EQ(bytes.tool_calls.size(), whole.tool_calls.size()) << "1-byte pieces";
  for (size_t cut = 1; cut < text.size(); ++cut) {
    ReplyParser parser(thinking);
    ReplyDelta a = parser.push(std::string_view(text).substr(0, cut));
    ReplyDelta b = parser.push(std::string_view(text).substr(cut));
    ReplyDelta c = parser.finish();
    EXPECT_EQ(a.reasoning_content + b.reasoning_content + c.reasoning_content, whole.reasoning_content) << "cut " << cut;
    EXPECT_EQ(a.content + b.content + c.content, whole.content) << "cut " << cut;
    EXPECT_EQ(a.tool_calls.size() + b.tool_calls.size() + c.tool_calls.size(), whole.tool_calls.size()) << "cut " << cut;
  }
}

// Reference §2.6 (official README example).
TEST(ReplyParser, ReasoningThenContent) {
  ReplyDelta expected;
  expected.reasoning_content = "Simple arithmetic.";
  expected.content = "2 + 2 = 4.";
  expect_every_split("Simple arithmetic.</think>2 + 2 = 4.<｜end▁of▁sentence｜>", true, expected);
}

// Reference §4: the official V41_TOOL_CALL_OUTPUT.
TEST(ReplyParser, OfficialToolCallOutput) {
  const std::string text =
      "  reason  </think>summary\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"lookup\">\n<｜DSML｜ parameter "
      "name=\"query\" string=\"true\">value</｜DSML｜ parameter>\n<｜DSML｜ parameter name=\"limit\" "
      "string=\"false\">2</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls><｜end▁of▁sentence｜>";
  ReplyDelta expected;
  expected.reasoning_content = "  reason  ";
  expected.content = "summary";
  expected.tool_calls.push_back({"call_0", "lookup", R"({"query":"value","limit":2})"});
  expect_every_split(text, true, expected);
  EXPECT_EQ(parse(text, true).tool_calls[0].id, "call_0");
}

TEST(ReplyParser, ChatModeSeveralCallsAndNoContent) {
  const std::string text =
      "\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"a\">\n<｜DSML｜ parameter name=\"s\" string=\"true\">x \"q\" "
      "</think> y</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n<｜DSML｜ invoke name=\"b\">\n<｜DSML｜ parameter name=\"o\" "
      "string=\"false\">{\"k\": [1, true]}</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls>";
  ReplyDelta expected;
  expected.tool_calls.push_back({"", "a", R"({"s":"x \"q\" </think> y"})"});
  expected.tool_calls.push_back({"", "b", R"({"o":{"k":[1,true]}})"});
  expect_every_split(text, false, expected);
}

// A marker cut in two never leaks its first half into the text.
TEST(ReplyParser, HoldsBackPartialMarkers) {
  ReplyParser parser(true);
  EXPECT_EQ(parser.push("thinking</thi").reasoning_content, "thinking");
  ReplyDelta d = parser.push("nk>ans\n");
  EXPECT_EQ(d.reasoning_content, "");
  EXPECT_EQ(d.content, "ans");  // "\n" could start "\n\n<｜DSML｜ calls>"
  d = parser.push("\n<｜DSML｜");
  EXPECT_EQ(d.content, "");
  d = parser.push(" nope");
  EXPECT_EQ(d.content, "\n\n<｜DSML｜ nope");
  d = parser.push("<｜end▁of▁sen");
  EXPECT_EQ(d.content, "");
  d = parser.push("tence｜>trailing");
  EXPECT_TRUE(d.empty());
  EXPECT_TRUE(parser.finish().empty());
}

TEST(ReplyParser, StrayThinkEndInContentIsDropped) {
  ReplyDelta expected;
  expected.content = "ab";
  expect_every_split("a</think>b", false, expected);
}

TEST(ReplyParser, UnterminatedReasoningAndBlockAreReturned) {
  EXPECT_EQ(parse("still thinking</th", true).reasoning_content, "still thinking</th");
  const ReplyDelta cut = parse("x\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"a\">", false);
  EXPECT_EQ(cut.content, "x\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"a\">");
  EXPECT_TRUE(cut.tool_calls.empty());
}

}  // namespace
}  // namespace dsv41::text
