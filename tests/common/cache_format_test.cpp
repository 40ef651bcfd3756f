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

// Value `index` of a row (zeros elsewhere) set to `in`; it must read back as `out`.
struct Known {
  int index;
  float in, out;
};
// Rounds a row of `dim` values holding `cases` and checks each; returns the packed row.
std::vector<uint8_t> expect_known(CacheRole role, int64_t dim, const std::vector<Known>& cases) {
  std::vector<float> v(static_cast<size_t>(dim), 0.0f);
  for (const Known& k : cases) v[k.index] = k.in;
  const std::vector<float> r = rounded(role, v);
  for (const Known& k : cases) EXPECT_EQ(r[k.index], k.out) << "value " << k.index << " = " << k.in;
  std::vector<uint8_t> row(static_cast<size_t>(packed_row_bytes(role, dim)));
  pack_cache_row(role, v.data(), dim, row.data());
  return row;
}

TEST(CacheFormat, RowBytesOfEachRole) {
  EXPECT_EQ(packed_row_bytes(CacheRole::Window, 512), 528);
  EXPECT_EQ(packed_row_bytes(CacheRole::Compressed, 512), 288);
  EXPECT_EQ(packed_row_bytes(CacheRole::IndexKey, 128), 68);
  EXPECT_EQ(packed_row_dim(CacheRole::Compressed, 288), 512);
  EXPECT_EQ(packed_row_dim(CacheRole::IndexKey, 68), 128);
  EXPECT_EQ(packed_row_dim(CacheRole::Window, 529), 0);
  EXPECT_EQ(cache_format_from_name("official"), CacheFormat::Official);
  EXPECT_EQ(cache_format_from_name("fp8"), std::nullopt);
}

// FP8 window rows: scale 2^ceil(log2(amax/448)); codes e4m3 nearest, ties to even.
TEST(CacheFormat, WindowRowsRoundThroughE4M3WithAPowerOfTwoScale) {
  const std::vector<uint8_t> row = expect_known(CacheRole::Window, 64,
                                                {{0, 448.0f, 448.0f},   // group 0: amax 448, scale 1
                                                 {1, 1.0625f, 1.0f},    // halfway 1 / 1.125: the even code
                                                 {2, 1.1875f, 1.25f},   // halfway 1.125 / 1.25: 1.25
                                                 {32, 900.0f, 896.0f},  // group 1: scale 4, 225 -> 224
                                                 {33, 3.0f, 3.0f}});    // 0.75 at scale 4: exact
  EXPECT_EQ(row[64], 127);  // UE8M0 of scale 1
  EXPECT_EQ(row[65], 129);  // scale 4
  // An all-zero group takes the amax floor 1e-4: scale 2^ceil(log2(1e-4/448)) = 2^-22.
  EXPECT_EQ(expect_known(CacheRole::Window, 32, {})[32], 127 - 22);
}

// FP4 compressed rows: E4M3 scale = amax/6 rounded to e4m3, per 16; codes e2m1, ties to even, saturating.
TEST(CacheFormat, CompressedRowsRoundThroughE2M1WithAnE4M3Scale) {
  const std::vector<uint8_t> row = expect_known(CacheRole::Compressed, 32,
                                                {{0, 6.0f, 6.0f},      // scale 1
                                                 {1, 1.75f, 2.0f},     // between 1.5 and 2: ties to 2
                                                 {2, 5.0f, 4.0f},      // between 4 and 6: ties to 4
                                                 {3, -0.25f, 0.0f},    // between 0 and 0.5: ties to (-)0
                                                 {16, 6.375f, 6.0f},   // group 1: amax/6 = 1.0625 ties to the
                                                 {17, 2.9f, 3.0f}});   // e4m3 1.0; 6.375 saturates to 6
  EXPECT_EQ(row[0], 0x7 | (0x4 << 4));  // 6 (code 7) low nibble, 2 (code 4) high nibble
  EXPECT_EQ(row[16], f32_to_e4m3(1.0f));
  EXPECT_EQ(row[17], f32_to_e4m3(1.0f));
}

// FP4 index keys: UE8M0 scale 2^ceil(log2(amax/6)) per 32.
TEST(CacheFormat, IndexKeysRoundThroughE2M1WithAPowerOfTwoScale) {
  const std::vector<uint8_t> row = expect_known(CacheRole::IndexKey, 32,
                                                {{0, 6.01f, 6.0f},   // scale 2: 3.005 -> 3 -> 6
                                                 {1, 2.5f, 2.0f}});  // 1.25 at scale 2: ties to 1 -> 2
  EXPECT_EQ(row[16], 128);
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
