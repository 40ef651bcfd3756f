// tests/runtime/cpu_ops_test.cpp — CPU ops against direct formula evaluation: registry, embed, products, RoPE, exchanges,
// MoE (the hyper-connection ops: cpu_ops_hc_test.cpp).
#include <algorithm>
#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

#include "runtime/cpu/ops.h"
#include "runtime/cpu/rope_math.h"
#include "tests/runtime/cpu_ops_math.h"
#include "tests/runtime/fake_op_context.h"

namespace dsv41::cpu::testing {
namespace {

TEST(CpuOps, EveryOpOfTheTableHasAnImplementation) {
  for (const OpSpec& spec : op_specs())
    EXPECT_NE(find_cpu_op(std::string(spec.name)), nullptr) << spec.name;
  EXPECT_EQ(find_cpu_op("no_such_op"), nullptr);
}

TEST(CpuOps, DotRowsEqualDotBitForBit) {
  std::mt19937 rng(10);
  for (int64_t n : {1, 7, 8, 37, 256}) {
    const std::vector<float> w = random_values(rng, n), x = random_values(rng, 4 * n, -3, 3);
    // The scalar order both follow: eight interleaved partial sums, then a fixed reduction.
    std::vector<float> expected(4);
    for (int64_t k = 0; k < 4; ++k) {
      float acc[8] = {};
      int64_t i = 0;
      for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) acc[j] += w[i + j] * x[k * n + i + j];
      float tail = 0.0f;
      for (; i < n; ++i) tail += w[i] * x[k * n + i];
      expected[k] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
      EXPECT_EQ(dot(w.data(), x.data() + k * n, n), expected[k]) << "n " << n << " row " << k;
    }
    for (int count = 1; count <= 4; ++count) {
      const float* rows[4] = {x.data(), x.data() + n, x.data() + 2 * n, x.data() + 3 * n};
      float out[4] = {-1, -1, -1, -1};
      dot_rows(w.data(), rows, count, n, out);
      for (int k = 0; k < 4; ++k) EXPECT_EQ(out[k], k < count ? expected[k] : -1.0f) << "n " << n << " count " << count;
    }
  }
}

TEST(CpuOps, EmbedBroadcastsRoundedRowsAndRefusesBadTokens) {
  const int64_t d = 8, s = 3, vocab = 5;
  std::mt19937 rng(1);
  const std::vector<float> table = random_values(rng, vocab * d);
  FakeContext ctx("embed", {{"hidden", d}, {"streams", s}});
  std::vector<RowStatic> rows = {{4, 0, 0, 0}, {0, -1, 0, 0}, {2, 1, 7, 2}};
  ctx.set_rows(rows);
  ctx.add_weight("table", {vocab, d}, table);
  TensorView out = ctx.add_scratch("out", DType::BF16, {3, s, d});
  fill(out, std::vector<float>(3 * s * d, 9.0f));
  ASSERT_TRUE(ctx.run().is_ok());
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t k = 0; k < s * d; ++k) {
      const float expected = rows[r].slot < 0 ? 0.0f : bf16_round(table[rows[r].token * d + k % d]);
      EXPECT_EQ(out.get(r * s * d + k), expected) << "row " << r << " value " << k;
    }
  rows[2].token = vocab;
  ctx.set_rows(rows);
  const Status bad = ctx.run();
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("token 5"), std::string::npos) << bad.message();
  EXPECT_NE(bad.message().find("[0, 5)"), std::string::npos) << bad.message();
}

// act: BF16 when serving, F32 in the check mode (no rounding anywhere, docs/model.md §2).
class CpuOpsByActivation : public ::testing::TestWithParam<DType> {};
INSTANTIATE_TEST_SUITE_P(Modes, CpuOpsByActivation, ::testing::Values(DType::BF16, DType::F32),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(CpuOps, LinearAndGroupedLinearMatchDirectProducts) {
  const int64_t rows = 3, in = 24, outs = 10;
  std::mt19937 rng(4);
  const std::vector<float> x = random_values(rng, rows * in, -1, 1, true), w = random_values(rng, outs * in);
  for (DType out_dtype : {DType::F32, DType::BF16}) {
    FakeContext ctx("linear", {{"in_features", in}, {"out_features", outs}});
    ctx.set_rows(sequence_rows(rows - 1, 0, 1));
    fill(ctx.add_scratch("x", DType::BF16, {rows, in}), x);
    ctx.add_weight("w", {outs, in}, w);
    TensorView out = ctx.add_scratch("out", out_dtype, {rows, outs});
    ASSERT_TRUE(ctx.run().is_ok());
    const double rel = out_dtype == DType::BF16 ? kBf16Rel : 1e-5;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < outs; ++o) {
        double expected = 0;
        for (int64_t i = 0; i < in && r < rows - 1; ++i) expected += double(x[r * in + i]) * w[o * in + i];
        EXPECT_NEAR(out.get(r * outs + o), expected, rel * std::fabs(expected) + 1e-5) << r << "," << o;
      }
  }
  // Block-diagonal: group g reads only its own inputs.
  const int64_t groups = 3, in_g = 8, out_g = 4;
  const std::vector<float> gw = random_values(rng, groups * out_g * in_g);
  FakeContext grouped("grouped_linear", {{"groups", groups}, {"in_per_group", in_g}, {"out_per_group", out_g}});
  grouped.set_rows(sequence_rows(rows, 0));
  fill(grouped.add_scratch("x", DType::BF16, {rows, groups * in_g}), x);
  grouped.add_weight("w", {groups * out_g, in_g}, gw);
  TensorView gout = grouped.add_scratch("out", DType::F32, {rows, groups * out_g});
  ASSERT_TRUE(grouped.run().is_ok());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t o = 0; o < out_g; ++o) {
        double expected = 0;
        for (int64_t i = 0; i < in_g; ++i) expected += double(x[r * in + g * in_g + i]) * gw[(g * out_g + o) * in_g + i];
        EXPECT_NEAR(gout.get(r * groups * out_g + g * out_g + o), expected, 1e-5);
      }
}

TEST(CpuOps, RmsnormRoundsAndRefusesInPlace) {
  const int64_t rows = 2, width = 32;
  std::mt19937 rng(5);
  const std::vector<float> x = random_values(rng, rows * width, -3, 3), w = random_values(rng, width, 0.5f, 1.5f);
  FakeContext ctx("rmsnorm", {{"width", width}});
  ctx.set_rows(sequence_rows(rows, 0));
  fill(ctx.add_scratch("x", DType::F32, {rows, width}), x);
  ctx.add_weight("w", {width}, w);
  ctx.add_float("eps", 1e-20);
  TensorView out = ctx.add_scratch("out", DType::BF16, {rows, width});
  ASSERT_TRUE(ctx.run().is_ok());
  for (int64_t r = 0; r < rows; ++r) {
    double sq = 0;
    for (int64_t i = 0; i < width; ++i) sq += double(x[r * width + i]) * x[r * width + i];
    for (int64_t i = 0; i < width; ++i) {
      const double expected = x[r * width + i] / std::sqrt(sq / width + 1e-20) * w[i];
      EXPECT_NEAR(out.get(r * width + i), expected, kBf16Rel * std::fabs(expected));
    }
  }
  FakeContext in_place("rmsnorm", {{"width", width}});
  in_place.set_rows(sequence_rows(rows, 0));
  in_place.add_scratch("x", DType::BF16, {rows, width});
  in_place.add_weight("w", {width}, w);
  in_place.add_float("eps", 1e-20);
  in_place.alias_scratch("out", "x");
  EXPECT_FALSE(in_place.run().is_ok());
}

TEST(CpuOps, RopeMatchesTheFormulaAndInverseUndoesIt) {
  const int64_t heads = 3, head_dim = 16, rope_dim = 8, rows = 4;
  std::mt19937 rng(6);
  const std::vector<float> x = random_values(rng, rows * heads * head_dim);
  std::vector<RowStatic> statics = {{0, 0, 0, 0}, {0, 0, 1, 0}, {0, 1, 3000, 2}, {0, 1, 3001, 2}};
  FakeContext fwd("rope", {{"heads", heads}, {"head_dim", head_dim}, {"rope_dim", rope_dim}, {"inverse", 0}});
  fwd.set_rows(statics);
  fill(fwd.add_scratch("x", DType::F32, {rows, heads * head_dim}), x);
  fwd.alias_scratch("out", "x");  // in place
  fwd.add_rope(160000.0, 16.0, 256, 32, 1);
  ASSERT_TRUE(fwd.run().is_ok());
  const std::vector<float> rotated = values_of(fwd.buffer("x"));

  RopeParams params{160000.0, 16.0, 256, 32, 1};
  const std::vector<double> freqs = rope_frequencies(rope_dim, params);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t base = (r * heads + h) * head_dim;
      for (int64_t i = 0; i < head_dim - rope_dim; ++i) EXPECT_EQ(rotated[base + i], x[base + i]);
      for (int64_t i = 0; i < rope_dim / 2; ++i) {
        const double angle = statics[r].position * freqs[i];
        const int64_t e = base + head_dim - rope_dim + 2 * i;
        EXPECT_NEAR(rotated[e], x[e] * std::cos(angle) - x[e + 1] * std::sin(angle), 1e-5);
        EXPECT_NEAR(rotated[e + 1], x[e + 1] * std::cos(angle) + x[e] * std::sin(angle), 1e-5);
      }
    }

  FakeContext inv("rope", {{"heads", heads}, {"head_dim", head_dim}, {"rope_dim", rope_dim}, {"inverse", 1}});
  inv.set_rows(statics);
  fill(inv.add_scratch("x", DType::F32, {rows, heads * head_dim}), rotated);
  TensorView back = inv.add_scratch("out", DType::F32, {rows, heads * head_dim});
  inv.add_rope(160000.0, 16.0, 256, 32, 1);
  ASSERT_TRUE(inv.run().is_ok());
  for (int64_t i = 0; i < rows * heads * head_dim; ++i) EXPECT_NEAR(back.get(i), x[i], 1e-5) << i;
}

TEST(CpuOps, YarnRampOfTheReleaseConfig) {
  // docs/model.md §3: R = 64, Lo = 65536, B = 1.6e5 gives lo = 15, hi = 25.
  const RopeParams params{1.6e5, 16.0, 65536, 32, 1};
  const YarnRamp ramp = yarn_ramp(64, params);
  EXPECT_EQ(ramp.lo, 15);
  EXPECT_EQ(ramp.hi, 25);
  const std::vector<double> freqs = rope_frequencies(64, params);
  EXPECT_DOUBLE_EQ(freqs[15], std::pow(1.6e5, -30.0 / 64));       // before the ramp: unchanged
  EXPECT_DOUBLE_EQ(freqs[31], std::pow(1.6e5, -62.0 / 64) / 16);  // after it: divided by φ
  const std::vector<double> plain = rope_frequencies(64, RopeParams{1.6e5, 1.0, 0, 32, 1});
  EXPECT_DOUBLE_EQ(plain[31], std::pow(1.6e5, -62.0 / 64));
}

TEST(CpuOps, ExchangesOfWorldOne) {
  const int64_t rows = 2, width = 6;
  std::mt19937 rng(7);
  const std::vector<float> x = random_values(rng, rows * width);
  FakeContext sum("exchange_sum", {{"width", width}});
  sum.set_rows(sequence_rows(1, 0, 1));
  fill(sum.add_scratch("x", DType::F32, {rows, width}), x);
  TensorView sum_out = sum.add_scratch("out", DType::BF16, {rows, width});
  ASSERT_TRUE(sum.run().is_ok());
  for (int64_t i = 0; i < rows * width; ++i) EXPECT_EQ(sum_out.get(i), bf16_round(x[i]));  // every row, rounded

  FakeContext gather("exchange_gather", {{"width", width}});
  gather.set_rows(sequence_rows(rows, 0));
  fill(gather.add_scratch("x", DType::F32, {rows, width}), x);
  gather.add_ints("widths", {width});
  TensorView gathered = gather.add_scratch("out", DType::F32, {rows, width});
  ASSERT_TRUE(gather.run().is_ok());
  for (int64_t i = 0; i < rows * width; ++i) EXPECT_EQ(gathered.get(i), x[i]);

  FakeContext bad("exchange_gather", {{"width", width}});
  bad.set_rows(sequence_rows(rows, 0));
  bad.add_scratch("x", DType::F32, {rows, width});
  bad.add_ints("widths", {width, width});
  bad.add_scratch("out", DType::F32, {rows, 2 * width});
  EXPECT_FALSE(bad.run().is_ok());
}

TEST(CpuOps, RouterSelectsByBiasedScoreWithTiesToTheLowerId) {
  const int64_t d = 16, experts = 8, topk = 3, rows = 3;
  std::mt19937 rng(8);
  const std::vector<float> x = random_values(rng, rows * d, -1, 1, true);
  std::vector<float> gate = random_values(rng, experts * d), bias = random_values(rng, experts, -0.1f, 0.1f);
  // Experts 5 and 2 are identical and far ahead: a tie the lower id wins.
  std::copy(gate.begin() + 2 * d, gate.begin() + 3 * d, gate.begin() + 5 * d);
  bias[2] = bias[5] = 10.0f;
  for (int normalize : {0, 1}) {
    FakeContext ctx("router", {{"hidden", d}, {"experts", experts}, {"topk", topk}});
    ctx.set_rows(sequence_rows(rows - 1, 0, 1));
    fill(ctx.add_scratch("x", DType::BF16, {rows, d}), x);
    ctx.add_weight("gate", {experts, d}, gate);
    ctx.add_weight("bias", {experts}, bias);
    ctx.add_float("scaling", 1.5);
    ctx.add_int("normalize", normalize);
    TensorView ids = ctx.add_scratch("ids", DType::I32, {rows, topk});
    TensorView weights = ctx.add_scratch("weights", DType::F32, {rows, topk});
    ASSERT_TRUE(ctx.run().is_ok());
    for (int64_t r = 0; r < rows - 1; ++r) {
      std::vector<double> score(experts);
      for (int64_t e = 0; e < experts; ++e) {
        double l = 0;
        for (int64_t i = 0; i < d; ++i) l += double(gate[e * d + i]) * x[r * d + i];
        score[e] = std::sqrt(std::max(l, 0.0) + std::log1p(std::exp(-std::fabs(l))));
      }
      std::vector<int64_t> order(experts);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return score[a] + bias[a] > score[b] + bias[b]; });
      EXPECT_EQ(ids.get_int(r * topk), 2);
      EXPECT_EQ(ids.get_int(r * topk + 1), 5);
      double total = 0;
      for (int64_t k = 0; k < topk; ++k) total += score[order[k]];
      for (int64_t k = 0; k < topk; ++k) {
        EXPECT_EQ(ids.get_int(r * topk + k), order[k]) << "row " << r << " k " << k;
        const double expected = score[order[k]] / (normalize ? total : 1.0) * 1.5;
        EXPECT_NEAR(weights.get(r * topk + k), expected, 1e-5 * expected);
      }
    }
    for (int64_t k = 0; k < topk; ++k) EXPECT_EQ(ids.get_int((rows - 1) * topk + k), 0);
  }
}

// The official gate renormalises only when several experts are chosen: with K = 1 the weight stays
// σ·scaling (renormalising would make it exactly `scaling`).
TEST(CpuOps, RouterWithOneExpertKeepsItsUnnormalisedScore) {
  const int64_t d = 16, experts = 8, rows = 2;
  std::mt19937 rng(81);
  const std::vector<float> x = random_values(rng, rows * d, -1, 1, true);
  const std::vector<float> gate = random_values(rng, experts * d), bias = random_values(rng, experts, -0.1f, 0.1f);
  FakeContext ctx("router", {{"hidden", d}, {"experts", experts}, {"topk", 1}});
  ctx.set_rows(sequence_rows(rows, 0));
  fill(ctx.add_scratch("x", DType::BF16, {rows, d}), x);
  ctx.add_weight("gate", {experts, d}, gate);
  ctx.add_weight("bias", {experts}, bias);
  ctx.add_float("scaling", 1.5);
  ctx.add_int("normalize", 1);
  TensorView ids = ctx.add_scratch("ids", DType::I32, {rows, 1});
  TensorView weights = ctx.add_scratch("weights", DType::F32, {rows, 1});
  const Status status = ctx.run();
  ASSERT_TRUE(status.is_ok()) << status.message();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t e = ids.get_int(r);
    double l = 0;
    for (int64_t i = 0; i < d; ++i) l += double(gate[e * d + i]) * double(bf16_round(x[r * d + i]));
    const double expected = std::sqrt(std::max(l, 0.0) + std::log1p(std::exp(-std::fabs(l)))) * 1.5;
    EXPECT_NEAR(weights.get(r), expected, 1e-5 * expected) << "row " << r << " expert " << e;
    EXPECT_GT(std::fabs(weights.get(r) - 1.5), 1e-3) << "row " << r << ": renormalised to scaling";
  }
}

// Σ_k b(w_k·silu(min(g,L))·clamp(u,−L,L))·w2ᵀ in double, with the bound on its bf16 rounding error.
void expert_direct(const float* x, int64_t d, int64_t f, const std::vector<float>& w1, const std::vector<float>& w3,
                   const std::vector<float>& w2, double weight, double limit, double rel, std::vector<double>& y,
                   std::vector<double>& bound) {
  for (int64_t j = 0; j < f; ++j) {
    double g = 0, u = 0;
    for (int64_t i = 0; i < d; ++i) {
      g += double(w1[j * d + i]) * x[i];
      u += double(w3[j * d + i]) * x[i];
    }
    if (limit > 0) {
      g = std::min(g, limit);
      u = std::clamp(u, -limit, limit);
    }
    const double act = weight * g * sigmoid_d(g) * u;
    for (int64_t i = 0; i < d; ++i) {
      y[i] += act * w2[i * f + j];
      bound[i] += std::fabs(act * w2[i * f + j]) * rel;
    }
  }
}

TEST_P(CpuOpsByActivation, MoeExpertsAndSharedExpertMatchTheFormula) {
  const DType act = GetParam();
  const double rel = act == DType::BF16 ? kBf16Rel : 1e-5;
  const int64_t d = 16, f = 12, experts = 4, topk = 2, rows = 3;
  const double limit = 0.6;
  std::mt19937 rng(9);
  const std::vector<float> x = random_values(rng, rows * d, -1, 1, true);
  std::vector<std::vector<float>> w1, w3, w2;
  for (int64_t e = 0; e < experts; ++e) {
    w1.push_back(random_values(rng, f * d, -0.5f, 0.5f));
    w3.push_back(random_values(rng, f * d, -0.5f, 0.5f));
    w2.push_back(random_values(rng, d * f, -0.5f, 0.5f));
  }
  // The shared expert's own weights: none of the routed entries, so reading one of those instead fails.
  const std::vector<float> sw1 = random_values(rng, f * d, -0.5f, 0.5f);
  const std::vector<float> sw3 = random_values(rng, f * d, -0.5f, 0.5f);
  const std::vector<float> sw2 = random_values(rng, d * f, -0.5f, 0.5f);
  const std::vector<int32_t> ids = {3, 1, 0, 3, 0, 0};
  const std::vector<float> weights = {0.7f, 0.4f, 1.1f, 0.2f, 0.0f, 0.0f};
  // The routed experts' inputs (the fused call below takes the same); returns the ids.
  auto routed_inputs = [&](FakeContext& c) {
    c.set_rows(sequence_rows(rows - 1, 0, 1));
    fill(c.add_scratch("x", act, {rows, d}), x);
    TensorView v = c.add_scratch("ids", DType::I32, {rows, topk});
    for (size_t i = 0; i < ids.size(); ++i) v.set_int(static_cast<int64_t>(i), ids[i]);
    fill(c.add_scratch("weights", DType::F32, {rows, topk}), weights);
    c.add_weight_list("w1", {f, d}, w1);
    c.add_weight_list("w3", {f, d}, w3);
    c.add_weight_list("w2", {d, f}, w2);
    return v;
  };
  FakeContext ctx("moe_experts", {{"hidden", d}, {"width", f}, {"experts", experts}, {"topk", topk}});
  TensorView id_view = routed_inputs(ctx);
  ctx.add_float("limit", limit);
  TensorView out = ctx.add_scratch("out", DType::F32, {rows, d});
  fill(out, std::vector<float>(rows * d, 5.0f));  // overwritten
  ctx.add_scratch("work", DType::BF16, {rows, topk * (f + 2)});  // the GPU's prefill scratch; the CPU ignores it
  ASSERT_TRUE(ctx.run().is_ok());

  FakeContext shared("shared_expert", {{"hidden", d}, {"width", f}});
  shared.set_rows(sequence_rows(rows - 1, 0, 1));
  fill(shared.add_scratch("x", act, {rows, d}), x);
  shared.add_weight("w1", {f, d}, sw1);
  shared.add_weight("w3", {f, d}, sw3);
  shared.add_weight("w2", {d, f}, sw2);
  shared.add_float("limit", limit);
  TensorView acc = shared.add_scratch("out", DType::F32, {rows, d});
  fill(acc, values_of(out));
  acc.set((rows - 1) * d, 7.0f);  // an inactive row keeps what it held
  shared.add_scratch("work", DType::BF16, {rows, topk * (f + 2)});
  ASSERT_TRUE(shared.run().is_ok());

  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> y(d, 0.0), bound(d, 1e-6);
    if (r < rows - 1)
      for (int64_t k = 0; k < topk; ++k)
        expert_direct(x.data() + r * d, d, f, w1[ids[r * topk + k]], w3[ids[r * topk + k]], w2[ids[r * topk + k]],
                      weights[r * topk + k], limit, rel, y, bound);
    for (int64_t i = 0; i < d; ++i) EXPECT_NEAR(out.get(r * d + i), y[i], bound[i]) << "routed " << r << "," << i;
    if (r < rows - 1) expert_direct(x.data() + r * d, d, f, sw1, sw3, sw2, 1.0, limit, rel, y, bound);
    for (int64_t i = 0; i < d; ++i) {
      const double expected = r < rows - 1 ? y[i] : (i == 0 ? 7.0 : 0.0);
      EXPECT_NEAR(acc.get(r * d + i), expected, bound[i]) << "with shared " << r << "," << i;
    }
  }

  // The shared expert in the moe_experts call (decode phases): the two ops' bits, in their order; the
  // inactive row zero as the routed sum leaves it.
  FakeContext fused("moe_experts", {{"hidden", d}, {"width", f}, {"experts", experts}, {"topk", topk}});
  routed_inputs(fused);
  fused.add_weight("shared_w1", {f, d}, sw1);
  fused.add_weight("shared_w3", {f, d}, sw3);
  fused.add_float("limit", limit);
  TensorView both = fused.add_scratch("out", DType::F32, {rows, d});
  fused.add_scratch("work", DType::BF16, {rows, topk * (f + 2)});
  fill(both, std::vector<float>(rows * d, 5.0f));  // overwritten
  EXPECT_FALSE(fused.run().is_ok()) << "shared_w2 absent beside shared_w1 and shared_w3";
  fused.add_weight("shared_w2", {d, f - 1}, std::vector<float>(sw2.begin(), sw2.begin() + d * (f - 1)));
  EXPECT_FALSE(fused.run().is_ok()) << "shared_w2 of shape [d, f - 1]";
  EXPECT_EQ(values_of(both), std::vector<float>(rows * d, 5.0f)) << "refused before any write";
  fused.add_weight("shared_w2", {d, f}, sw2);
  ASSERT_TRUE(fused.run().is_ok());
  for (int64_t i = 0; i < rows * d; ++i)
    EXPECT_EQ(both.get(i), i < (rows - 1) * d ? acc.get(i) : 0.0f) << "fused " << i / d << "," << i % d;

  id_view.set_int(1, experts);  // an expert id out of range is refused, not followed
  EXPECT_FALSE(ctx.run().is_ok());
}

TEST(CpuOps, ARankWithoutExpertColumnsAddsNothing) {
  const int64_t d = 8, experts = 2, rows = 2;
  FakeContext ctx("moe_experts", {{"hidden", d}, {"width", 0}, {"experts", experts}, {"topk", 1}});
  ctx.set_rows(sequence_rows(rows, 0));
  ctx.add_scratch("x", DType::BF16, {rows, d});
  ctx.add_scratch("ids", DType::I32, {rows, 1});
  ctx.add_scratch("weights", DType::F32, {rows, 1});
  for (const char* w : {"w1", "w3"}) ctx.add_weight_list(w, {0, d}, {{}, {}});
  ctx.add_weight_list("w2", {d, 0}, {{}, {}});
  ctx.add_float("limit", 0.0);
  TensorView out = ctx.add_scratch("out", DType::F32, {rows, d});
  fill(out, std::vector<float>(rows * d, 3.0f));
  ctx.add_scratch("work", DType::BF16, {rows, 2});
  ASSERT_TRUE(ctx.run().is_ok());
  for (int64_t i = 0; i < rows * d; ++i) EXPECT_EQ(out.get(i), 0.0f);
}

TEST(CpuOps, MalformedCallsAreRefusedWithTheirSizes) {
  FakeContext ctx("linear", {{"in_features", 8}, {"out_features", 4}});
  ctx.set_rows(sequence_rows(2, 0));
  ctx.add_scratch("x", DType::F32, {2, 7});
  ctx.add_weight("w", {4, 8}, std::vector<float>(32, 1.0f));
  ctx.add_scratch("out", DType::F32, {2, 4});
  const Status s = ctx.run();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("linear"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("x has shape [2, 7]"), std::string::npos) << s.message();

  FakeContext weight("linear", {{"in_features", 8}, {"out_features", 4}});
  weight.set_rows(sequence_rows(2, 0));
  weight.add_scratch("x", DType::F32, {2, 8});
  weight.add_weight("w", {4, 7}, std::vector<float>(28, 1.0f));
  weight.add_scratch("out", DType::I32, {2, 4});
  EXPECT_FALSE(weight.run().is_ok());

  FakeContext mixed("hc_post", {{"hidden", 8}, {"streams", 2}});  // activations of one op share a dtype
  mixed.set_rows(sequence_rows(2, 0));
  mixed.add_scratch("x", DType::BF16, {2, 2, 8});
  mixed.add_scratch("sub", DType::BF16, {2, 8});
  mixed.add_scratch("mix", DType::F32, {2, 8});
  mixed.add_scratch("out", DType::F32, {2, 2, 8});
  EXPECT_FALSE(mixed.run().is_ok());

  FakeContext dtype("hc_pre_init", {{"streams", 4}, {"mix", 24}});
  dtype.set_rows(sequence_rows(2, 0));
  dtype.add_scratch("out", DType::BF16, {2, 24});  // the mix is fp32 (docs/model.md §2)
  EXPECT_FALSE(dtype.run().is_ok());
}

}  // namespace
}  // namespace dsv41::cpu::testing
