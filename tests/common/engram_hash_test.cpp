// tests/common/engram_hash_test.cpp — Engram's prime layout and rolling n-gram hash against rows computed by hand.
#include <gtest/gtest.h>

#include "common/engram_hash.h"
#include "common/model_config.h"
#include "tests/support/test_support.h"

namespace dsv41 {
namespace {

// Vocabulary 10, two layers, orders 2..3, two heads: primes above 9, each order restarting at 9 and
// skipping primes any earlier column took.
TEST(EngramHash, SmallPrimeLayoutRestartsPerOrderAndNeverReusesAPrime) {
  const auto primes = engram_primes(10, 2, 3, 2);
  ASSERT_EQ(primes.size(), 2u);
  EXPECT_EQ(primes[0], (std::vector<int64_t>{11, 13, 17, 19}));
  EXPECT_EQ(primes[1], (std::vector<int64_t>{23, 29, 31, 37}));
}

// The release: 24 primes per layer above 16,000,000 whose sums are the config's table sizes. The
// first and last primes were found independently (a Python trial-division search).
TEST(EngramHash, ReleasePrimesSumToTheConfigsTableSizes) {
  const auto primes = engram_primes(16000000, 2, 4, 8);
  ASSERT_EQ(primes.size(), 2u);
  ASSERT_EQ(primes[0].size(), 24u);
  int64_t sums[2] = {0, 0};
  for (int i = 0; i < 2; ++i)
    for (int64_t p : primes[i]) sums[i] += p;
  EXPECT_EQ(sums[0], 384006168);
  EXPECT_EQ(sums[1], 384016682);
  EXPECT_EQ(primes[0][0], 16000057);
  EXPECT_EQ(primes[0][1], 16000079);
  EXPECT_EQ(primes[0][23], 16000463);
  EXPECT_EQ(primes[1][0], 16000477);
  EXPECT_EQ(primes[1][23], 16000889);
}

EngramLayerHash small_hash() {
  EngramLayerHash h;
  h.layer = 1;
  h.heads = 2;
  h.multipliers = {3, 5, 7};
  h.primes = {11, 13, 17, 19};
  h.offsets = {0, 11, 24, 41};
  return h;
}

std::vector<int64_t> rows_of(const std::vector<int64_t>& lookback, const std::vector<int64_t>& ids) {
  std::vector<int64_t> rows(ids.size() * 4);
  engram_rows(small_hash(), /*pad=*/1, lookback, ids, rows);
  return rows;
}

// Hand computation, pad 1, multipliers 3, 5, 7 (x_1 = a·3 ^ b·5, x_2 = x_1 ^ c·7):
//   t0 (4 | pad, pad): x1 = 12^5 = 9,   x2 = 9^7 = 14   → 9, 9+11, 14+24, 14+41
//   t1 (2 | 4, pad):   x1 = 6^20 = 18,  x2 = 18^7 = 21  → 7, 5+11, 4+24, 2+41
//   t2 (6 | 2, 4):     x1 = 18^10 = 24, x2 = 24^28 = 4  → 2, 11+11, 4+24, 4+41
TEST(EngramHash, RowsOfAPromptMatchTheHandComputation) {
  EXPECT_EQ(rows_of({-1, -1}, {4, 2, 6}), (std::vector<int64_t>{9, 20, 38, 55, 7, 16, 28, 43, 2, 22, 28, 45}));
}

TEST(EngramHash, DecodeFromTheLookbackEqualsThePromptsRow) {
  EXPECT_EQ(rows_of({4, 2}, {6}), (std::vector<int64_t>{2, 22, 28, 45}));
  // One token of history: the older slot is missing and counts as pad (x2 = 24^7 = 31).
  EXPECT_EQ(rows_of({-1, 2}, {6}), (std::vector<int64_t>{2, 22, 14 + 24, 12 + 41}));
}

// A missing token blocks every older one too: with lookback (4, missing), 4 is not used
// (x1 = 18^5 = 23, x2 = 23^7 = 16; without the sticky rule x2 would be 23^28 = 11).
TEST(EngramHash, AMissingTokenBlocksEveryOlderOne) {
  EXPECT_EQ(rows_of({4, -1}, {6}), (std::vector<int64_t>{1, 21, 16 + 24, 16 + 41}));
}

TEST(EngramHash, ReleaseLayersGetTheirTablesAndMultipliers) {
  auto config = load_model_config(test::fixture_config_path("dsv41-release").string());
  ASSERT_TRUE(config.is_ok()) << config.status().message();
  auto hashes = engram_layer_hashes(*config);
  ASSERT_TRUE(hashes.is_ok()) << hashes.status().message();
  ASSERT_EQ(hashes->size(), 2u);
  EXPECT_EQ((*hashes)[0].layer, 1);
  EXPECT_EQ((*hashes)[1].layer, 14);
  EXPECT_EQ((*hashes)[1].table_rows(), 384016682);
  EXPECT_EQ((*hashes)[0].offsets[1], 16000057);
  EXPECT_EQ((*hashes)[0].multipliers[0], 76632096046245);
  for (const EngramLayerHash& h : *hashes)
    for (int64_t m : h.multipliers) {
      EXPECT_EQ(m % 2, 1) << "layer " << h.layer;
      EXPECT_LT(m, INT64_MAX / 99092) << "layer " << h.layer;
    }
}

TEST(EngramHash, TableSizesThatAreNotThePrimeSumsAreRefusedNamingBoth) {
  auto config = load_model_config(test::fixture_config_path("dsv41-release").string());
  ASSERT_TRUE(config.is_ok()) << config.status().message();
  config->engram_num_embeddings[1] += 1;
  auto hashes = engram_layer_hashes(*config);
  ASSERT_FALSE(hashes.is_ok());
  EXPECT_NE(hashes.status().message().find("engram_num_embeddings[1]: value 384016683 for layer 14"), std::string::npos)
      << hashes.status().message();
  EXPECT_NE(hashes.status().message().find("sum to 384016682"), std::string::npos) << hashes.status().message();
}

TEST(EngramHash, UnknownMultiplierDrawsAreRefusedNamingTheirInputs) {
  auto m = engram_multipliers(2, 99092, 4);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("Engram layer 2: no multipliers known for engram_compressed_vocab_size 99092"),
            std::string::npos)
      << m.status().message();
}

}  // namespace
}  // namespace dsv41
