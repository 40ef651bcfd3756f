// compiler/synth_encode.cpp — the quantizers of the release format, built on common/numeric_formats.
#include "compiler/synth_encode.h"

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
        for (int64_t c = c0; c < c0 + tile_cols; ++c) weight[at + r * cols + c] = f32_to_e4m3(v[r * cols + c] * inv);
    }
  }
}

// One scale per 32 values of a row: FP8 codes (Engram tables) or FP4 nibbles packed low nibble first.
void append_rows32(bool fp4, const float* v, int64_t rows, int64_t cols, std::vector<uint8_t>& weight,
                   std::vector<uint8_t>& scale) {
  DSV41_CHECK(cols % kScaleBlock == 0);
  const int64_t row_bytes = fp4 ? cols / 2 : cols;
  const size_t at = weight.size();
  weight.resize(at + static_cast<size_t>(rows * row_bytes), 0);
  uint8_t* w = weight.data() + at;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c0 = 0; c0 < cols; c0 += kScaleBlock) {
      const float* x = v + r * cols + c0;
      const uint8_t s = e8m0_for_amax(amax_of(x, kScaleBlock, 0, 1), fp4 ? kE2M1Max : kE4M3Max);
      scale.push_back(s);
      const float inv = 1.0f / e8m0_to_f32(s);
      for (int64_t i = 0; i < kScaleBlock; ++i) {
        const int64_t c = c0 + i;
        if (!fp4) {
          w[r * row_bytes + c] = f32_to_e4m3(x[i] * inv);
        } else {
          // Element 2k goes in the low nibble of byte k, element 2k+1 in the high nibble.
          w[r * row_bytes + c / 2] |= static_cast<uint8_t>(f32_to_e2m1(x[i] * inv) << (4 * (c % 2)));
        }
      }
    }
}

}  // namespace

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
