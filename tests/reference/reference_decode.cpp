// tests/reference/reference_decode.cpp — stored formats to fp32 by building each value's IEEE-754 bits.
#include "tests/reference/reference_decode.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "common/status.h"

namespace dsv41::reference {
namespace {

float from_bits(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

constexpr int64_t kTile = 32;

}  // namespace

float decode_e4m3(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code >> 7) << 31;
  const uint32_t exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) {  // subnormal: mantissa · 2^-9, exact in binary32
    const float magnitude = static_cast<float>(mantissa) * from_bits((127u - 9u) << 23);
    return sign ? -magnitude : magnitude;
  }
  // A normal e4m3 is a normal binary32 with the exponent rebiased (7 → 127) and 3 mantissa bits on top.
  return from_bits(sign | ((exponent - 7 + 127) << 23) | (mantissa << 20));
}

float decode_e2m1(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>((code >> 3) & 1) << 31;
  const uint32_t exponent = (code >> 1) & 0x3, mantissa = code & 0x1;
  if (exponent == 0) return from_bits(sign | (mantissa ? (126u << 23) : 0u));  // 0 or 0.5
  return from_bits(sign | ((exponent - 1 + 127) << 23) | (mantissa << 22));
}

float decode_ue8m0(uint8_t code) {
  if (code == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  if (code == 0) return from_bits(0x00400000u);  // 2^-127, a binary32 subnormal
  return from_bits(static_cast<uint32_t>(code) << 23);
}

std::vector<float> decode_tensor(Encoding encoding, bool plain_f32, const std::vector<uint8_t>& weight,
                                 const std::vector<uint8_t>& scale, int64_t rows, int64_t cols) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  auto at = [&](int64_t r, int64_t c) -> float& { return out[static_cast<size_t>(r * cols + c)]; };
  switch (encoding) {
    case Encoding::Plain:
      if (plain_f32) {
        DSV41_CHECK(weight.size() == out.size() * 4);
        std::memcpy(out.data(), weight.data(), weight.size());
        return out;
      }
      [[fallthrough]];
    case Encoding::BF16:
      DSV41_CHECK(weight.size() == out.size() * 2);
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = from_bits(static_cast<uint32_t>(weight[2 * i] | (weight[2 * i + 1] << 8)) << 16);
      return out;
    case Encoding::FP8Block: {
      const int64_t tiles_across = (cols + kTile - 1) / kTile;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          at(r, c) = decode_e4m3(weight[r * cols + c]) * decode_ue8m0(scale[(r / kTile) * tiles_across + c / kTile]);
      return out;
    }
    case Encoding::FP8Rows:
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          at(r, c) = decode_e4m3(weight[r * cols + c]) * decode_ue8m0(scale[r * (cols / kTile) + c / kTile]);
      return out;
    case Encoding::FP4Rows:
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const uint8_t byte = weight[(r * cols + c) / 2];
          const uint8_t code = c % 2 == 0 ? byte & 0xF : byte >> 4;
          at(r, c) = decode_e2m1(code) * decode_ue8m0(scale[r * (cols / kTile) + c / kTile]);
        }
      return out;
  }
  DSV41_CHECK(false);
  return out;
}

}  // namespace dsv41::reference
