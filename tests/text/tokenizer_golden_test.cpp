// tests/text/tokenizer_golden_test.cpp — encode/decode against HF tokenizers' goldens, and streaming decode.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "runtime/text/tokenizer.h"

namespace dsv41::text {
namespace {

std::string fixture(const std::string& relative) { return std::string(DSV41_SOURCE_DIR) + "/" + relative; }

std::string unhex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

std::vector<nlohmann::json> read_golden(const std::string& label) {
  std::ifstream in(fixture("fixtures/golden/tokenizer-" + label + ".jsonl"));
  std::vector<nlohmann::json> cases;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') cases.push_back(nlohmann::json::parse(line));
  }
  return cases;
}

// Loaded once per binary: the release file is a few MB.
const Tokenizer& tokenizer(const std::string& label) {
  static std::map<std::string, Tokenizer> loaded;
  auto it = loaded.find(label);
  if (it == loaded.end()) {
    auto result = Tokenizer::load(fixture("fixtures/dsv41-" + label + "/tokenizer.json"));
    if (!result.is_ok()) {
      ADD_FAILURE() << result.status().message();
      std::abort();
    }
    it = loaded.emplace(label, std::move(result).value()).first;
  }
  return it->second;
}

class TokenizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerGolden, EncodeAndDecodeMatchHfTokenizers) {
  const Tokenizer& tk = tokenizer(GetParam());
  const auto cases = read_golden(GetParam());
  ASSERT_GE(cases.size(), 40u) << "golden file for " << GetParam() << " missing or short";
  for (const auto& c : cases) {
    const std::string name = c["case"];
    if (c.contains("decode_ids")) {
      EXPECT_EQ(tk.decode(c["decode_ids"].get<std::vector<int32_t>>()), c["decoded"].get<std::string>()) << name;
      continue;
    }
    const std::string text = c.contains("hex") ? unhex(c["hex"]) : c["text"].get<std::string>();
    const auto expected = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tk.encode(text), expected) << GetParam() << " case " << name;
    EXPECT_EQ(tk.decode(expected), c["decoded"].get<std::string>()) << GetParam() << " case " << name;
  }
}

// For every prefix of every golden id list: the pieces a StreamDecoder hands out, then finish(),
// equal decode() of that prefix, and no piece holds a partial character (each is valid UTF-8).
TEST_P(TokenizerGolden, StreamDecodeEqualsWholeDecodeForEveryPrefix) {
  const Tokenizer& tk = tokenizer(GetParam());
  for (const auto& c : read_golden(GetParam())) {
    const auto ids = c.contains("decode_ids") ? c["decode_ids"].get<std::vector<int32_t>>()
                                              : c["ids"].get<std::vector<int32_t>>();
    for (size_t k = 0; k <= ids.size(); ++k) {
      StreamDecoder stream(tk);
      std::string streamed;
      for (size_t i = 0; i < k; ++i) {
        const std::string piece = stream.push(ids[i]);
        EXPECT_EQ(utf8_lossy(piece), piece) << c["case"] << " piece " << i;
        streamed += piece;
      }
      streamed += stream.finish();
      const std::vector<int32_t> prefix(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k));
      ASSERT_EQ(streamed, tk.decode(prefix)) << c["case"] << " prefix " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerGolden, ::testing::Values("release", "tiny"));

TEST(Tokenizer, ReleaseSpecialIdsAndSize) {
  const Tokenizer& tk = tokenizer("release");
  EXPECT_EQ(tk.vocab_size(), 129280);
  const std::pair<const char*, int32_t> expected[] = {
      {"<｜begin▁of▁sentence｜>", 0}, {"<｜end▁of▁sentence｜>", 1}, {"<｜System｜>", 128799},
      {"<｜User｜>", 128803},           {"<｜Assistant｜>", 128804},       {"<think>", 128821},
      {"</think>", 128822},            {"｜DSML｜", 128825},              {"<｜latest_reminder｜>", 128828},
      {"<｜deepseek_image｜>", 129264}, {"Ġthe", 270}};
  for (const auto& [token, id] : expected) EXPECT_EQ(tk.token_id(token), id) << token;
  EXPECT_EQ(tk.token_id("no such token"), std::nullopt);
  EXPECT_EQ(tk.token_bytes(270), " the");
  EXPECT_EQ(tk.token_bytes(128803), "<｜User｜>");
}

TEST(Tokenizer, TinyFitsTheTinyConfig) {
  const Tokenizer& tk = tokenizer("tiny");
  EXPECT_EQ(tk.vocab_size(), 1280);  // fixtures/dsv41-tiny/config.json vocab_size
  for (const char* token : {"<｜System｜>", "<｜User｜>", "<｜Assistant｜>", "<think>", "</think>", "｜DSML｜",
                            "<｜latest_reminder｜>", "<｜end▁of▁sentence｜>"}) {
    EXPECT_TRUE(tk.token_id(token).has_value()) << token;
  }
  EXPECT_EQ(tk.token_id("<｜end▁of▁sentence｜>"), 1);
  EXPECT_EQ(tk.token_id("<｜begin▁of▁sentence｜>"), 0);
}

TEST(Tokenizer, AddedTokensSplitTheTextLeftmostLongest) {
  const Tokenizer& tk = tokenizer("release");
  const auto ids = tk.encode("a<｜User｜><｜User｜>b</think>｜DSML｜<｜Use");
  EXPECT_EQ(ids[1], 128803);
  EXPECT_EQ(ids[2], 128803);
  EXPECT_NE(std::find(ids.begin(), ids.end(), 128822), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), 128825), ids.end());
  EXPECT_EQ(tk.decode(ids), "a<｜User｜><｜User｜>b</think>｜DSML｜<｜Use");
}

TEST(Tokenizer, ReleaseLoadsFast) {
  const auto start = std::chrono::steady_clock::now();
  auto result = Tokenizer::load(fixture("fixtures/dsv41-release/tokenizer.json"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  // 0.5 s is the target of an optimised build on an idle machine; CI shares 2 cores with builds, and
  // sanitizer builds run several times slower.
#if defined(__SANITIZE_ADDRESS__)
  const double limit = 30.0;
#else
  const double limit = 3.0;
#endif
  EXPECT_LT(seconds, limit) << "loading the release tokenizer took " << seconds << " s";
  std::printf("release tokenizer.json loaded in %.3f s\n", seconds);
}

}  // namespace
}  // namespace dsv41::text
