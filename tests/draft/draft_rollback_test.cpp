// tests/draft/draft_rollback_test.cpp — rejected verification rows rewound: into an open compressor group, and past window ring rows; the ring sizes that make it safe.
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "compiler/plan/state_layout.h"
#include "tests/runtime/fake_op_context.h"

namespace dsv41::cpu::testing {
namespace {

constexpr int64_t kRatio = 2, kDh = 16, kDi = 8, kRope = 4, kEntries = 8, kDrafts = 5;

struct Weights {
  std::vector<float> norm, wk, k_norm;
};

// A compress call over `rows` (raw and gate rows in the same order) for one slot whose tail holds `tail_rows`.
FakeContext compress_call(const Weights& w, const std::vector<RowStatic>& rows, const std::vector<float>& raw,
                          const std::vector<float>& gate, int64_t tail_rows) {
  FakeContext ctx("compress", {{"ratio", kRatio}, {"head_dim", kDh}, {"index_head_dim", kDi}, {"rope_dim", kRope}});
  const auto n = static_cast<int64_t>(rows.size());
  ctx.set_rows(rows);
  fill(ctx.add_scratch("raw", DType::F32, {n, kDh}), raw);
  fill(ctx.add_scratch("gate", DType::F32, {n, kDh}), gate);
  ctx.add_weight("norm", {kDh}, w.norm);
  ctx.add_weight("wk", {kDi, kDh}, w.wk);
  ctx.add_weight("k_norm", {kDi}, w.k_norm);
  ctx.add_float("eps", 1e-20);
  ctx.add_rope(160000.0, 16.0, 256, 32, 1);
  ctx.add_state("tail", DType::F32, {tail_rows, 2 * kDh}, 1);
  ctx.add_state("cache", DType::BF16, {kEntries, kDh}, 1);
  ctx.add_state("index_cache", DType::BF16, {kEntries, kDi}, 1);
  return ctx;
}

// Runs positions [begin, end) of `raw`/`gate` (row p at p) as one step over the slot's carried state.
void step(const Weights& w, std::map<std::string, std::vector<float>>& state, int64_t begin, int64_t end,
          const std::vector<float>& raw, const std::vector<float>& gate, int64_t tail_rows) {
  std::vector<RowStatic> rows;
  for (int64_t p = begin; p < end; ++p) rows.push_back({0, 0, static_cast<int32_t>(p), 0});
  FakeContext ctx = compress_call(w, rows, std::vector<float>(raw.begin() + begin * kDh, raw.begin() + end * kDh),
                                  std::vector<float>(gate.begin() + begin * kDh, gate.begin() + end * kDh), tail_rows);
  for (const auto& [name, values] : state) fill(ctx.slot_state(name, 0), values);
  const Status s = ctx.run();
  ASSERT_TRUE(s.is_ok()) << s.message();
  for (const char* name : {"tail", "cache", "index_cache"}) state[name] = values_of(ctx.slot_state(name, 0));
}

struct Caches {
  std::vector<float> cache, index_cache;
};

// Serial: positions 0..9 one at a time. Drafted: 0..2 (group 1 left open at position 2), then a
// verification of positions 3..8 whose rows 5..8 are wrong (rejected drafts), a rewind to length 5
// (position 4 accepted: the rewind lands inside group 2, opened by position 4), then 5..9 right.
Caches run(bool drafted, int64_t tail_rows) {
  std::mt19937 rng(41);
  Weights w{random_values(rng, kDh, 0.5f, 1.5f), random_values(rng, kDi * kDh), random_values(rng, kDi, 0.5f, 1.5f)};
  const std::vector<float> raw = random_values(rng, 10 * kDh, -2, 2), gate = random_values(rng, 10 * kDh, -2, 2);
  std::map<std::string, std::vector<float>> state;
  if (!drafted) {
    for (int64_t p = 0; p < 10; ++p) step(w, state, p, p + 1, raw, gate, tail_rows);
  } else {
    step(w, state, 0, 3, raw, gate, tail_rows);
    std::vector<float> wrong_raw = raw, wrong_gate = gate;
    for (int64_t i = 5 * kDh; i < 9 * kDh; ++i) wrong_raw[i] += 3.0f, wrong_gate[i] -= 1.0f;
    step(w, state, 3, 3 + kDrafts + 1, wrong_raw, wrong_gate, tail_rows);
    step(w, state, 5, 10, raw, gate, tail_rows);  // the rewind: nothing is undone, position 5 is next
  }
  return {state["cache"], state["index_cache"]};
}

TEST(DraftRollback, RewindIntoAnOpenCompressorGroupMatchesSerialDecoding) {
  const int64_t rows = tail_rows(kRatio, kDrafts);
  EXPECT_GE(rows, kDrafts + 2);  // the ledger's rule (docs/serving.md "Drafting")
  const Caches serial = run(false, rows), drafted = run(true, rows);
  // Entries 0..4 close at positions 1, 3, 5, 7, 9: every one written after the rewind, or before it.
  EXPECT_EQ(serial.cache, drafted.cache);
  EXPECT_EQ(serial.index_cache, drafted.index_cache);
  // And the serial result does not depend on the tail's length.
  EXPECT_EQ(run(false, kRatio).cache, serial.cache);
}

TEST(DraftRollback, ATailOfOnlyTheRatioLosesTheOpenGroup) {
  // Without the planned length the verification's row at position 8 overwrites position 4's raw row
  // (both in tail row 0), so group 2 (positions 4, 5) pools a rejected row: the rewind is not exact.
  const Caches serial = run(false, kRatio), drafted = run(true, kRatio);
  EXPECT_NE(serial.cache, drafted.cache);
}

constexpr int64_t kWindow = 4, kHeadDim = 8;

// One step over positions [begin, end) of one slot: attention of each row over the window (this
// step's rows from kv, older ones from the ring), then the ring store, as a phase runs them.
// Returns the attention outputs of the rows.
std::vector<float> attend_and_store(std::vector<float>& ring, int64_t ring_rows, int64_t begin, int64_t end,
                                    const std::vector<float>& q, const std::vector<float>& kv) {
  std::vector<RowStatic> rows;
  for (int64_t p = begin; p < end; ++p) rows.push_back({0, 0, static_cast<int32_t>(p), 0});
  const int64_t n = end - begin;
  auto slice = [&](const std::vector<float>& v) {
    return std::vector<float>(v.begin() + begin * kHeadDim, v.begin() + end * kHeadDim);
  };
  FakeContext attend("sparse_attention",
                     {{"heads", 1}, {"head_dim", kHeadDim}, {"window", kWindow}, {"topk", 0}, {"rope_dim", 0}});
  attend.set_rows(rows);
  fill(attend.add_scratch("q", DType::BF16, {n, kHeadDim}), slice(q));  // q is act (kv's dtype)
  fill(attend.add_scratch("kv", DType::BF16, {n, kHeadDim}), slice(kv));
  attend.add_state("ring", DType::BF16, {ring_rows, kHeadDim}, 1);
  fill(attend.slot_state("ring", 0), ring);
  attend.add_weight("sink", {1}, {0.0f});
  attend.add_float("scale", 0.35);
  attend.add_rope(10000.0, 1.0, 0, 32, 1);  // rope_dim 0: no inverse rope
  TensorView out = attend.add_scratch("out", DType::BF16, {n, kHeadDim});
  Status s = attend.run();
  EXPECT_TRUE(s.is_ok()) << s.message();
  const std::vector<float> result = values_of(out);
  FakeContext store("window_store", {{"window", kWindow}, {"head_dim", kHeadDim}});
  store.set_rows(rows);
  fill(store.add_scratch("kv", DType::BF16, {n, kHeadDim}), slice(kv));
  store.add_state("ring", DType::BF16, {ring_rows, kHeadDim}, 1);
  fill(store.slot_state("ring", 0), ring);
  s = store.run();
  EXPECT_TRUE(s.is_ok()) << s.message();
  ring = values_of(store.slot_state("ring", 0));
  return result;
}

// The attention outputs of positions 7..9. Serial: one position a step. Drafted: 0..4, then a
// verification of 5..10 whose rows 7..10 are wrong, a rewind to length 7, then 7..9 right.
std::vector<float> window_outputs(bool drafted, int64_t ring_rows) {
  std::mt19937 rng(43);
  const std::vector<float> q = random_values(rng, 11 * kHeadDim), kv = random_values(rng, 11 * kHeadDim);
  std::vector<float> wrong = kv, ring(static_cast<size_t>(ring_rows * kHeadDim), 0.0f), out;
  for (int64_t i = 7 * kHeadDim; i < 11 * kHeadDim; ++i) wrong[i] = -wrong[i];
  if (drafted) {
    attend_and_store(ring, ring_rows, 0, 5, q, kv);
    attend_and_store(ring, ring_rows, 5, 11, q, wrong);
  } else {
    for (int64_t p = 0; p < 7; ++p) attend_and_store(ring, ring_rows, p, p + 1, q, kv);
  }
  for (int64_t p = 7; p < 10; ++p) {
    const std::vector<float> row = attend_and_store(ring, ring_rows, p, p + 1, q, kv);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

TEST(DraftRollback, RewindPastWindowRingRowsMatchesSerialDecoding) {
  const int64_t rows = ring_rows(kWindow, kDrafts);
  EXPECT_EQ(window_outputs(true, rows), window_outputs(false, rows));
  EXPECT_EQ(window_outputs(false, kWindow), window_outputs(false, rows));  // the ring's length changes nothing serially
  // A ring of only the window: the rejected rows at 8..10 overwrote positions 4..6, which the window
  // of 7..9 still reads.
  EXPECT_NE(window_outputs(true, kWindow), window_outputs(false, kWindow));
}

TEST(DraftRollback, RingsAndTailsGrowOnlyWhenDrafting) {
  EXPECT_EQ(ring_rows(128, 0), 128);
  EXPECT_EQ(ring_rows(128, 5), 133);
  EXPECT_EQ(tail_rows(2, 0), 2);
  EXPECT_EQ(tail_rows(4, 0), 4);
  for (int64_t k = 1; k <= 5; ++k)
    for (int64_t r = 2; r <= 8; ++r) {
      EXPECT_GE(tail_rows(r, k), k + 2) << "ratio " << r << " drafts " << k;
      EXPECT_GE(tail_rows(r, k), k + r - 1) << "ratio " << r << " drafts " << k;  // the open group survives
    }
}

}  // namespace
}  // namespace dsv41::cpu::testing
