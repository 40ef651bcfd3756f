// tests/runtime/engram_math_test.cpp — Engram row fetch and gate against direct double-precision evaluation.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "common/numeric_formats.h"
#include "runtime/cpu/engram_math.h"

namespace dsv41::cpu {
namespace {

TEST(EngramMath, FetchDequantizesEachGroupWithItsScaleAndRefusesRowsOutsideTheTable) {
  const int64_t rows = 5, dim = 64, columns = 2;
  std::mt19937 rng(13);
  std::vector<uint8_t> codes(rows * dim), scales(rows * dim / 32);
  for (auto& c : codes) c = static_cast<uint8_t>(rng() % 0x7F);  // finite e4m3 codes, both signs below
  for (size_t i = 0; i < codes.size(); i += 3) codes[i] |= 0x80;
  for (auto& s : scales) s = static_cast<uint8_t>(120 + rng() % 14);
  const EngramTable table{codes.data(), scales.data(), rows, dim, 14};
  const std::vector<int64_t> ids = {4, 0, 2, 4};
  std::vector<float> out(ids.size() * dim);
  ASSERT_TRUE(engram_fetch_rows(table, ids, columns, out.data()).is_ok());
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t k = 0; k < dim; ++k) {
      const double expected = e4m3_to_f32(codes[ids[i] * dim + k]) * std::ldexp(1.0, scales[ids[i] * 2 + k / 32] - 127);
      ASSERT_EQ(out[i * dim + k], bf16_round(static_cast<float>(expected))) << "id " << ids[i] << " value " << k;
    }
  const std::vector<int64_t> bad = {0, 1, 2, 5};
  const Status s = engram_fetch_rows(table, bad, columns, out.data());
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "Engram layer 14: position 1 column 1: row id 5 outside the table's 5 rows");
}

// g = sigmoid(sign(dot)·sqrt(max(|dot|, 1e-6))) per stream, in double, on random streams and keys.
TEST(EngramMath, GateMatchesTheFormulaOnEveryStream) {
  const int64_t streams = 4, d = 96;
  const float eps = 1e-20f;
  std::mt19937 rng(14);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> x(streams * d), kv((streams + 1) * d), q(streams * d), k(streams * d);
  for (auto* v : {&x, &kv, &q, &k})
    for (float& e : *v) e = u(rng);
  for (bool round : {false, true}) {
    std::vector<float> y = x;
    engram_gate(y.data(), streams, d, kv.data(), q.data(), k.data(), eps, round);
    for (int64_t s = 0; s < streams; ++s) {
      double hh = 0, kk = 0, dot = 0;
      for (int64_t i = 0; i < d; ++i) {
        const double h = x[s * d + i], key = kv[s * d + i];
        hh += h * h;
        kk += key * key;
        dot += h * q[s * d + i] * k[s * d + i] * key;
      }
      dot /= std::sqrt(hh / d + eps) * std::sqrt(kk / d + eps) * std::sqrt(double(d));
      const double sign = dot > 0 ? 1 : (dot < 0 ? -1 : 0);
      const double g = 1 / (1 + std::exp(-sign * std::sqrt(std::max(std::fabs(dot), 1e-6))));
      for (int64_t i = 0; i < d; ++i) {
        const double expected = x[s * d + i] + g * kv[streams * d + i];
        const double tol = round ? std::fabs(expected) / 128 + 1e-5 : 1e-4 * (1 + std::fabs(expected));
        ASSERT_NEAR(y[s * d + i], expected, tol) << "stream " << s << " index " << i << " round " << round;
      }
    }
  }
}

// An exactly orthogonal key has dot 0, sign 0, so g = 1/2 (not sigmoid(±1e-3)).
TEST(EngramMath, AZeroDotGatesAtOneHalf) {
  const int64_t d = 2;
  std::vector<float> x = {1.0f, 0.0f}, kv = {0.0f, 1.0f, 0.5f, -0.25f}, q = {1, 1}, k = {1, 1};
  engram_gate(x.data(), 1, d, kv.data(), q.data(), k.data(), 1e-20f, false);
  EXPECT_EQ(x[0], 1.0f + 0.5f * 0.5f);
  EXPECT_EQ(x[1], 0.5f * -0.25f);
}

}  // namespace
}  // namespace dsv41::cpu
