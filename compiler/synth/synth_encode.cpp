// compiler/synth/synth_encode.cpp — the quantizers of the release format, built on common/numeric_formats.
#include "compiler/synth/synth_encode.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "common/model_config.h"
#include "common/numeric_formats.h"
#include "common/status.h"

namespace dsv41 {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; so is memcpy here");

float amax_of(const float* v, int64_t n, int64_t stride, int64_t rows) {
  float amax = 0.0f;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(v[r * stride + i]));
  return amax;
}

void append_bf16(const float* v, int64_t n, std::vector<uint8_t>& out) {
  const size_t at = out.size();
  out.resize(at + 2 * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = f32_to_bf16(v[i]);
    std::memcpy(out.data() + at + 2 * i, &b, 2);
  }
}

// One scale per 32x32 tile; `rows` spans whole tiles except at the tensor's end.
void append_fp8_block(const float* v, int64_t rows, int64_t cols, std::vector<uint8_t>& weight,
                      std::vector<uint8_t>& scale) {
  const size_t at = weight.size();
  weight.resize(at + static_cast<size_t>(rows * cols));
  for (int64_t r0 = 0; r0 < rows; r0 += kScaleBlock) {
    const int64_t tile_rows = std::min(kScaleBlock, rows - r0);
    for (int64_t c0 = 0; c0 < cols; c0 += kScaleBlock) {
      const int64_t tile_cols = std::min(kScaleBlock, cols - c0);
      const uint8_t s = e8m0_for_amax(amax_of(v + r0 * cols + c0, tile_cols, cols, tile_rows), kE4M3Max);
      scale.push_back(s);
      const float inv = 1.0f / e8m0_to_f32(s);  // exact: a power of two
      for (int64_t r = r0; r < r0 + tile_rows; ++r)
        for (int64_t c = c0; c < c0 + tile_cols; ++c)
          weight[at + r * cols + c] = fast_f32_to_e4m3(v[r * cols + c] * inv);
    }
  }
}

// One scale per 32 values of a row: FP8 codes (Engram tables) or FP4 nibbles packed low nibble first.
void append_rows32(bool fp4, const float* v, int64_t rows, int64_t cols, std::vector<uint8_t>& weight,
                   std::vector<uint8_t>& scale) {
  DSV41_CHECK(cols % kScaleBlock == 0);
  const size_t at = weight.size();
  weight.resize(at + static_cast<size_t>(fp4 ? rows * cols / 2 : rows * cols));
  uint8_t* w = weight.data() + at;
  for (int64_t group = 0; group < rows * cols / kScaleBlock; ++group) {
    const float* x = v + group * kScaleBlock;
    const uint8_t s = e8m0_for_amax(amax_of(x, kScaleBlock, 0, 1), fp4 ? kE2M1Max : kE4M3Max);
    scale.push_back(s);
    const float inv = 1.0f / e8m0_to_f32(s);  // exact: a power of two
    if (fp4) {
      // Element 2k goes in the low nibble of byte k, element 2k+1 in the high nibble.
      for (int64_t k = 0; k < kScaleBlock / 2; ++k)
        *w++ = static_cast<uint8_t>(fast_f32_to_e2m1(x[2 * k] * inv) | (fast_f32_to_e2m1(x[2 * k + 1] * inv) << 4));
    } else {
      for (int64_t i = 0; i < kScaleBlock; ++i) *w++ = fast_f32_to_e4m3(x[i] * inv);
    }
  }
}

}  // namespace

uint8_t fast_f32_to_e4m3(float value) {
  const uint8_t sign = std::signbit(value) ? 0x80 : 0;
  const float m = std::fmin(std::fabs(value), kE4M3Max);
  if (m < 0x1p-6f)  // subnormal codes are multiples of 2^-9; nearbyint rounds ties to even
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(std::nearbyint(m * 512.0f)));
  const uint32_t bits = std::bit_cast<uint32_t>(m);
  const uint32_t exponent = (bits >> 23) - 127 + 7, mantissa = bits & 0x7FFFFF;
  uint32_t code = (exponent << 3) | (mantissa >> 20);
  const uint32_t rest = mantissa & 0xFFFFF, half = 0x80000;
  code += (rest > half) | ((rest == half) & code & 1);  // ties to even; a carry moves into the exponent, as it should
  return static_cast<uint8_t>(sign | code);
}

uint8_t fast_f32_to_e2m1(float value) {
  // Counts the midpoints between the magnitudes {0, .5, 1, 1.5, 2, 3, 4, 6} that lie below |value|,
  // without branches (values are random, so branches mispredict). A tie goes to the even index: >
  // where the lower neighbour's index is even, >= where it is odd.
  const float m = std::fabs(value);
  const int index = (m > 0.25f) + (m >= 0.75f) + (m > 1.25f) + (m >= 1.75f) + (m > 2.5f) + (m >= 3.5f) + (m > 5.0f);
  return static_cast<uint8_t>((std::signbit(value) ? 0x8 : 0) | index);
}

void encode_rows(Encoding encoding, DType plain_dtype, const float* values, int64_t rows, int64_t cols,
                 std::vector<uint8_t>& weight, std::vector<uint8_t>& scale) {
  const int64_t n = rows * cols;
  switch (encoding) {
    case Encoding::Plain:
      if (plain_dtype == DType::F32) {
        const size_t at = weight.size();
        weight.resize(at + 4 * static_cast<size_t>(n));
        std::memcpy(weight.data() + at, values, 4 * static_cast<size_t>(n));
        return;
      }
      DSV41_CHECK(plain_dtype == DType::BF16);
      append_bf16(values, n, weight);
      return;
    case Encoding::BF16: append_bf16(values, n, weight); return;
    case Encoding::FP8Block: append_fp8_block(values, rows, cols, weight, scale); return;
    case Encoding::FP8Rows: append_rows32(false, values, rows, cols, weight, scale); return;
    case Encoding::FP4Rows: append_rows32(true, values, rows, cols, weight, scale); return;
  }
}

}  // namespace dsv41
