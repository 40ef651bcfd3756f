// tests/runtime/cpu_ops_hc_step_test.cpp — hc_step is hc_post, hc_mix and hc_collapse_norm in one op: the same bits.
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "runtime/cpu/ops.h"
#include "tests/runtime/fake_op_context.h"

namespace dsv41::cpu::testing {
namespace {

constexpr int64_t kD = 24, kS = 4, kM = (2 + kS) * kS, kRows = 3, kIters = 20;
constexpr double kEps = 1e-6, kHcEps = 1e-6;

struct Inputs {
  std::vector<float> x, sub, prev, fn, base, scale, norm;
};

Inputs random_inputs(DType act) {
  std::mt19937 rng(11);
  const bool bf16 = act == DType::BF16;
  Inputs in;
  in.x = random_values(rng, kRows * kS * kD, -2, 2, bf16);
  in.sub = random_values(rng, kRows * kD, -1, 1, bf16);
  in.prev = random_values(rng, kRows * kM, 0.1f, 1.0f);
  in.fn = random_values(rng, kM * kS * kD, -0.3f, 0.3f);
  in.base = random_values(rng, kM);
  in.scale = random_values(rng, 3, 0.5f, 1.5f);
  in.norm = random_values(rng, kD, 0.5f, 1.5f);
  return in;
}

// The last row is inactive (slot −1).
void set_rows(FakeContext& ctx) { ctx.set_rows(sequence_rows(kRows - 1, 5, 1)); }

void add_mix_weights(FakeContext& ctx, const Inputs& in) {
  ctx.add_weight("fn", {kM, kS * kD}, in.fn);
  ctx.add_weight("base", {kM}, in.base);
  ctx.add_weight("scale", {3}, in.scale);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class HcStep : public ::testing::TestWithParam<DType> {};
INSTANTIATE_TEST_SUITE_P(Modes, HcStep, ::testing::Values(DType::BF16, DType::F32),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST_P(HcStep, GivesTheBitsOfPostThenMixAndCollapse) {
  const DType act = GetParam();
  const Inputs in = random_inputs(act);

  FakeContext post("hc_post", {{"hidden", kD}, {"streams", kS}});
  set_rows(post);
  fill(post.add_scratch("x", act, {kRows, kS, kD}), in.x);
  fill(post.add_scratch("sub", act, {kRows, kD}), in.sub);
  fill(post.add_scratch("mix", DType::F32, {kRows, kM}), in.prev);
  const TensorView streams = post.add_scratch("out", act, {kRows, kS, kD});
  ASSERT_TRUE(post.run().is_ok());
  const std::vector<float> next = values_of(streams);

  FakeContext mix("hc_mix", {{"hidden", kD}, {"streams", kS}, {"sinkhorn_iters", kIters}});
  set_rows(mix);
  fill(mix.add_scratch("x", act, {kRows, kS, kD}), next);
  add_mix_weights(mix, in);
  mix.add_float("eps", kEps);
  mix.add_float("hc_eps", kHcEps);
  const TensorView mixed = mix.add_scratch("out", DType::F32, {kRows, kM});
  ASSERT_TRUE(mix.run().is_ok());

  FakeContext collapse("hc_collapse_norm", {{"hidden", kD}, {"streams", kS}});
  set_rows(collapse);
  fill(collapse.add_scratch("x", act, {kRows, kS, kD}), next);
  fill(collapse.add_scratch("mix", DType::F32, {kRows, kM}), in.prev);
  collapse.add_weight("norm", {kD}, in.norm);
  collapse.add_float("eps", kEps);
  const TensorView normed = collapse.add_scratch("out", act, {kRows, kD});
  ASSERT_TRUE(collapse.run().is_ok());

  FakeContext step("hc_step", {{"hidden", kD}, {"streams", kS}, {"sinkhorn_iters", kIters}});
  set_rows(step);
  fill(step.add_scratch("x", act, {kRows, kS, kD}), in.x);
  fill(step.add_scratch("sub", act, {kRows, kD}), in.sub);
  fill(step.add_scratch("prev", DType::F32, {kRows, kM}), in.prev);
  add_mix_weights(step, in);
  step.add_weight("norm", {kD}, in.norm);
  step.add_float("eps", kEps);
  step.add_float("hc_eps", kHcEps);
  const TensorView step_next = step.add_scratch("next", act, {kRows, kS, kD});
  const TensorView step_mix = step.add_scratch("mix", DType::F32, {kRows, kM});
  const TensorView step_out = step.add_scratch("out", act, {kRows, kD});
  ASSERT_TRUE(step.run().is_ok());

  EXPECT_TRUE(same_bits(values_of(step_next), next)) << "next";
  EXPECT_TRUE(same_bits(values_of(step_mix), values_of(mixed))) << "mix";
  EXPECT_TRUE(same_bits(values_of(step_out), values_of(normed))) << "out";
  // The inputs are not degenerate: the active rows' outputs are not zero, the inactive row's are.
  EXPECT_NE(step_out.get(0), 0.0f);
  EXPECT_NE(step_mix.get(0), 0.0f);
  for (int64_t i = 0; i < kD; ++i) EXPECT_EQ(step_out.get((kRows - 1) * kD + i), 0.0f) << i;
  for (int64_t k = 0; k < kM; ++k) EXPECT_EQ(step_mix.get((kRows - 1) * kM + k), 0.0f) << k;
}

TEST(HcStepChecks, RefusesNextInPlaceOfX) {
  const Inputs in = random_inputs(DType::BF16);
  FakeContext step("hc_step", {{"hidden", kD}, {"streams", kS}, {"sinkhorn_iters", kIters}});
  set_rows(step);
  const TensorView x = step.add_scratch("x", DType::BF16, {kRows, kS, kD});
  fill(x, in.x);
  fill(step.add_scratch("sub", DType::BF16, {kRows, kD}), in.sub);
  fill(step.add_scratch("prev", DType::F32, {kRows, kM}), in.prev);
  add_mix_weights(step, in);
  step.add_weight("norm", {kD}, in.norm);
  step.add_float("eps", kEps);
  step.add_float("hc_eps", kHcEps);
  step.alias_scratch("next", "x");
  step.add_scratch("mix", DType::F32, {kRows, kM});
  step.add_scratch("out", DType::BF16, {kRows, kD});
  const Status status = step.run();
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find("next"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace dsv41::cpu::testing
