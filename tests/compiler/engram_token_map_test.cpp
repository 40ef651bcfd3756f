// tests/compiler/engram_token_map_test.cpp — Engram's normalisation on known strings; the fixtures' token maps.
#include <gtest/gtest.h>

#include "common/engram_hash.h"
#include "compiler/tokens/engram_token_map.h"

namespace dsv41 {
namespace {

using text::Tokenizer;

TEST(EngramTokenMap, NormalisationFoldsCompatibilityAccentsCaseAndSpaces) {
  EXPECT_EQ(engram_normalize("Caf\xC3\xA9"), "cafe");                   // é: NFD splits off U+0301, stripped
  EXPECT_EQ(engram_normalize(" Hello"), "hello");                       // leading space stripped
  EXPECT_EQ(engram_normalize("\xEF\xAC\x81"), "fi");                    // U+FB01 ligature: NFKC
  EXPECT_EQ(engram_normalize("\xEF\xBC\xA1"), "a");                     // fullwidth A
  EXPECT_EQ(engram_normalize("\xC4\xB0"), "i");                         // İ → I + U+0307 → I → i
  EXPECT_EQ(engram_normalize("\xCE\x91\xCE\xA3"), "\xCE\xB1\xCF\x83");  // ΑΣ → ασ: per character, no final ς
  EXPECT_EQ(engram_normalize("\xE3\x80\x80x"), "x");                    // ideographic space: NFKC to " ", stripped
  EXPECT_EQ(engram_normalize("a \t\r\n b"), "a b");                     // one run, one space
  EXPECT_EQ(engram_normalize("a\xC2\xA0\xC2\xA0"
                             "b"),
            "a b");  // NBSP: NFKC to " " first, then collapsed
}

TEST(EngramTokenMap, ALoneSpaceSurvivesTheStripAndEmptyStaysEmpty) {
  EXPECT_EQ(engram_normalize(" "), " ");
  EXPECT_EQ(engram_normalize("\n\t"), " ");
  EXPECT_EQ(engram_normalize("   "), " ");
  EXPECT_EQ(engram_normalize(" x "), "x");
  EXPECT_EQ(engram_normalize(""), "");
  EXPECT_EQ(engram_normalize("\xCC\x81"), "");  // a lone combining accent strips to nothing
}

// Loaded once (about 2 s): every test here reads the same release tokenizer.
const Tokenizer& release_tokenizer() {
  static const Tokenizer tokenizer = [] {
    auto t = Tokenizer::load(std::string(DSV41_SOURCE_DIR) + "/fixtures/dsv41-release/tokenizer.json");
    EXPECT_TRUE(t.is_ok()) << t.status().message();
    return std::move(t).value();
  }();
  return tokenizer;
}

TEST(EngramTokenMap, KeysOfKnownTokens) {
  const Tokenizer& t = release_tokenizer();
  const auto hello = t.token_id("Hello"), space_hello = t.token_id("\xC4\xA0hello");  // Ġhello
  ASSERT_TRUE(hello && space_hello);
  EXPECT_EQ(engram_token_key(t, *hello), "hello");
  EXPECT_EQ(engram_token_key(t, *space_hello), "hello");
  EXPECT_EQ(engram_token_key(t, 0), "<|begin\xE2\x96\x81of\xE2\x96\x81sentence|>");  // NFKC: fullwidth ｜ → |
  // A lone continuation byte decodes to U+FFFD: the key is the byte-level spelling (0x80 → U+0122 "Ģ").
  const auto byte80 = t.token_id("\xC4\xA2");
  ASSERT_TRUE(byte80);
  EXPECT_EQ(engram_token_key(t, *byte80), "\xC4\xA2");
}

// The release states 99,092; this fixture's tokenizer gives 99,510 (docs/model.md "Engram" says which
// ids account for the difference). An independent Python count (unicodedata) gives the same 99,510.
TEST(EngramTokenMap, ReleaseTokenizerCountAndARefusalNamingBothNumbers) {
  const Tokenizer& t = release_tokenizer();
  auto map = build_engram_token_map(t, 129280, 99510, "tokenizer.json");
  ASSERT_TRUE(map.is_ok()) << map.status().message();
  EXPECT_EQ(map->compressed[0], 0);
  EXPECT_EQ(map->compressed.size(), 129280u);
  auto wrong = build_engram_token_map(t, 129280, 99092 + 1, "tokenizer.json");
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.status().message().find("has 99510 compressed ids, but config engram_compressed_vocab_size is 99093"),
            std::string::npos)
      << wrong.status().message();
}

// The tiny Engram fixture's config states the count of its tokenizer's map, and its tables the sums
// of its primes: the whole plan-time check passes on it.
TEST(EngramTokenMap, TinyEngramFixtureIsConsistent) {
  const std::string dir = std::string(DSV41_SOURCE_DIR) + "/fixtures/dsv41-tiny-engram";
  auto config = load_model_config(dir + "/config.json");
  ASSERT_TRUE(config.is_ok()) << config.status().message();
  std::vector<std::string> warnings;
  auto map = model_engram_token_map(*config, dir, &warnings);
  ASSERT_TRUE(map.is_ok()) << map.status().message();
  ASSERT_TRUE(map->has_value());
  EXPECT_EQ((*map)->count, 1070);
  EXPECT_TRUE(warnings.empty());
  auto hashes = engram_layer_hashes(*config);
  ASSERT_TRUE(hashes.is_ok()) << hashes.status().message();
  EXPECT_EQ((*hashes)[0].primes, (std::vector<int64_t>{1009, 1013, 1019, 1021, 1031, 1033}));
  EXPECT_EQ((*hashes)[1].table_rows(), 6332);
  // A folder without tokenizer.json is planned with a warning, not refused.
  auto none = model_engram_token_map(*config, std::string(DSV41_SOURCE_DIR) + "/fixtures", &warnings);
  ASSERT_TRUE(none.is_ok()) << none.status().message();
  EXPECT_FALSE(none->has_value());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("absent, so the Engram token map is not built"), std::string::npos) << warnings[0];
}

// The plan-time check on a model folder: a config whose engram_compressed_vocab_size is not the map's
// count is refused naming both; --accept-engram-map-count turns that into a warning, and the map is
// kept as built (never forced to the config's number).
TEST(EngramTokenMap, ModelFolderCountMismatchIsRefusedOrAcceptedLoudly) {
  const std::string dir = std::string(DSV41_SOURCE_DIR) + "/fixtures/dsv41-tiny-engram";
  auto config = load_model_config(dir + "/config.json");
  ASSERT_TRUE(config.is_ok()) << config.status().message();
  config->engram_compressed_vocab_size = 1071;
  std::vector<std::string> warnings;
  auto refused = model_engram_token_map(*config, dir, &warnings);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("has 1070 compressed ids, but config engram_compressed_vocab_size is 1071"),
            std::string::npos)
      << refused.status().message();
  auto accepted = model_engram_token_map(*config, dir, &warnings, true);
  ASSERT_TRUE(accepted.is_ok()) << accepted.status().message();
  ASSERT_TRUE(accepted->has_value());
  EXPECT_EQ((*accepted)->count, 1070);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("accepted by request"), std::string::npos) << warnings[0];
}

}  // namespace
}  // namespace dsv41
