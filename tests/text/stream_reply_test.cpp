// tests/text/stream_reply_test.cpp — ids streamed through StreamDecoder into ReplyParser, as serving does.
#include <gtest/gtest.h>

#include "runtime/text/chat_encoding.h"
#include "runtime/text/tokenizer.h"

namespace dsv41::text {
namespace {

// A reply with multi-byte characters cut across tokens by the tiny vocabulary, reasoning, and a call:
// one id at a time through both stages gives what parsing the whole decoded text gives.
TEST(StreamReply, TokenByTokenEqualsWholeText) {
  auto tk = Tokenizer::load(std::string(DSV41_SOURCE_DIR) + "/fixtures/dsv41-tiny/tokenizer.json");
  ASSERT_TRUE(tk.is_ok()) << tk.status().message();
  const std::string reply =
      "想一想 🤔 about ½</think>答案: 42 — done\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"f\">\n<｜DSML｜ parameter "
      "name=\"q\" string=\"true\">日本</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls><｜end▁of▁sentence｜>";
  const std::vector<int32_t> ids = tk->encode(reply);
  ASSERT_EQ(tk->decode(ids), reply);
  ASSERT_EQ(ids.back(), 1);  // EOS is one token

  ReplyParser whole_parser(true);
  ReplyDelta whole = whole_parser.push(reply);
  const ReplyDelta rest = whole_parser.finish();
  whole.content += rest.content;
  ASSERT_EQ(whole.reasoning_content, "想一想 🤔 about ½");
  ASSERT_EQ(whole.content, "答案: 42 — done");
  ASSERT_EQ(whole.tool_calls.size(), 1u);
  EXPECT_EQ(whole.tool_calls[0].arguments_json, R"({"q":"日本"})");

  StreamDecoder decoder(*tk);
  ReplyParser parser(true);
  ReplyDelta streamed;
  auto add = [&](const ReplyDelta& d) {
    // No piece of reasoning or content may carry a fragment of a marker.
    for (const std::string* piece : {&d.reasoning_content, &d.content}) {
      EXPECT_EQ(piece->find("</"), std::string::npos) << *piece;
      EXPECT_EQ(piece->find("<｜"), std::string::npos) << *piece;
    }
    streamed.reasoning_content += d.reasoning_content;
    streamed.content += d.content;
    streamed.tool_calls.insert(streamed.tool_calls.end(), d.tool_calls.begin(), d.tool_calls.end());
  };
  for (const int32_t id : ids) add(parser.push(decoder.push(id)));
  add(parser.push(decoder.finish()));
  add(parser.finish());
  EXPECT_EQ(streamed.reasoning_content, whole.reasoning_content);
  EXPECT_EQ(streamed.content, whole.content);
  ASSERT_EQ(streamed.tool_calls.size(), 1u);
  EXPECT_EQ(streamed.tool_calls[0].name, "f");
  EXPECT_EQ(streamed.tool_calls[0].arguments_json, whole.tool_calls[0].arguments_json);
}

}  // namespace
}  // namespace dsv41::text
