// tests/common/program_fuzz_test.cpp — a real dsv41c program, truncated and randomly damaged: a clean refusal or a readable program, never a crash.
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "common/program_file.h"
#include "tests/support/test_support.h"

namespace dsv41 {
namespace {
using test::TempDir;

std::string refusal(std::vector<uint8_t> bytes) {
  auto file = ProgramFile::from_bytes(std::move(bytes), "prog");
  return file.is_ok() ? "(accepted)" : file.status().message();
}

// A real program from dsv41c: tiny pack, world 3, rank 1.
std::vector<uint8_t> planned_program(const TempDir& dir) {
  test::make_pack(dir / "pack", "dsv41-tiny", "bf16", 2);
  const auto r = test::run_dsv41c({"plan", (dir / "pack").string(), "--world", "3", "--rank", "1", "--context", "4096",
                                   "--out", (dir / "out").string(), "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  return test::read_bytes(dir / "out" / "rank1.fb");
}

TEST(ProgramFile, TruncationsOfAPlannedProgramAreRefused) {
  TempDir dir;
  const std::vector<uint8_t> good = planned_program(dir);
  ASSERT_EQ(refusal(good), "(accepted)");
  std::vector<size_t> sizes;
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < 256; ++i) sizes.push_back(i);
  for (size_t i = 1; i <= 256; ++i) sizes.push_back(good.size() - i);
  for (int i = 0; i < 256; ++i) sizes.push_back(rng() % good.size());
  for (size_t size : sizes) {
    if (refusal(std::vector<uint8_t>(good.begin(), good.begin() + size)) != "(accepted)") continue;
    // Only the builder's zero padding at the very end may go unnoticed.
    const bool only_padding = good.size() - size < 8 &&
                              std::all_of(good.begin() + size, good.end(), [](uint8_t b) { return b == 0; });
    EXPECT_TRUE(only_padding) << "truncated to " << size << " of " << good.size() << " bytes and accepted";
  }
}

// Reads everything the loader vouches for, as inspect and the runtime do; under ASan an offset the
// loader let through would fault here.
void touch_everything(const fb::Program& p) {
  uint64_t sum = p.config_json()->size() + p.target()->size() + p.ledger()->total();
  for (const fb::Shard* shard : *p.shards()) sum += shard->file_name()->size() + shard->data_bytes();
  for (const fb::PlannedTensor* t : *p.weights()) {
    EXPECT_TRUE(t->dtype() >= fb::DType::MIN && t->dtype() <= fb::DType::MAX) << t->name()->str();
    EXPECT_TRUE(t->rule() >= fb::SplitRule::MIN && t->rule() <= fb::SplitRule::MAX) << t->name()->str();
    EXPECT_TRUE(t->encoding() >= fb::Encoding::MIN && t->encoding() <= fb::Encoding::MAX) << t->name()->str();
    sum += t->name()->size();
    for (int64_t d : *t->stored_shape()) sum += d;
    for (int64_t d : *t->local_shape()) sum += d;
    for (const fb::ByteRun* run : *t->runs()) sum += run->offset() + run->length() * run->count();
  }
  const fb::Share* s = p.share();
  sum += s->groups()->end() + s->heads()->end() + s->expert_cols()->end() + s->vocab_rows()->end();
  for (int64_t rows : *p.settings()->decode_rows()) sum += rows;
  for (int64_t rows : *p.settings()->prefill_rows()) sum += rows;
  EXPECT_TRUE(p.settings()->activations() == fb::DType::BF16 || p.settings()->activations() == fb::DType::F32);
  EXPECT_NE(sum, 0u);
}

// Random damage anywhere, and concentrated in the first 512 bytes (root table and vtables): every
// result is a clean refusal or a program that can be read in full.
TEST(ProgramFile, RandomByteFlipsGiveARefusalOrAReadableProgram) {
  TempDir dir;
  const std::vector<uint8_t> good = planned_program(dir);
  ASSERT_EQ(refusal(good), "(accepted)");
  const uint64_t seed = 20261129;
  std::mt19937_64 rng(seed);
  int refused = 0, accepted = 0;
  for (int trial = 0; trial < 1200; ++trial) {
    std::vector<uint8_t> bytes = good;
    const size_t span = trial % 2 ? bytes.size() : std::min<size_t>(bytes.size(), 512);
    std::string flips;
    for (int f = 0, n = 1 + static_cast<int>(rng() % 4); f < n; ++f) {
      const size_t at = rng() % span;
      const auto mask = static_cast<uint8_t>(rng() | 1);
      bytes[at] ^= mask;
      flips += fmt::format(" [{}]^={:#04x}", at, mask);
    }
    SCOPED_TRACE("seed " + std::to_string(seed) + " trial " + std::to_string(trial) + ":" + flips);
    auto file = ProgramFile::from_bytes(std::move(bytes), "fuzz");
    if (!file.is_ok()) {
      ++refused;
      ASSERT_EQ(file.status().message().rfind("fuzz", 0), 0u) << file.status().message();
      continue;
    }
    ++accepted;
    touch_everything(file->program());
  }
  EXPECT_GT(refused, 100);
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace dsv41
