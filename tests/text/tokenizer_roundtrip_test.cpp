// tests/text/tokenizer_roundtrip_test.cpp — any bytes encode without loss (after UTF-8 repair); long inputs stay fast.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "runtime/text/tokenizer.h"

namespace dsv41::text {
namespace {

Tokenizer tiny() {
  auto tk = Tokenizer::load(std::string(DSV41_SOURCE_DIR) + "/fixtures/dsv41-tiny/tokenizer.json");
  if (!tk.is_ok()) {
    ADD_FAILURE() << tk.status().message();
    std::abort();
  }
  return std::move(tk).value();
}

// Every byte has a token, so decode(encode(x)) gives x back once its invalid UTF-8 is replaced.
TEST(TokenizerRoundTrip, RandomBytesComeBackRepaired) {
  const Tokenizer tk = tiny();
  std::mt19937 rng(41);
  const std::string pool[] = {"a", " ", "  ", "\n", "\t", "7", "!", "é", "日", "😀", "\u180e", "\u00a0", "<｜User｜>", "</think>", "\x80", "\xE4\xBD", "\xFF"};
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    for (int k = static_cast<int>(rng() % 30); k > 0; --k) {
      if (rng() % 4 == 0) text.push_back(static_cast<char>(rng() % 256));
      else text += pool[rng() % std::size(pool)];
    }
    const auto ids = tk.encode(text);
    ASSERT_EQ(tk.decode(ids), utf8_lossy(text)) << "case " << i;
    for (const int32_t id : ids) ASSERT_LT(id, tk.vocab_size());
  }
}

TEST(TokenizerRoundTrip, LongInputIsLinearEnough) {
  const Tokenizer tk = tiny();
  std::string text;
  while (text.size() < 400000) text += "word  123 日本語 \n\n" + std::string(200, ' ') + "x\t";
  const auto start = std::chrono::steady_clock::now();
  const auto ids = tk.encode(text);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(tk.decode(ids), text);
  EXPECT_LT(seconds, 5.0) << "encoding " << text.size() << " bytes took " << seconds << " s";
}

}  // namespace
}  // namespace dsv41::text
