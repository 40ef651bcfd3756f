// tests/runtime/cpu_rope_fold_test.cpp — the ropes folded into sparse_attention and rmsnorm_rope equal the
// separate calls they replaced, bit for bit (so the CPU backend's outputs, and the goldens, are unchanged).
#include <gtest/gtest.h>

#include "runtime/cpu/ops_draft.h"
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
  return {random_values(rng, kRows * kHeads * kDh, -2, 2, round), random_values(rng, kRows * kDh, -2, 2, round),
          random_values(rng, kWindow * kDh, -2, 2, round), random_values(rng, kHeads)};
}

// sparse_attention over the window (topk 0) with the given rope_dim (q before its rope, act); its output.
std::vector<float> attention(const Inputs& in, DType act, int64_t rope_dim) {
  FakeContext ctx("sparse_attention",
                  {{"heads", kHeads}, {"head_dim", kDh}, {"window", kWindow}, {"topk", 0}, {"rope_dim", rope_dim}});
  ctx.set_rows(kStatics);
  fill(ctx.add_scratch("q", act, {kRows, kHeads * kDh}), in.q);
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

// The calls the fold replaced: rope (q: act → F32), the attention core over the row's window keys
// (ring rows before the step, then this step's kv rows), the stored output, rope inverse in place.
std::vector<float> separate_ops(const Inputs& in, DType act) {
  FakeContext rope_q("rope", {{"heads", kHeads}, {"head_dim", kDh}, {"rope_dim", kRope}, {"inverse", 0}});
  rope_q.set_rows(kStatics);
  fill(rope_q.add_scratch("x", act, {kRows, kHeads * kDh}), in.q);
  rope_q.add_scratch("out", DType::F32, {kRows, kHeads * kDh});
  rope_q.add_rope(160000.0, 16.0, 256, 32, 1);
  EXPECT_TRUE(rope_q.run().is_ok());
  const std::vector<float> q = values_of(rope_q.buffer("out"));

  FakeContext inverse("rope", {{"heads", kHeads}, {"head_dim", kDh}, {"rope_dim", kRope}, {"inverse", 1}});
  inverse.set_rows(kStatics);
  TensorView out = inverse.add_scratch("x", act, {kRows, kHeads * kDh});
  inverse.alias_scratch("out", "x");
  inverse.add_rope(160000.0, 16.0, 256, 32, 1);
  std::vector<float> stored(static_cast<size_t>(kRows * kHeads * kDh), 0.0f), o(static_cast<size_t>(kHeads * kDh));
  for (int64_t r = 0; r < 2; ++r) {  // the active rows: positions 2 and 3 of a run starting at row 0, position 2
    std::vector<float> keys;
    const int64_t p = kStatics[r].position;
    for (int64_t t = 0; t <= p; ++t) {
      const float* row = t < 2 ? in.ring.data() + t * kDh : in.kv.data() + (t - 2) * kDh;
      keys.insert(keys.end(), row, row + kDh);
    }
    attend(q.data() + r * kHeads * kDh, keys.data(), p + 1, kHeads, kDh, in.sink.data(), 0.25f, o.data());
    std::copy(o.begin(), o.end(), stored.begin() + r * kHeads * kDh);
  }
  fill(out, stored);  // rounds when the activations are BF16, as the attention's store did
  EXPECT_TRUE(inverse.run().is_ok());
  return values_of(inverse.buffer("x"));
}

TEST(CpuRopeFold, SparseAttentionRotatesQAndItsOutputAsTheRopeOpsDid) {
  for (DType act : {DType::BF16, DType::F32}) {
    const Inputs in = make_inputs(act);
    const std::vector<float> fused = attention(in, act, kRope), expected = separate_ops(in, act),
                             unrotated = attention(in, act, 0);
    ASSERT_EQ(fused.size(), expected.size());
    int rotated = 0;
    for (size_t i = 0; i < fused.size(); ++i) {
      EXPECT_EQ(fused[i], expected[i]) << dtype_name(act) << " element " << i;
      rotated += fused[i] != unrotated[i];
    }
    EXPECT_GT(rotated, 0) << dtype_name(act);  // the rope dims did turn
  }
}

// rmsnorm_rope is rmsnorm into `out` followed by an in-place rope of `out`, bit for bit, in both
// rounding modes (the emitter replaced those two calls by it: the CPU backend's outputs are unchanged).
TEST(CpuRopeFold, RmsnormRopeIsRmsnormThenRope) {
  const int64_t rows = 3, width = 32, rope_dim = 8;
  std::mt19937 rng(8);
  const std::vector<float> x = random_values(rng, rows * width, -3, 3), w = random_values(rng, width, 0.5f, 1.5f);
  const std::vector<RowStatic> statics = {{0, 0, 7, 0}, {0, -1, 0, 0}, {0, 1, 3001, 2}};  // row 1 inactive
  for (DType act : {DType::BF16, DType::F32}) {
    FakeContext norm("rmsnorm", {{"width", width}});
    norm.set_rows(statics);
    fill(norm.add_scratch("x", DType::F32, {rows, width}), x);
    norm.add_weight("w", {width}, w);
    norm.add_float("eps", 1e-6);
    norm.add_scratch("out", act, {rows, width});
    ASSERT_TRUE(norm.run().is_ok());
    FakeContext rope("rope", {{"heads", 1}, {"head_dim", width}, {"rope_dim", rope_dim}, {"inverse", 0}});
    rope.set_rows(statics);
    fill(rope.add_scratch("x", act, {rows, width}), values_of(norm.buffer("out")));
    rope.alias_scratch("out", "x");
    rope.add_rope(160000.0, 16.0, 256, 32, 1);
    ASSERT_TRUE(rope.run().is_ok());

    FakeContext fused("rmsnorm_rope", {{"width", width}, {"rope_dim", rope_dim}});
    fused.set_rows(statics);
    fill(fused.add_scratch("x", DType::F32, {rows, width}), x);
    fused.add_weight("w", {width}, w);
    fused.add_float("eps", 1e-6);
    fused.add_scratch("out", act, {rows, width});
    fused.add_rope(160000.0, 16.0, 256, 32, 1);
    ASSERT_TRUE(fused.run().is_ok());
    const std::vector<float> expected = values_of(rope.buffer("x")), got = values_of(fused.buffer("out"));
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << dtype_name(act) << " element " << i;
    const std::vector<float> normed = values_of(norm.buffer("out"));
    EXPECT_NE(got[2 * width + width - 1], normed[2 * width + width - 1]);  // the rotation happened (p = 3001)
  }
}

}  // namespace
}  // namespace dsv41::cpu::testing
