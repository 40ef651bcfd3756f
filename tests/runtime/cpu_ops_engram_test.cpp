// tests/runtime/cpu_ops_engram_test.cpp — the Engram CPU ops on hand-built calls: the hash across steps through the
// lookback, the lookback store, the gather's bounds message, the gate at a known value.
#include <numeric>

#include <gtest/gtest.h>

#include "common/engram_hash.h"
#include "tests/runtime/fake_op_context.h"

namespace dsv41::cpu {
namespace {

using testing::FakeContext;
using testing::RowStatic;

// Small layout: max_n 3, 2 heads, primes above 10 (column (n−2)·2 + h), one layer.
const std::vector<int64_t> kPrimes = {11, 13, 17, 19}, kOffsets = {0, 11, 24, 41}, kMultipliers = {3, 5, 7};
constexpr int64_t kWindow = 4;

// token id → compressed id: ids 0..9 map to 9 − id % 5 (so ids 1 and 6 share a key).
std::vector<int64_t> token_map() {
  std::vector<int64_t> map(10);
  for (int64_t i = 0; i < 10; ++i) map[i] = 9 - i % 5;
  return map;
}

FakeContext hash_call(const std::vector<RowStatic>& rows) {
  FakeContext ctx("engram_hash", {{"layers", 1}, {"max_n", 3}, {"heads", 2}, {"window", kWindow}});
  ctx.set_rows(rows);
  ctx.add_state("lookback", DType::I32, {kWindow}, 1);
  ctx.add_ints("token_map", token_map());
  ctx.add_int("pad_token", 2);
  ctx.add_ints("multipliers", kMultipliers);
  ctx.add_ints("primes", kPrimes);
  ctx.add_ints("offsets", kOffsets);
  ctx.add_scratch("out", DType::I32, {static_cast<int64_t>(rows.size()), 4});
  return ctx;
}

// Row ids of a whole sequence by the shared hash (common/engram_hash.h, tested on hand-computed rows).
std::vector<int64_t> expected_rows(const std::vector<int32_t>& tokens) {
  EngramLayerHash h;
  h.heads = 2;
  h.multipliers = kMultipliers;
  h.primes = kPrimes;
  h.offsets = kOffsets;
  std::vector<int64_t> ids;
  for (int32_t t : tokens) ids.push_back(token_map()[t]);
  std::vector<int64_t> rows(tokens.size() * 4);
  engram_rows(h, token_map()[2], std::vector<int64_t>{-1, -1}, ids, rows);
  return rows;
}

TEST(CpuEngramOps, HashOfAStepReadsEarlierTokensFromTheLookback) {
  const std::vector<int32_t> tokens = {4, 6, 1, 8, 3};
  const std::vector<int64_t> want = expected_rows(tokens);
  // Step 1: positions 0-2 in one call, then the lookback takes them.
  FakeContext first = hash_call({{4, 0, 0, 0}, {6, 0, 1, 0}, {1, 0, 2, 0}});
  ASSERT_TRUE(first.run().is_ok());
  FakeContext store("engram_lookback", {{"window", kWindow}});
  store.set_rows({{4, 0, 0, 0}, {6, 0, 1, 0}, {1, 0, 2, 0}});
  store.add_state("lookback", DType::I32, {kWindow}, 1);
  ASSERT_TRUE(store.run().is_ok());
  const TensorView ring = store.slot_state("lookback", 0);
  EXPECT_EQ(ring.get_int(0), 4);
  EXPECT_EQ(ring.get_int(2), 1);
  // Step 2: positions 3-4, an inactive row between; the ring of step 1 is copied into this call's state.
  FakeContext second = hash_call({{8, 0, 3, 0}, {3, 0, 4, 0}, {0, -1, 0, 0}});
  for (int64_t i = 0; i < kWindow; ++i) second.slot_state("lookback", 0).set_int(i, ring.get_int(i));
  ASSERT_TRUE(second.run().is_ok());
  const TensorView a = first.buffer("out"), b = second.buffer("out");
  for (int64_t k = 0; k < 12; ++k) EXPECT_EQ(a.get_int(k), want[k]) << "position " << k / 4 << " column " << k % 4;
  for (int64_t k = 0; k < 8; ++k) EXPECT_EQ(b.get_int(k), want[12 + k]) << "position " << 3 + k / 4 << " column " << k % 4;
  for (int64_t k = 8; k < 12; ++k) EXPECT_EQ(b.get_int(k), 0) << "inactive row";
}

TEST(CpuEngramOps, HashRefusesATokenOutsideTheMapAndAnEmptyMap) {
  FakeContext bad = hash_call({{12, 0, 0, 0}});
  const Status s = bad.run();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("row 0 position 0: token 12 outside the token map's 10 ids"), std::string::npos) << s.message();
  FakeContext empty("engram_hash", {{"layers", 1}, {"max_n", 3}, {"heads", 2}, {"window", kWindow}});
  empty.set_rows({{1, 0, 0, 0}});
  empty.add_state("lookback", DType::I32, {kWindow}, 1);
  empty.add_ints("token_map", {});
  empty.add_int("pad_token", 2);
  empty.add_ints("multipliers", kMultipliers);
  empty.add_ints("primes", kPrimes);
  empty.add_ints("offsets", kOffsets);
  empty.add_scratch("out", DType::I32, {1, 4});
  EXPECT_NE(empty.run().message().find("holds no Engram token map"), std::string::npos);
}

// A context whose `table` is a host table of 5 rows of 32 values (code 0x38 = 1.0, scale 2^0).
class TableContext : public FakeContext {
 public:
  using FakeContext::FakeContext;
  std::vector<uint8_t> codes = std::vector<uint8_t>(5 * 32, 0x38), scales = std::vector<uint8_t>(5, 127);
  HostTableView host_table(const std::string& arg) const override {
    return arg == "table" ? HostTableView{codes.data(), scales.data(), 5, 32, "layers.7.engram.embed.weight"}
                          : HostTableView{};
  }
};

TEST(CpuEngramOps, GatherReadsRowsAndNamesLayerColumnAndPositionOfARowOutsideTheTable) {
  TableContext ctx("engram_gather", {{"columns", 2}, {"head_dim", 32}, {"row_width", 4}});
  ctx.set_rows({{0, 0, 6, 0}, {0, 0, 7, 0}});
  const TensorView ids = ctx.add_scratch("ids", DType::I32, {2, 4});
  ctx.add_int("first_column", 2);
  ctx.add_int("layer", 7);
  ctx.add_weight("table", {5, 32}, {});
  ctx.add_scratch("out", DType::BF16, {2, 64});
  for (int64_t i = 0; i < 8; ++i) ids.set_int(i, static_cast<int32_t>(i % 5));
  ctx.codes[2 * 32 + 1] = 0x40;  // table row 2, value 1: 2.0
  ASSERT_TRUE(ctx.run().is_ok());
  // Row 0 reads table rows ids[0, 2..3] = 2, 3; row 1 reads ids[1, 2..3] = 1, 2.
  EXPECT_EQ(ctx.buffer("out").get(1), 2.0f);
  EXPECT_EQ(ctx.buffer("out").get(32 + 1), 1.0f);
  EXPECT_EQ(ctx.buffer("out").get(64 + 1), 1.0f);
  EXPECT_EQ(ctx.buffer("out").get(64 + 32 + 1), 2.0f);
  ids.set_int(7, 5);  // row 1, hashed column 3 = the layer's column 1
  const Status s = ctx.run();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("row 1 (position 7)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Engram layer 7: position 0 column 1: row id 5 outside the table's 5 rows"),
            std::string::npos)
      << s.message();
}

// With q⊙k = 0 the dot is 0, sign(0) = 0, so every stream gets exactly h + value/2.
TEST(CpuEngramOps, GateWithAZeroDotAddsHalfTheValueToEveryStream) {
  FakeContext ctx("engram_gate", {{"hidden", 4}, {"streams", 2}});
  ctx.set_rows({{0, 0, 0, 0}, {0, -1, 0, 0}});
  const TensorView x = ctx.add_scratch("x", DType::F32, {2, 2, 4});
  const TensorView kv = ctx.add_scratch("kv", DType::F32, {2, 12});
  ctx.add_weight("q_weight", {2, 4}, std::vector<float>(8, 1.0f));
  ctx.add_weight("k_weight", {2, 4}, std::vector<float>(8, 0.0f));
  ctx.add_float("eps", 1e-20);
  ctx.alias_scratch("out", "x");
  for (int64_t i = 0; i < 16; ++i) x.set(i, static_cast<float>(i));
  for (int64_t i = 0; i < 24; ++i) kv.set(i, 0.25f * static_cast<float>(i));
  ASSERT_TRUE(ctx.run().is_ok());
  for (int64_t s = 0; s < 2; ++s)
    for (int64_t d = 0; d < 4; ++d)
      EXPECT_EQ(x.get(s * 4 + d), static_cast<float>(s * 4 + d) + 0.5f * 0.25f * static_cast<float>(8 + d)) << s << d;
  for (int64_t i = 8; i < 16; ++i) EXPECT_EQ(x.get(i), static_cast<float>(i)) << "inactive row untouched";
}

}  // namespace
}  // namespace dsv41::cpu
