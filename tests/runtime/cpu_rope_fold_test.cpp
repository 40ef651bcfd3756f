// tests/runtime/cpu_rope_fold_test.cpp — the ropes folded into sparse_attention equal the separate rope calls
// they replaced, bit for bit (so the CPU backend's outputs, and the goldens, are unchanged).
#include <gtest/gtest.h>

#include "tests/runtime/fake_op_context.h"

namespace dsv41::cpu::testing {
namespace {

constexpr int64_t kHeads = 3, kDh = 16, kRope = 8, kWindow = 4, kRows = 3;
const std::vector<RowStatic> kStatics = {{0, 0, 2, 0}, {0, 0, 3, 0}, {0, -1, 0, 0}};  // row 2 inactive

struct Inputs {
  std::vector<float> q, kv, ring, sink;
};

Inputs make_inputs(DType act) {
  std::mt19937 rng(31);
  const bool round = act == DType::BF16;
  return {random_values(rng, kRows * kHeads * kDh, -2, 2), random_values(rng, kRows * kDh, -2, 2, round),
          random_values(rng, kWindow * kDh, -2, 2, round), random_values(rng, kHeads)};
}

// sparse_attention over the window (topk 0) with the given rope_dim; its output.
std::vector<float> attention(const Inputs& in, DType act, int64_t rope_dim) {
  FakeContext ctx("sparse_attention",
                  {{"heads", kHeads}, {"head_dim", kDh}, {"window", kWindow}, {"topk", 0}, {"rope_dim", rope_dim}});
  ctx.set_rows(kStatics);
  fill(ctx.add_scratch("q", DType::F32, {kRows, kHeads * kDh}), in.q);
  fill(ctx.add_scratch("kv", act, {kRows, kDh}), in.kv);
  ctx.add_state("ring", act, {kWindow, kDh}, 1);
  fill(ctx.slot_state("ring", 0), in.ring);
  ctx.add_weight("sink", {kHeads}, in.sink);
  ctx.add_float("scale", 0.25);
  ctx.add_rope(160000.0, 16.0, 256, 32, 1);
  ctx.add_scratch("out", act, {kRows, kHeads * kDh});
  Status s = ctx.run();
  EXPECT_TRUE(s.is_ok()) << s.message();
  return values_of(ctx.buffer("out"));
}

TEST(CpuRopeFold, SparseAttentionsInverseRopeIsTheRopeOpOnItsOutput) {
  for (DType act : {DType::BF16, DType::F32}) {
    const Inputs in = make_inputs(act);
    const std::vector<float> plain = attention(in, act, 0), fused = attention(in, act, kRope);
    FakeContext rope("rope", {{"heads", kHeads}, {"head_dim", kDh}, {"rope_dim", kRope}, {"inverse", 1}});
    rope.set_rows(kStatics);
    fill(rope.add_scratch("x", act, {kRows, kHeads * kDh}), plain);
    rope.alias_scratch("out", "x");
    rope.add_rope(160000.0, 16.0, 256, 32, 1);
    ASSERT_TRUE(rope.run().is_ok());
    const std::vector<float> expected = values_of(rope.buffer("x"));
    ASSERT_EQ(fused.size(), expected.size());
    int rotated = 0;
    for (size_t i = 0; i < fused.size(); ++i) {
      EXPECT_EQ(fused[i], expected[i]) << dtype_name(act) << " element " << i;
      rotated += fused[i] != plain[i];
    }
    EXPECT_GT(rotated, 0) << dtype_name(act);  // the rope dims did turn
  }
}

}  // namespace
}  // namespace dsv41::cpu::testing
