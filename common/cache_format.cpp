// common/cache_format.cpp — the official packed cache rows: quantize and dequantize one row.
#include "common/cache_format.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/numeric_formats.h"

namespace dsv41 {
namespace {

// The official floors on a group's amax: FP8 act_quant takes max(amax, 1e-4); the FP4 scales take the
// smallest amax whose scale their byte can hold (2^-9 is the least e4m3 subnormal, 2^-126 the UE8M0
// scale a normal fp32 reaches).
constexpr float kFp8AmaxFloor = 1e-4f;
const float kFp4E4M3AmaxFloor = std::ldexp(6.0f, -9);
const float kFp4E8M0AmaxFloor = std::ldexp(6.0f, -126);

float group_amax(const float* v, int64_t n) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(v[i]));
  return amax;
}

// The UE8M0 byte of the smallest power of two 2^e with amax <= max_code·2^e, computed exactly from
// amax's binary exponent (max_code = m·2^k with m in [1, 2): e = E − k, plus 1 when amax's mantissa
// exceeds m), so kernels/cache_rows.cuh reproduces it bit for bit. amax is positive and finite.
uint8_t pow2_scale_byte(float amax, float max_code) {
  int amax_exp = 0, max_exp = 0;
  const float amax_mantissa = std::frexp(amax, &amax_exp), max_mantissa = std::frexp(max_code, &max_exp);
  const int e = amax_exp - max_exp + (amax_mantissa > max_mantissa ? 1 : 0);
  return static_cast<uint8_t>(std::clamp(e, -127, 127) + 127);
}

int64_t codes_bytes(CacheRole role, int64_t dim) { return role == CacheRole::Window ? dim : dim / 2; }

}  // namespace

std::string_view cache_format_name(CacheFormat format) { return format == CacheFormat::Official ? "official" : "bf16"; }

std::optional<CacheFormat> cache_format_from_name(std::string_view name) {
  if (name == "bf16") return CacheFormat::BF16;
  if (name == "official") return CacheFormat::Official;
  return std::nullopt;
}

int64_t packed_group(CacheRole role) { return role == CacheRole::Compressed ? 16 : 32; }

int64_t packed_row_bytes(CacheRole role, int64_t dim) { return codes_bytes(role, dim) + dim / packed_group(role); }

int64_t packed_row_dim(CacheRole role, int64_t row_bytes) {
  // row bytes per group: 33 (FP8, 32 values), 9 (FP4 per 16), 17 (FP4 per 32)
  const int64_t group = packed_group(role), per_group = packed_row_bytes(role, group);
  return row_bytes % per_group == 0 ? row_bytes / per_group * group : 0;
}

std::optional<CacheRole> cache_role_of_arg(std::string_view arg) {
  if (arg == "ring") return CacheRole::Window;
  if (arg == "cache") return CacheRole::Compressed;
  if (arg == "index_cache") return CacheRole::IndexKey;
  return std::nullopt;
}

void pack_cache_row(CacheRole role, const float* values, int64_t dim, uint8_t* row) {
  const int64_t group = packed_group(role);
  uint8_t* scales = row + codes_bytes(role, dim);
  if (role == CacheRole::Compressed || role == CacheRole::IndexKey) std::fill(row, row + dim / 2, uint8_t{0});
  for (int64_t g = 0; g < dim / group; ++g) {
    const float* v = values + g * group;
    const float amax = group_amax(v, group);
    float scale = 1.0f;
    switch (role) {
      case CacheRole::Window:
        scales[g] = pow2_scale_byte(std::max(amax, kFp8AmaxFloor), kE4M3Max);
        scale = e8m0_to_f32(scales[g]);
        for (int64_t i = 0; i < group; ++i) row[g * group + i] = f32_to_e4m3(v[i] / scale);
        continue;
      case CacheRole::Compressed:
        scales[g] = f32_to_e4m3(std::max(amax, kFp4E4M3AmaxFloor) / kE2M1Max);
        scale = e4m3_to_f32(scales[g]);
        break;
      case CacheRole::IndexKey:
        scales[g] = pow2_scale_byte(std::max(amax, kFp4E8M0AmaxFloor), kE2M1Max);
        scale = e8m0_to_f32(scales[g]);
        break;
    }
    for (int64_t i = 0; i < group; ++i) {
      const int64_t d = g * group + i;
      row[d / 2] |= static_cast<uint8_t>(f32_to_e2m1(v[i] / scale) << (d % 2 ? 4 : 0));
    }
  }
}

void unpack_cache_row(CacheRole role, const uint8_t* row, int64_t dim, float* values) {
  const int64_t group = packed_group(role);
  const uint8_t* scales = row + codes_bytes(role, dim);
  for (int64_t d = 0; d < dim; ++d) {
    const uint8_t s = scales[d / group];
    if (role == CacheRole::Window) {
      values[d] = e4m3_to_f32(row[d]) * e8m0_to_f32(s);
      continue;
    }
    const float scale = role == CacheRole::Compressed ? e4m3_to_f32(s) : e8m0_to_f32(s);
    values[d] = e2m1_to_f32(static_cast<uint8_t>((row[d / 2] >> (d % 2 ? 4 : 0)) & 0xF)) * scale;
  }
}

void round_cache_row(CacheRole role, const float* values, int64_t dim, float* rounded) {
  std::vector<uint8_t> row(static_cast<size_t>(packed_row_bytes(role, dim)));
  pack_cache_row(role, values, dim, row.data());
  unpack_cache_row(role, row.data(), dim, rounded);
}

}  // namespace dsv41
