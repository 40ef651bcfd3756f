// tests/text/tokenizer_refusal_test.cpp — unsupported or broken tokenizer.json files are refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include <nlohmann/json.hpp>

#include "runtime/text/tokenizer.h"

namespace dsv41::text {
namespace {

// A minimal valid byte-level tokenizer: bytes "a", "b", the merge "a b", one added token.
nlohmann::json minimal() {
  return nlohmann::json::parse(R"({
    "normalizer": {"type": "Sequence", "normalizers": []},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\s+|\\S+"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
    "decoder": {"type": "ByteLevel"},
    "added_tokens": [{"id": 3, "content": "<eos>", "normalized": false, "special": true}],
    "model": {"type": "BPE", "byte_fallback": false, "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}
  })");
}

std::string refusal(const nlohmann::json& j) {
  auto result = Tokenizer::load_from_string(j.dump(), "test.json");
  return result.is_ok() ? "(accepted)" : result.status().message();
}

TEST(TokenizerRefusal, MinimalLoadsAndMerges) {
  auto result = Tokenizer::load_from_string(minimal().dump(), "test.json");
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  EXPECT_EQ(result->encode("abab ba<eos>c"), (std::vector<int32_t>{2, 2, 1, 0, 3}));  // no token for " " and "c"
  EXPECT_EQ(result->vocab_size(), 4);
}

TEST(TokenizerRefusal, MissingFileNamesThePath) {
  auto result = Tokenizer::load("/nonexistent/tokenizer.json");
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("/nonexistent/tokenizer.json"), std::string::npos);
}

TEST(TokenizerRefusal, NotJson) {
  auto result = Tokenizer::load_from_string("{not json", "broken.json");
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("broken.json: not a JSON object"), std::string::npos);
}

TEST(TokenizerRefusal, UnsupportedFieldsAreNamedWithTheirValue) {
  struct Case {
    std::string what;
    std::function<void(nlohmann::json&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"model type", [](auto& j) { j["model"]["type"] = "WordPiece"; }, "model.type \"WordPiece\" is not supported"},
      {"byte_fallback", [](auto& j) { j["model"]["byte_fallback"] = true; }, "model.byte_fallback true"},
      {"normalizer", [](auto& j) { j["normalizer"] = {{"type", "NFC"}}; }, "normalizer {\"type\":\"NFC\"}"},
      {"decoder", [](auto& j) { j["decoder"]["type"] = "Metaspace"; }, "decoder.type \"Metaspace\""},
      {"split behavior", [](auto& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; },
       "Split behavior \"Removed\""},
      {"pre-tokenizer type", [](auto& j) { j["pre_tokenizer"]["pretokenizers"][0]["type"] = "Whitespace"; },
       "pre_tokenizer type \"Whitespace\""},
      {"bad regex", [](auto& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a"; },
       "Split regex \"(a\": PCRE2 refuses it"},
      {"merge of unknown", [](auto& j) { j["model"]["merges"].push_back("b c"); }, "model.merges[1] \"b\" + \"c\""},
      {"lstrip", [](auto& j) { j["added_tokens"][0]["lstrip"] = true; }, "\"<eos>\" (id 3): lstrip true"},
  };
  for (const auto& c : cases) {
    nlohmann::json j = minimal();
    c.edit(j);
    const std::string message = refusal(j);
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.what << ": " << message;
    EXPECT_EQ(message.rfind("test.json: ", 0), 0u) << c.what << ": " << message;
  }
}

TEST(Utf8Lossy, MaximalSubpartsBecomeOneReplacementEach) {
  EXPECT_EQ(utf8_lossy("a\x80\x80" "b"), "a\uFFFD\uFFFDb");  // each stray continuation byte
  EXPECT_EQ(utf8_lossy("\xE4\xBD" "a"), "\uFFFD" "a");        // a truncated sequence is one
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");  // surrogates: ED then two strays
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98"), "\uFFFD");
  EXPECT_EQ(utf8_lossy("\xC0\xAF"), "\uFFFD\uFFFD");
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
}

}  // namespace
}  // namespace dsv41::text
