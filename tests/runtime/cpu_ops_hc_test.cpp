// tests/runtime/cpu_ops_hc_test.cpp — the hyper-connection CPU ops against direct formula evaluation: hc_pre_init,
// hc_mix, hc_collapse_norm and hc_post.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "runtime/cpu/ops.h"
#include "tests/runtime/cpu_ops_math.h"
#include "tests/runtime/fake_op_context.h"

namespace dsv41::cpu::testing {
namespace {

// act: BF16 when serving, F32 in the check mode (no rounding anywhere, docs/model.md §2).
class CpuHcOpsByActivation : public ::testing::TestWithParam<DType> {};
INSTANTIATE_TEST_SUITE_P(Modes, CpuHcOpsByActivation, ::testing::Values(DType::BF16, DType::F32),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(CpuOps, HcPreInitIsOneHotOnStreamZero) {
  FakeContext ctx("hc_pre_init", {{"streams", 4}, {"mix", 24}});
  ctx.set_rows(sequence_rows(2, 0, 1));
  TensorView out = ctx.add_scratch("out", DType::F32, {3, 24});
  ASSERT_TRUE(ctx.run().is_ok());
  for (int64_t i = 0; i < 3 * 24; ++i) EXPECT_EQ(out.get(i), i % 24 == 0 ? 1.0f : 0.0f) << i;
}

TEST(CpuOps, HcMixMatchesTheFormulaAndItsCombIsColumnStochastic) {
  const int64_t d = 16, s = 4, m = (2 + s) * s, rows = 3, iters = 20;
  const double eps = 1e-6, hc_eps = 1e-6;
  std::mt19937 rng(2);
  const std::vector<float> x = random_values(rng, rows * s * d, -2, 2, true);
  const std::vector<float> fn = random_values(rng, m * s * d, -0.3f, 0.3f);
  const std::vector<float> base = random_values(rng, m), scale = random_values(rng, 3, 0.5f, 1.5f);
  FakeContext ctx("hc_mix", {{"hidden", d}, {"streams", s}, {"sinkhorn_iters", iters}});
  ctx.set_rows(sequence_rows(rows - 1, 0, 1));
  fill(ctx.add_scratch("x", DType::BF16, {rows, s, d}), x);
  ctx.add_weight("fn", {m, s * d}, fn);
  ctx.add_weight("base", {m}, base);
  ctx.add_weight("scale", {3}, scale);
  ctx.add_float("eps", eps);
  ctx.add_float("hc_eps", hc_eps);
  TensorView out = ctx.add_scratch("out", DType::F32, {rows, m});
  ASSERT_TRUE(ctx.run().is_ok());
  for (int64_t r = 0; r < rows - 1; ++r) {
    const float* xr = x.data() + r * s * d;
    double sq = 0;
    for (int64_t i = 0; i < s * d; ++i) sq += double(xr[i]) * xr[i];
    const double rho = 1.0 / std::sqrt(sq / double(s * d) + eps);
    std::vector<double> mm(m);
    for (int64_t o = 0; o < m; ++o) {
      double acc = 0;
      for (int64_t i = 0; i < s * d; ++i) acc += double(fn[o * s * d + i]) * xr[i];
      mm[o] = rho * acc;
    }
    for (int64_t k = 0; k < s; ++k) {
      EXPECT_NEAR(out.get(r * m + k), sigmoid_d(scale[0] * mm[k] + base[k]) + hc_eps, 1e-5) << "pre " << k;
      EXPECT_NEAR(out.get(r * m + s + k), 2 * sigmoid_d(scale[1] * mm[s + k] + base[s + k]), 1e-5) << "post " << k;
    }
    // Sinkhorn in double, step for step.
    std::vector<double> c(s * s);
    for (int64_t k = 0; k < s * s; ++k) c[k] = scale[2] * mm[2 * s + k] + base[2 * s + k];
    auto rows_pass = [&](bool softmax) {
      for (int64_t i = 0; i < s; ++i) {
        double top = *std::max_element(c.begin() + i * s, c.begin() + i * s + s), total = 0;
        for (int64_t j = 0; j < s; ++j) total += softmax ? std::exp(c[i * s + j] - top) : c[i * s + j];
        for (int64_t j = 0; j < s; ++j)
          c[i * s + j] = softmax ? std::exp(c[i * s + j] - top) / total + hc_eps : c[i * s + j] / (total + hc_eps);
      }
    };
    auto columns_pass = [&] {
      for (int64_t j = 0; j < s; ++j) {
        double total = 0;
        for (int64_t i = 0; i < s; ++i) total += c[i * s + j];
        for (int64_t i = 0; i < s; ++i) c[i * s + j] /= total + hc_eps;
      }
    };
    rows_pass(true);
    columns_pass();
    for (int64_t it = 1; it < iters; ++it) {
      rows_pass(false);
      columns_pass();
    }
    for (int64_t j = 0; j < s; ++j) {
      double column = 0;
      for (int64_t i = 0; i < s; ++i) {
        EXPECT_NEAR(out.get(r * m + 2 * s + i * s + j), c[i * s + j], 1e-5) << "C[" << i << "][" << j << "]";
        column += out.get(r * m + 2 * s + i * s + j);
      }
      EXPECT_NEAR(column, 1.0, 1e-4) << "row " << r << " column " << j;
    }
  }
  for (int64_t k = 0; k < m; ++k) EXPECT_EQ(out.get((rows - 1) * m + k), 0.0f);
}


TEST_P(CpuHcOpsByActivation, HcCollapseNormAndPostMatchTheFormulas) {
  const DType act = GetParam();
  const bool round = act == DType::BF16;
  const double rel = round ? kBf16Rel : 1e-5;
  const int64_t d = 16, s = 4, m = (2 + s) * s, rows = 2;
  const double eps = 1e-20;
  std::mt19937 rng(3);
  const std::vector<float> x = random_values(rng, rows * s * d, -2, 2, true);
  const std::vector<float> mix = random_values(rng, rows * m, 0.1f, 1.0f);
  const std::vector<float> norm = random_values(rng, d, 0.5f, 1.5f), sub = random_values(rng, rows * d, -1, 1, true);

  FakeContext collapse("hc_collapse_norm", {{"hidden", d}, {"streams", s}});
  collapse.set_rows(sequence_rows(rows, 0));
  fill(collapse.add_scratch("x", act, {rows, s, d}), x);
  fill(collapse.add_scratch("mix", DType::F32, {rows, m}), mix);
  collapse.add_weight("norm", {d}, norm);
  collapse.add_float("eps", eps);
  TensorView normed = collapse.add_scratch("out", act, {rows, d});
  ASSERT_TRUE(collapse.run().is_ok());

  FakeContext post("hc_post", {{"hidden", d}, {"streams", s}});
  post.set_rows(sequence_rows(rows, 0));
  fill(post.add_scratch("x", act, {rows, s, d}), x);
  fill(post.add_scratch("sub", act, {rows, d}), sub);
  fill(post.add_scratch("mix", DType::F32, {rows, m}), mix);
  TensorView out = post.add_scratch("out", act, {rows, s, d});
  ASSERT_TRUE(post.run().is_ok());

  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> h(d, 0.0);
    for (int64_t k = 0; k < s; ++k)
      for (int64_t i = 0; i < d; ++i) h[i] += double(mix[r * m + k]) * x[(r * s + k) * d + i];
    double sq = 0;
    for (double& v : h) {
      if (round) v = bf16_round(float(v));
      sq += v * v;
    }
    const double inv = 1.0 / std::sqrt(sq / d + eps);
    for (int64_t i = 0; i < d; ++i) {
      const double expected = h[i] * inv * norm[i];
      EXPECT_NEAR(normed.get(r * d + i), expected, rel * std::fabs(expected) + 1e-6) << r << "," << i;
    }
    for (int64_t j = 0; j < s; ++j)
      for (int64_t i = 0; i < d; ++i) {
        double expected = double(mix[r * m + s + j]) * sub[r * d + i];
        for (int64_t k = 0; k < s; ++k) expected += double(mix[r * m + 2 * s + k * s + j]) * x[(r * s + k) * d + i];
        EXPECT_NEAR(out.get((r * s + j) * d + i), expected, rel * std::fabs(expected) + 1e-6);
      }
  }
}

}  // namespace
}  // namespace dsv41::cpu::testing
