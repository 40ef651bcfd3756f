// common/numeric_formats.cpp — bit-exact number formats of the release checkpoint.
#include "common/numeric_formats.h"

#include <cmath>
#include <cstring>

#include "common/status.h"

namespace dsv41 {
namespace {

constexpr float kE2M1Values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
float float_of(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

// Nearest of an ascending table of non-negative magnitudes, ties to the even index.
int nearest_index(const float* table, int n, float magnitude) {
  int best = 0;
  for (int i = 1; i < n; ++i) {
    const float d_best = std::fabs(magnitude - table[best]), d = std::fabs(magnitude - table[i]);
    if (d < d_best || (d == d_best && i % 2 == 0)) best = i;
  }
  return best;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

float e4m3_decode(uint8_t bits);
float e8m0_decode(uint8_t bits);

// Every byte decoded once: dequantize reads these tables (the same bits as the converters, and
// loading a model's weights is dominated by this loop otherwise).
struct ByteTables {
  float e4m3[256], e8m0[256];
  ByteTables() {
    for (int b = 0; b < 256; ++b) {
      e4m3[b] = e4m3_decode(static_cast<uint8_t>(b));
      e8m0[b] = e8m0_decode(static_cast<uint8_t>(b));
    }
  }
};

const ByteTables& byte_tables() {
  static const ByteTables tables;
  return tables;
}

}  // namespace

float bf16_to_f32(uint16_t bits) { return float_of(static_cast<uint32_t>(bits) << 16); }

uint16_t f32_to_bf16(float value) {
  uint32_t b = bits_of(value);
  if (std::isnan(value)) return static_cast<uint16_t>((b >> 16) | 0x40);
  b += 0x7FFF + ((b >> 16) & 1);
  return static_cast<uint16_t>(b >> 16);
}

namespace {
float e4m3_decode(uint8_t bits) {
  const int sign = bits >> 7, exponent = (bits >> 3) & 0xF, mantissa = bits & 0x7;
  float magnitude;
  if (exponent == 0xF && mantissa == 0x7) return NAN;  // e4m3fn has no infinities
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa) / 8.0f, -6);
  else
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
  return sign ? -magnitude : magnitude;
}
// 0xFF is the format's one NaN (OCP MX v1.0 §5.4.1), not 2^128.
float e8m0_decode(uint8_t bits) { return bits == 0xFF ? NAN : std::ldexp(1.0f, static_cast<int>(bits) - 127); }
}  // namespace

float e4m3_to_f32(uint8_t bits) { return byte_tables().e4m3[bits]; }

uint8_t f32_to_e4m3(float value) {
  if (std::isnan(value)) return 0x7F;
  const uint8_t sign = std::signbit(value) ? 0x80 : 0;
  const float m = std::fmin(std::fabs(value), kE4M3Max);
  // Walk the 127 non-negative finite codes; the table is monotonic in the code.
  int lo = 0, hi = 0x7E;
  while (lo < hi) {  // first code whose value >= m
    const int mid = (lo + hi) / 2;
    if (e4m3_to_f32(static_cast<uint8_t>(mid)) < m) lo = mid + 1; else hi = mid;
  }
  int code = lo;
  if (code > 0) {
    const float above = e4m3_to_f32(static_cast<uint8_t>(code)), below = e4m3_to_f32(static_cast<uint8_t>(code - 1));
    if (m - below < above - m || (m - below == above - m && (code - 1) % 2 == 0)) code -= 1;
  }
  return static_cast<uint8_t>(sign | code);
}

float e2m1_to_f32(uint8_t nibble) {
  const float magnitude = kE2M1Values[nibble & 0x7];
  return (nibble & 0x8) ? -magnitude : magnitude;
}

uint8_t f32_to_e2m1(float value) {
  const uint8_t sign = std::signbit(value) ? 0x8 : 0;
  const float m = std::fmin(std::fabs(value), kE2M1Max);
  return static_cast<uint8_t>(sign | nearest_index(kE2M1Values, 8, m));
}

float e8m0_to_f32(uint8_t bits) { return byte_tables().e8m0[bits]; }

uint8_t e8m0_for_amax(float amax, float max_code) {
  if (!(amax > 0.0f)) return 127;
  int exponent = static_cast<int>(std::ceil(std::log2(amax / max_code)));
  if (std::ldexp(max_code, exponent - 1) >= amax) exponent -= 1;  // guard log2 rounding
  if (exponent < -127) exponent = -127;
  if (exponent > 127) exponent = 127;
  return static_cast<uint8_t>(exponent + 127);
}

void dequantize(Encoding encoding, DType plain_dtype, const uint8_t* weight, const uint8_t* scale, int64_t rows,
                int64_t cols, float* out) {
  const int64_t n = rows * cols;
  const ByteTables& t = byte_tables();
  switch (encoding) {
    case Encoding::Plain:
      if (plain_dtype == DType::F32) {
        std::memcpy(out, weight, static_cast<size_t>(n) * 4);
        return;
      }
      DSV41_CHECK(plain_dtype == DType::BF16);
      [[fallthrough]];
    case Encoding::BF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t b;
        std::memcpy(&b, weight + 2 * i, 2);
        out[i] = bf16_to_f32(b);
      }
      return;
    case Encoding::FP8Block: {
      const int64_t scale_cols = ceil_div(cols, kScaleBlock);
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* w = weight + r * cols;
        const uint8_t* s = scale + (r / kScaleBlock) * scale_cols;
        float* o = out + r * cols;
        for (int64_t c0 = 0; c0 < cols; c0 += kScaleBlock) {
          const float block_scale = t.e8m0[s[c0 / kScaleBlock]];
          const int64_t c1 = c0 + kScaleBlock < cols ? c0 + kScaleBlock : cols;
          for (int64_t c = c0; c < c1; ++c) o[c] = t.e4m3[w[c]] * block_scale;
        }
      }
      return;
    }
    case Encoding::FP8Rows: {
      const int64_t scale_cols = cols / kScaleBlock;
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* w = weight + r * cols;
        const uint8_t* s = scale + r * scale_cols;
        float* o = out + r * cols;
        for (int64_t b = 0; b < scale_cols; ++b) {
          const float block_scale = t.e8m0[s[b]];
          for (int64_t c = b * kScaleBlock; c < (b + 1) * kScaleBlock; ++c) o[c] = t.e4m3[w[c]] * block_scale;
        }
      }
      return;
    }
    case Encoding::FP4Rows: {
      const int64_t scale_cols = cols / kScaleBlock;
      float e2m1[16];
      for (int i = 0; i < 16; ++i) e2m1[i] = e2m1_to_f32(static_cast<uint8_t>(i));
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* w = weight + r * (cols / 2);
        const uint8_t* s = scale + r * scale_cols;
        float* o = out + r * cols;
        for (int64_t b = 0; b < scale_cols; ++b) {
          const float block_scale = t.e8m0[s[b]];
          for (int64_t k = b * kScaleBlock / 2; k < (b + 1) * kScaleBlock / 2; ++k) {
            o[2 * k] = e2m1[w[k] & 0xF] * block_scale;  // low nibble first
            o[2 * k + 1] = e2m1[w[k] >> 4] * block_scale;
          }
        }
      }
      return;
    }
  }
}

}  // namespace dsv41
