// tests/serve/reply_test.cpp — a reply's text pieces: stop strings across tokens, hold-back, and cuts only at UTF-8 boundaries.
#include "runtime/serve/reply.h"

#include <gtest/gtest.h>

namespace dsv41::serve {
namespace {

// Token id i reads as kPieces[i].
const std::vector<std::string> kPieces = {"ab", "c", "\xC3\xA9", "\xE2\x82\xAC", "xy", "z"};  // é, €

class PiecesStream final : public TextStream {
 public:
  std::string push(int32_t id) override { return kPieces[id]; }
  std::string finish() override { return ""; }
};
class PiecesCodec final : public TextCodec {
 public:
  bool has_tokenizer() const override { return true; }
  Result<std::vector<int32_t>> encode(const std::string&) const override { return Status::error("unused"); }
  Result<ChatPrompt> chat_prompt(const std::string&) const override { return Status::error("unused"); }
  std::unique_ptr<TextStream> stream() const override { return std::make_unique<PiecesStream>(); }
  std::string token_text(int32_t id) const override { return kPieces[id]; }
};

std::vector<TokenEvent> tokens(std::vector<int32_t> ids) {
  std::vector<TokenEvent> out;
  for (int32_t id : ids) out.push_back({id, 0.0f, {}, false});
  return out;
}

bool valid_utf8_cut(const std::string& s) { return s.empty() || (static_cast<unsigned char>(s.back()) & 0xC0) != 0xC0; }

TEST(Reply, AStopStringSpanningTokensCutsTheTextThere) {
  PiecesCodec codec;
  Reply reply(codec, {"bc"});
  std::string text = reply.add(tokens({0})).text;
  EXPECT_EQ(text, "a") << "the b could start the stop string: held back";
  text += reply.add(tokens({1, 4})).text;
  EXPECT_TRUE(reply.stopped());
  EXPECT_EQ(reply.finish_reason(), "stop");
  text += reply.end({"length", ""}).text;
  EXPECT_EQ(text, "a");
  EXPECT_EQ(reply.completion_tokens(), 2) << "the token after the stop is dropped";
}

TEST(Reply, HeldBackTextIsNeverCutInsideAUtf8Sequence) {
  PiecesCodec codec;
  Reply reply(codec, {"zzzz"});  // holds back 3 bytes
  std::string text;
  for (int32_t id : {2, 3, 2, 4, 3}) {
    const std::string piece = reply.add(tokens({id})).text;
    EXPECT_TRUE(valid_utf8_cut(piece)) << "piece ends inside a sequence after token " << id;
    if (!piece.empty()) EXPECT_NE(static_cast<unsigned char>(piece[0]) & 0xC0, 0x80) << "piece starts mid-sequence";
    text += piece;
  }
  text += reply.end({"length", ""}).text;
  EXPECT_EQ(text, "\xC3\xA9\xE2\x82\xAC\xC3\xA9xy\xE2\x82\xAC");
  EXPECT_EQ(reply.finish_reason(), "length");
}

TEST(Reply, TheEosTokenCountsButShowsNoText) {
  PiecesCodec codec;
  Reply reply(codec, {});
  std::vector<TokenEvent> t = tokens({0, 1});
  t[1].eos = true;
  EXPECT_EQ(reply.add(t).text, "ab");
  EXPECT_EQ(reply.completion_tokens(), 2);
}

}  // namespace
}  // namespace dsv41::serve
