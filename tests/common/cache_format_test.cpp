// tests/common/cache_format_test.cpp — packed cache rows on hand-computed values: scales, ties to even,
// saturation, the amax floors, and the row sizes of each role.
#include "common/cache_format.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "common/numeric_formats.h"

namespace dsv41 {
namespace {

std::vector<float> rounded(CacheRole role, std::vector<float> v) {
  std::vector<float> out(v.size());
  round_cache_row(role, v.data(), static_cast<int64_t>(v.size()), out.data());
  return out;
}

TEST(CacheFormat, RowBytesOfEachRole) {
  EXPECT_EQ(packed_row_bytes(CacheRole::Window, 512), 528);
  EXPECT_EQ(packed_row_bytes(CacheRole::Compressed, 512), 288);
  EXPECT_EQ(packed_row_bytes(CacheRole::IndexKey, 128), 68);
  EXPECT_EQ(cache_format_from_name("official"), CacheFormat::Official);
  EXPECT_EQ(cache_format_from_name("fp8"), std::nullopt);
}

// FP8 window rows: scale 2^ceil(log2(amax/448)); codes e4m3 nearest, ties to even.
TEST(CacheFormat, WindowRowsRoundThroughE4M3WithAPowerOfTwoScale) {
  std::vector<float> v(64, 0.0f);
  v[0] = 448.0f;    // group 0: amax 448, scale 1
  v[1] = 1.0625f;   // halfway between 1 and 1.125: ties to the even code, 1
  v[2] = 1.1875f;   // halfway between 1.125 and 1.25: ties to 1.25
  v[32] = 900.0f;   // group 1: amax 900, scale 4 (900/4 = 225 exact, step 16 at 128..256: 224)
  v[33] = 3.0f;     // 0.75 at scale 4: exact
  const std::vector<uint8_t> row = [&] {
    std::vector<uint8_t> r(static_cast<size_t>(packed_row_bytes(CacheRole::Window, 64)));
    pack_cache_row(CacheRole::Window, v.data(), 64, r.data());
    return r;
  }();
  EXPECT_EQ(row[64], 127);  // UE8M0 of scale 1
  EXPECT_EQ(row[65], 129);  // scale 4
  const std::vector<float> r = rounded(CacheRole::Window, v);
  EXPECT_EQ(r[0], 448.0f);
  EXPECT_EQ(r[1], 1.0f);
  EXPECT_EQ(r[2], 1.25f);
  EXPECT_EQ(r[32], 896.0f);
  EXPECT_EQ(r[33], 3.0f);
  // An all-zero group takes the amax floor 1e-4: scale 2^ceil(log2(1e-4/448)) = 2^-22.
  std::vector<float> zeros(32, 0.0f);
  std::vector<uint8_t> z(static_cast<size_t>(packed_row_bytes(CacheRole::Window, 32)));
  pack_cache_row(CacheRole::Window, zeros.data(), 32, z.data());
  EXPECT_EQ(z[32], 127 - 22);
}

// FP4 compressed rows: E4M3 scale = amax/6 rounded to e4m3, per 16; codes e2m1, ties to even, saturating.
TEST(CacheFormat, CompressedRowsRoundThroughE2M1WithAnE4M3Scale) {
  std::vector<float> v(32, 0.0f);
  v[0] = 6.0f;    // scale 1
  v[1] = 1.75f;   // between 1.5 and 2: ties to 2
  v[2] = 5.0f;    // between 4 and 6: ties to 4
  v[3] = -0.25f;  // between 0 and 0.5: ties to 0 (sign kept: -0)
  v[16] = 6.375f;  // group 1: amax/6 = 1.0625 rounds (tie) to the e4m3 1.0; 6.375 saturates to 6
  v[17] = 2.9f;
  const std::vector<float> r = rounded(CacheRole::Compressed, v);
  EXPECT_EQ(r[0], 6.0f);
  EXPECT_EQ(r[1], 2.0f);
  EXPECT_EQ(r[2], 4.0f);
  EXPECT_EQ(r[3], 0.0f);
  EXPECT_EQ(r[16], 6.0f);
  EXPECT_EQ(r[17], 3.0f);
  std::vector<uint8_t> row(static_cast<size_t>(packed_row_bytes(CacheRole::Compressed, 32)));
  pack_cache_row(CacheRole::Compressed, v.data(), 32, row.data());
  EXPECT_EQ(row[0], 0x7 | (0x4 << 4));  // 6 (code 7) low nibble, 2 (code 4) high nibble
  EXPECT_EQ(row[16], f32_to_e4m3(1.0f));
  EXPECT_EQ(row[17], f32_to_e4m3(1.0f));
}

// FP4 index keys: UE8M0 scale 2^ceil(log2(amax/6)) per 32.
TEST(CacheFormat, IndexKeysRoundThroughE2M1WithAPowerOfTwoScale) {
  std::vector<float> v(32, 0.0f);
  v[0] = 6.01f;  // scale 2: 3.005 -> 3 -> 6
  v[1] = 2.5f;   // 1.25 at scale 2: between 1 and 1.5, tie -> 1 -> 2
  std::vector<uint8_t> row(static_cast<size_t>(packed_row_bytes(CacheRole::IndexKey, 32)));
  pack_cache_row(CacheRole::IndexKey, v.data(), 32, row.data());
  EXPECT_EQ(row[16], 128);
  const std::vector<float> r = rounded(CacheRole::IndexKey, v);
  EXPECT_EQ(r[0], 6.0f);
  EXPECT_EQ(r[1], 2.0f);
}

// Fresh random rows: every rounded value is within half a code step of its input (the largest step of
// e4m3 is 2^-3 of the value's binade, of e2m1 two scales), and power-of-two scaled rows round idempotently.
TEST(CacheFormat, RandomRowsRoundWithinHalfAStepAndIdempotently) {
  std::mt19937 rng(1313);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (CacheRole role : {CacheRole::Window, CacheRole::Compressed, CacheRole::IndexKey}) {
    std::vector<float> v(128);
    for (float& x : v) x = normal(rng) * 3.0f;
    const std::vector<float> once = rounded(role, v), twice = rounded(role, once);
    const int64_t group = packed_group(role);
    for (size_t i = 0; i < v.size(); ++i) {
      float amax = 0.0f;
      for (int64_t k = 0; k < group; ++k) amax = std::max(amax, std::fabs(v[i / group * group + k]));
      // e4m3: half a step is 1/16 of the value (subnormals: a sliver of the scale); e2m1: half the widest
      // step is one scale, at most amax/6 rounded up to e4m3 (1/16 more) or to a power of two (twice).
      const float bound = role == CacheRole::Window       ? std::max(std::fabs(v[i]) / 16.0f, amax / 448.0f * 0.01f)
                          : role == CacheRole::Compressed ? amax / 6.0f * 1.07f
                                                          : amax / 3.0f;
      EXPECT_LE(std::fabs(once[i] - v[i]), bound) << "role " << static_cast<int>(role) << " value " << i << ": "
                                                  << v[i] << " -> " << once[i];
      // A power-of-two scale is the same for the rounded group (its amax stays in the scale's binade).
      if (role != CacheRole::Compressed) EXPECT_EQ(twice[i], once[i]) << "role " << static_cast<int>(role) << " value " << i;
    }
  }
}

}  // namespace
}  // namespace dsv41
