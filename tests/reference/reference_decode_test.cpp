// tests/reference/reference_decode_test.cpp — the reference's decoder against known values and, code by code,
// against the implementation's (two decoders written apart must agree on every code).
#include "tests/reference/reference_decode.h"

#include <cmath>

#include <gtest/gtest.h>

#include "common/numeric_formats.h"

namespace dsv41::reference {
namespace {

bool same(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

TEST(ReferenceDecode, KnownValues) {
  EXPECT_EQ(decode_e4m3(0x01), 0.001953125f);  // 2^-9
  EXPECT_EQ(decode_e4m3(0x38), 1.0f);
  EXPECT_EQ(decode_e4m3(0x7E), 448.0f);
  EXPECT_EQ(decode_e4m3(0xC4), -3.0f);
  EXPECT_TRUE(std::isnan(decode_e4m3(0xFF)));
  EXPECT_EQ(decode_e2m1(0x7), 6.0f);
  EXPECT_EQ(decode_e2m1(0x1), 0.5f);
  EXPECT_EQ(decode_e2m1(0xB), -1.5f);
  EXPECT_EQ(decode_ue8m0(0x00), std::ldexp(1.0f, -127));
  EXPECT_EQ(decode_ue8m0(0x7F), 1.0f);
  EXPECT_EQ(decode_ue8m0(0xFE), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(decode_ue8m0(0xFF)));
}

TEST(ReferenceDecode, EveryCodeAgreesWithTheImplementation) {
  for (int code = 0; code < 256; ++code) {
    const auto b = static_cast<uint8_t>(code);
    EXPECT_TRUE(same(decode_e4m3(b), e4m3_to_f32(b))) << "e4m3 0x" << std::hex << code;
    EXPECT_TRUE(same(decode_ue8m0(b), e8m0_to_f32(b))) << "ue8m0 0x" << std::hex << code;
    if (code < 16) EXPECT_TRUE(same(decode_e2m1(b), e2m1_to_f32(b))) << "e2m1 0x" << std::hex << code;
  }
}

// Element 0 in the low nibble; FP8 tiles of 32×32.
TEST(ReferenceDecode, LayoutsOfPackedAndTiledTensors) {
  std::vector<uint8_t> fp4(16, 0x00);
  fp4[0] = 0xC2;  // element 0: +1.0, element 1: -2.0
  const std::vector<float> row = decode_tensor(Encoding::FP4Rows, false, fp4, {0x80}, 1, 32);
  EXPECT_EQ(row[0], 2.0f);
  EXPECT_EQ(row[1], -4.0f);
  const std::vector<uint8_t> fp8(33 * 33, 0x38);
  const std::vector<float> tiles = decode_tensor(Encoding::FP8Block, false, fp8, {0x7F, 0x80, 0x81, 0x82}, 33, 33);
  EXPECT_EQ(tiles[0], 1.0f);
  EXPECT_EQ(tiles[32], 2.0f);
  EXPECT_EQ(tiles[32 * 33], 4.0f);
  EXPECT_EQ(tiles[32 * 33 + 32], 8.0f);
}

}  // namespace
}  // namespace dsv41::reference
