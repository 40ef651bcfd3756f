// tests/dist/agreement_test.cpp — the start-up agreement: its wire form, a match, and each kind of mismatch listing every rank's value.
#include "runtime/dist/agreement.h"

#include <functional>

#include <gtest/gtest.h>

namespace dsv41::dist {
namespace {

RankFacts facts(int rank) {
  RankFacts f;
  f.rank = rank;
  f.world = 3;
  f.program_digest = 100 + rank;
  f.agreement_digest = 0xa1;
  f.config_digest = 0xc1;
  f.pack_digest = 0xb1;
  f.settings = "context 64, slots 2, prefill [8, 4], decode [1, 2], activations BF16";
  f.target = "none";
  f.arch = "cpu";
  f.build = build_version();
  return f;
}

TEST(Agreement, FactsRoundTripAndTruncationIsRefused) {
  const RankFacts f = facts(2);
  const std::vector<uint8_t> bytes = encode_facts(f);
  auto back = decode_facts(bytes, "peer 127.0.0.1:9");
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(encode_facts(back.value()), bytes);
  EXPECT_EQ(back->settings, f.settings);
  const std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 3);
  auto refused = decode_facts(cut, "peer 127.0.0.1:9");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("peer 127.0.0.1:9: Hello: field build needs"), std::string::npos)
      << refused.status().message();
}

TEST(Agreement, EqualFactsAgreeThoughProgramsDiffer) {
  EXPECT_TRUE(check_agreement({facts(0), facts(1), facts(2)}).is_ok());
}

TEST(Agreement, EachMismatchListsEveryRanksValue) {
  struct Case {
    const char* field;
    std::function<void(RankFacts&)> change;
    std::string listed;
  };
  const std::vector<Case> cases = {
      {"world", [](RankFacts& f) { f.world = 4; }, "world: rank 0 3, rank 1 3, rank 2 4"},
      {"agreement_digest", [](RankFacts& f) { f.agreement_digest = 0xa2; },
       "agreement_digest: rank 0 00000000000000a1, rank 1 00000000000000a1, rank 2 00000000000000a2"},
      {"config_digest", [](RankFacts& f) { f.config_digest = 0xc2; },
       "config_digest: rank 0 00000000000000c1, rank 1 00000000000000c1, rank 2 00000000000000c2"},
      {"pack_digest", [](RankFacts& f) { f.pack_digest = 0xb2; },
       "pack_digest: rank 0 00000000000000b1, rank 1 00000000000000b1, rank 2 00000000000000b2"},
      {"settings", [](RankFacts& f) { f.settings = "context 32"; },
       "settings: rank 0 (context 64, slots 2, prefill [8, 4], decode [1, 2], activations BF16), rank 1 (context 64, "
       "slots 2, prefill [8, 4], decode [1, 2], activations BF16), rank 2 (context 32)"},
      {"target", [](RankFacts& f) { f.target = "h200"; }, "target: rank 0 none, rank 1 none, rank 2 h200"},
      {"arch", [](RankFacts& f) { f.arch = "sm_90"; }, "arch: rank 0 cpu, rank 1 cpu, rank 2 sm_90"},
      {"build", [](RankFacts& f) { f.build = "old"; },
       "build: rank 0 (" + build_version() + "), rank 1 (" + build_version() + "), rank 2 (old)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    std::vector<RankFacts> all = {facts(0), facts(1), facts(2)};
    c.change(all[2]);
    const Status status = check_agreement(all);
    ASSERT_FALSE(status.is_ok());
    EXPECT_EQ(status.message(), "ranks disagree at start-up: " + c.listed +
                                    " (program digests: rank 0 0000000000000064, rank 1 0000000000000065, rank 2 "
                                    "0000000000000066); plan every rank of a world together and run one build on "
                                    "every host");
  }
}

TEST(Agreement, SeveralMismatchesInOneMessage) {
  std::vector<RankFacts> all = {facts(0), facts(1)};
  all[1].pack_digest = 0xb2;
  all[0].arch = "sm_100";
  const Status status = check_agreement(all);
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find("pack_digest: rank 0 00000000000000b1, rank 1 00000000000000b2; arch: rank 0 sm_100, "
                                  "rank 1 cpu"),
            std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace dsv41::dist
