// tests/common/number_format_known_answers_test.cpp — the number formats against tables written from their
// published definitions, not from this project's encoder (synth_pack_test only shows encoder and decoder agree).
//
// Sources of the tables below (each value written out from the definition, none computed by dsv41):
// - FP8 E4M3: OCP "8-bit Floating Point Specification (OFP8)", rev. 1.0 (2023), §5.1 and Table 1:
//   bias 7; subnormals m/8·2^-6; S.1111.111 is NaN; no infinities; largest finite S.1111.110 = ±448.
//   The conversion table of the same spec (saturating mode): out-of-range values and ±inf clamp to
//   ±448, NaN stays NaN; rounding is round-to-nearest-even.
// - FP4 E2M1 and the E8M0 scale: OCP "Microscaling Formats (MX) Specification" v1.0 (2023), §5.3.3
//   (E2M1: bias 1, magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; no inf, no NaN) and §5.4.1 (E8M0: 2^(e-127),
//   e = 0x00 is 2^-127, 0xFF is NaN; no sign, no zero, no inf).
// - FP4 packing: two e2m1 codes a byte, element 0 in the low nibble (bits 3:0), element 1 in the high
//   nibble: NVIDIA's __nv_fp4x2_e2m1 (cuda_fp4.h) and the DeepSeek-V4 release's FP4 expert weights
//   (docs/model.md; ../shared/reference/dsv41-architecture.md "low nibble first").
// - Scales: one UE8M0 per 32×32 tile of an FP8 weight, one per 32 along a row of FP4 and FP8-row
//   weights (the release's quantization_config, weight_block_size [32, 32]).
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "common/numeric_formats.h"

namespace dsv41 {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Every non-negative e4m3 code, 0x00..0x7F, by the OFP8 definition; code | 0x80 is its negative.
// clang-format off
constexpr float kE4M3[128] = {
    0.0f, 0.001953125f, 0.00390625f, 0.005859375f, 0.0078125f, 0.009765625f, 0.01171875f, 0.013671875f,  // exponent 0: m/8·2^-6
    0.015625f, 0.017578125f, 0.01953125f, 0.021484375f, 0.0234375f, 0.025390625f, 0.02734375f, 0.029296875f,
    0.03125f, 0.03515625f, 0.0390625f, 0.04296875f, 0.046875f, 0.05078125f, 0.0546875f, 0.05859375f,
    0.0625f, 0.0703125f, 0.078125f, 0.0859375f, 0.09375f, 0.1015625f, 0.109375f, 0.1171875f,
    0.125f, 0.140625f, 0.15625f, 0.171875f, 0.1875f, 0.203125f, 0.21875f, 0.234375f,
    0.25f, 0.28125f, 0.3125f, 0.34375f, 0.375f, 0.40625f, 0.4375f, 0.46875f,
    0.5f, 0.5625f, 0.625f, 0.6875f, 0.75f, 0.8125f, 0.875f, 0.9375f,
    1.0f, 1.125f, 1.25f, 1.375f, 1.5f, 1.625f, 1.75f, 1.875f,  // exponent 7: the bias, 1.0
    2.0f, 2.25f, 2.5f, 2.75f, 3.0f, 3.25f, 3.5f, 3.75f,
    4.0f, 4.5f, 5.0f, 5.5f, 6.0f, 6.5f, 7.0f, 7.5f,
    8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f, 15.0f,
    16.0f, 18.0f, 20.0f, 22.0f, 24.0f, 26.0f, 28.0f, 30.0f,
    32.0f, 36.0f, 40.0f, 44.0f, 48.0f, 52.0f, 56.0f, 60.0f,
    64.0f, 72.0f, 80.0f, 88.0f, 96.0f, 104.0f, 112.0f, 120.0f,
    128.0f, 144.0f, 160.0f, 176.0f, 192.0f, 208.0f, 224.0f, 240.0f,
    256.0f, 288.0f, 320.0f, 352.0f, 384.0f, 416.0f, 448.0f, kNaN,  // exponent 15: 0x7F is NaN
};
// clang-format on

// Every e2m1 code, 0x0..0xF, by the MX definition (bit 3 the sign).
constexpr float kE2M1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                             -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// A value and the code a round-to-nearest-even, saturating encoder must give it.
struct EncodeCase {
  float value;
  uint8_t code;
};

void expect_encodes(const std::vector<EncodeCase>& cases, uint8_t (*encode)(float), const char* format) {
  for (const EncodeCase& c : cases)
    EXPECT_EQ(encode(c.value), c.code) << format << ": " << c.value << " should encode as 0x" << std::hex
                                       << int{c.code};
}

TEST(NumberFormatKnownAnswers, EveryE4M3CodeDecodesToTheOfp8Table) {
  for (int code = 0; code < 256; ++code) {
    const float expected = code < 128 ? kE4M3[code] : -kE4M3[code - 128];
    const float got = e4m3_to_f32(static_cast<uint8_t>(code));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << "code 0x" << std::hex << code << ": " << got;
      continue;
    }
    EXPECT_EQ(got, expected) << "code 0x" << std::hex << code;
    EXPECT_EQ(std::signbit(got), code >= 128) << "code 0x" << std::hex << code << ": the sign bit";
  }
}

TEST(NumberFormatKnownAnswers, E4M3EncodesRoundToNearestEvenAndSaturates) {
  expect_encodes(
      {
          {1.0f, 0x38},
          {-1.0f, 0xB8},
          {448.0f, 0x7E},
          {-448.0f, 0xFE},
          {500.0f, 0x7E},
          {1e30f, 0x7E},
          {std::numeric_limits<float>::infinity(), 0x7E},
          {-std::numeric_limits<float>::infinity(), 0xFE},
          {1.0625f, 0x38},         // halfway 1.0 / 1.125: to the even mantissa (1.0)
          {1.1875f, 0x3A},         // halfway 1.125 / 1.25: to the even mantissa (1.25)
          {0.001953125f, 0x01},    // 2^-9, the smallest subnormal
          {0.0009765625f, 0x00},   // 2^-10, halfway 0 / 2^-9: to even (0)
          {0.00146484375f, 0x01},  // 3·2^-11, nearer 2^-9
          {0.015625f, 0x08},       // 2^-6, the smallest normal
          {0.0f, 0x00},
          {-0.0f, 0x80},
      },
      f32_to_e4m3, "e4m3");
  EXPECT_TRUE(std::isnan(e4m3_to_f32(f32_to_e4m3(kNaN)))) << "NaN must stay NaN";
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;  // the NaNs
    EXPECT_EQ(f32_to_e4m3(e4m3_to_f32(static_cast<uint8_t>(code))), code) << "code 0x" << std::hex << code;
  }
}

TEST(NumberFormatKnownAnswers, EveryE2M1CodeDecodesToTheMxTable) {
  for (int code = 0; code < 16; ++code) {
    const float got = e2m1_to_f32(static_cast<uint8_t>(code));
    EXPECT_EQ(got, kE2M1[code]) << "code 0x" << std::hex << code;
    EXPECT_EQ(std::signbit(got), code >= 8) << "code 0x" << std::hex << code << ": the sign bit";
    EXPECT_EQ(f32_to_e2m1(kE2M1[code]), code) << "code 0x" << std::hex << code << " must encode back to itself";
  }
}

TEST(NumberFormatKnownAnswers, E2M1EncodesRoundToNearestEvenAndSaturates) {
  expect_encodes(
      {
          {0.25f, 0x0},  // halfway 0 / 0.5: to even (0)
          {0.75f, 0x2},  // halfway 0.5 / 1: to even (1.0, mantissa 0)
          {1.25f, 0x2},  // halfway 1 / 1.5: 1.0
          {1.75f, 0x4},  // halfway 1.5 / 2: 2.0
          {2.5f, 0x4},   // halfway 2 / 3: 2.0
          {3.5f, 0x6},   // halfway 3 / 4: 4.0
          {5.0f, 0x6},   // halfway 4 / 6: 4.0
          {5.1f, 0x7},
          {7.0f, 0x7},
          {1e9f, 0x7},
          {std::numeric_limits<float>::infinity(), 0x7},
          {-5.0f, 0xE},
          {-100.0f, 0xF},
      },
      f32_to_e2m1, "e2m1");
}

TEST(NumberFormatKnownAnswers, E8M0EdgeExponentsAndItsNaN) {
  EXPECT_EQ(e8m0_to_f32(0x00), std::ldexp(1.0f, -127));  // a float subnormal, still exact
  EXPECT_EQ(e8m0_to_f32(0x00), 5.877471754111438e-39f);
  EXPECT_EQ(e8m0_to_f32(0x01), 1.1754943508222875e-38f);  // 2^-126
  EXPECT_EQ(e8m0_to_f32(0x7E), 0.5f);
  EXPECT_EQ(e8m0_to_f32(0x7F), 1.0f);
  EXPECT_EQ(e8m0_to_f32(0x80), 2.0f);
  EXPECT_EQ(e8m0_to_f32(0x85), 64.0f);
  EXPECT_EQ(e8m0_to_f32(0xFE), 1.7014118346046923e38f);  // 2^127
  EXPECT_TRUE(std::isnan(e8m0_to_f32(0xFF))) << "0xFF is NaN in MX §5.4.1, not 2^128: " << e8m0_to_f32(0xFF);
  // The scale chosen for a block: the smallest power of two with amax / scale <= the code's max.
  EXPECT_EQ(e8m0_for_amax(448.0f, kE4M3Max), 0x7F);  // fits at scale 1
  EXPECT_EQ(e8m0_for_amax(449.0f, kE4M3Max), 0x80);  // needs 2
  EXPECT_EQ(e8m0_for_amax(6.0f, kE2M1Max), 0x7F);
  EXPECT_EQ(e8m0_for_amax(3.0f, kE2M1Max), 0x7E);  // 0.5 suffices
  EXPECT_EQ(e8m0_for_amax(0.0f, kE2M1Max), 0x7F);  // an all-zero block: scale 1
}

// Element 0 of a packed FP4 byte is its low nibble; each 32 values of a row share one scale.
TEST(NumberFormatKnownAnswers, Fp4RowsDecodeLowNibbleFirstWithOneScalePer32) {
  std::vector<uint8_t> weight(32, 0x00);            // one row of 64 values: 32 bytes
  weight[0] = 0xC2;                                 // element 0: 0x2 = +1.0; element 1: 0xC = -2.0
  weight[15] = 0x7F;                                // elements 30, 31: 0xF = -6.0, 0x7 = +6.0
  weight[16] = 0x91;                                // elements 32, 33: 0x1 = +0.5, 0x9 = -0.5
  const std::vector<uint8_t> scale = {0x80, 0x7D};  // ×2 for elements 0-31, ×0.25 for 32-63
  std::vector<float> out(64, kNaN);
  dequantize(Encoding::FP4Rows, DType::U8, weight.data(), scale.data(), 1, 64, out.data());
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[1], -4.0f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[30], -12.0f);
  EXPECT_EQ(out[31], 12.0f);
  EXPECT_EQ(out[32], 0.125f);
  EXPECT_EQ(out[33], -0.125f);
}

// FP8 weights: one scale per 32×32 tile, the scale tensor [ceil(rows/32), ceil(cols/32)] row-major.
TEST(NumberFormatKnownAnswers, Fp8BlockScalesTileBy32x32) {
  const int64_t rows = 40, cols = 70;                     // partial tiles on both edges: scales [2, 3]
  std::vector<uint8_t> weight(rows * cols, 0x38);         // every value 1.0
  const std::vector<uint8_t> scale = {0x7F, 0x80, 0x81,   // tiles of rows 0-31: ×1, ×2, ×4
                                      0x7E, 0x7D, 0x86};  // rows 32-39: ×0.5, ×0.25, ×128
  std::vector<float> out(rows * cols, kNaN);
  dequantize(Encoding::FP8Block, DType::F8_E4M3, weight.data(), scale.data(), rows, cols, out.data());
  const auto at = [&](int64_t r, int64_t c) { return out[r * cols + c]; };
  EXPECT_EQ(at(0, 0), 1.0f);
  EXPECT_EQ(at(31, 31), 1.0f);
  EXPECT_EQ(at(31, 32), 2.0f);
  EXPECT_EQ(at(0, 64), 4.0f);
  EXPECT_EQ(at(31, 69), 4.0f);
  EXPECT_EQ(at(32, 0), 0.5f);
  EXPECT_EQ(at(39, 40), 0.25f);
  EXPECT_EQ(at(39, 69), 128.0f);
}

// FP8 rows (Engram tables): one scale per 32 values along each row.
TEST(NumberFormatKnownAnswers, Fp8RowsScaleEach32ValuesOfARow) {
  std::vector<uint8_t> weight(2 * 64, 0x40);  // every value 2.0
  weight[64 + 33] = 0xC4;                     // row 1, column 33: -3.0
  const std::vector<uint8_t> scale = {0x7F, 0x80, 0x81, 0x7E};
  std::vector<float> out(2 * 64, kNaN);
  dequantize(Encoding::FP8Rows, DType::F8_E4M3, weight.data(), scale.data(), 2, 64, out.data());
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[32], 4.0f);
  EXPECT_EQ(out[64], 8.0f);
  EXPECT_EQ(out[64 + 33], -1.5f);
}

// bf16 is the upper half of an IEEE binary32; conversion rounds to nearest even.
TEST(NumberFormatKnownAnswers, Bf16IsTheUpperHalfOfAFloatRoundedToEven) {
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xC040), -3.0f);
  EXPECT_EQ(bf16_to_f32(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7FC0)));
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3F80);  // 1 + 2^-8: halfway, to even
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3F82);  // 1 + 3·2^-8: halfway, to even (up)
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(kNaN))));
}

}  // namespace
}  // namespace dsv41
