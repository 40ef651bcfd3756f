// kernels/cache_rows.cuh — cache rows packed in the official format (DT_PACKED state buffers): the
// same bits as common/cache_format.cpp. A window row is Dh e4m3 codes then Dh/32 UE8M0 scales; a
// compressed row Dh/2 bytes of e2m1 (low nibble first) then Dh/16 E4M3 scales; an index key Di/2 bytes
// of e2m1 then Di/32 UE8M0 scales. Scales: UE8M0 2^e, the least e with amax <= max_code·2^e (amax
// floored at 1e-4 for FP8, 6·2^-126 for FP4); E4M3 = e4m3(max(amax, 6·2^-9)/6). Codes: nearest, ties
// to even, saturating.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {

enum : int { CACHE_WINDOW = 0, CACHE_COMPRESSED = 1, CACHE_INDEX_KEY = 2 };  // common/cache_format.h CacheRole

#ifndef DSV41_CONTRACT_SCAN
namespace cache_rows {

template <int ROLE>
__device__ constexpr int group() { return ROLE == CACHE_COMPRESSED ? 16 : 32; }
template <int ROLE>
__device__ constexpr long long codes_bytes(long long dim) { return ROLE == CACHE_WINDOW ? dim : dim / 2; }
template <int ROLE>
__device__ constexpr long long row_bytes(long long dim) { return codes_bytes<ROLE>(dim) + dim / group<ROLE>(); }

// e4m3 code of v: nearest, ties to even (the step's parity is the code's), saturating at ±448.
__device__ __forceinline__ unsigned float_to_e4m3(float v) {
  const unsigned sign = (__float_as_uint(v) >> 24) & 0x80u;
  const float m = fminf(fabsf(v), 448.0f);
  const int b = m >= 0x1p-6f ? ilogbf(m) : -6;                     // the binade (subnormals: -6)
  const float step = __uint_as_float(static_cast<unsigned>(b - 3 + 127) << 23);
  const unsigned k = static_cast<unsigned>(rintf(__fdiv_rn(m, step)));  // 8..16 (0..8 subnormal)
  return sign | (static_cast<unsigned>((b + 7) << 3) + k - 8u);
}
// e2m1 nibble of v: {0, .5, 1, 1.5, 2, 3, 4, 6}, nearest, ties to even, saturating at ±6.
__device__ __forceinline__ unsigned float_to_e2m1(float v) {
  const unsigned sign = (__float_as_uint(v) >> 28) & 0x8u;
  const float m = fminf(fabsf(v), 6.0f);
  const float step = m < 2.0f ? 0.5f : (m < 4.0f ? 1.0f : 2.0f);
  const unsigned k = static_cast<unsigned>(rintf(__fdiv_rn(m, step)));
  return sign | (m < 2.0f ? k : (m < 4.0f ? k + 2u : k + 4u));
}
// UE8M0 byte of the least 2^e with amax <= max_code·2^e (max_code = mantissa·2^exp, mantissa in [0.5, 1)).
__device__ __forceinline__ unsigned pow2_scale_byte(float amax, float max_mantissa, int max_exp) {
  int amax_exp = 0;
  const float amax_mantissa = frexpf(amax, &amax_exp);
  int e = amax_exp - max_exp + (amax_mantissa > max_mantissa ? 1 : 0);
  e = e < -127 ? -127 : (e > 127 ? 127 : e);
  return static_cast<unsigned>(e + 127);
}

// The scale byte of one group from its amax, and the scale it decodes to.
template <int ROLE>
__device__ __forceinline__ unsigned scale_byte(float amax) {
  if constexpr (ROLE == CACHE_WINDOW) return pow2_scale_byte(fmaxf(amax, 1e-4f), 0.875f, 9);             // 448
  else if constexpr (ROLE == CACHE_COMPRESSED) return float_to_e4m3(__fdiv_rn(fmaxf(amax, 6.0f * 0x1p-9f), 6.0f));
  else return pow2_scale_byte(fmaxf(amax, 6.0f * 0x1p-126f), 0.75f, 3);                                 // 6
}
template <int ROLE>
__device__ __forceinline__ float scale_value(unsigned byte) {
  if constexpr (ROLE == CACHE_COMPRESSED) return e4m3_to_float(byte);
  else return e8m0_to_float(byte);
}

// Value i of a packed row, dequantized (code × scale, as the CPU's unpack).
template <int ROLE>
__device__ __forceinline__ float value(const char* row, long long i, long long dim) {
  const unsigned char* b = reinterpret_cast<const unsigned char*>(row);
  const float scale = scale_value<ROLE>(b[codes_bytes<ROLE>(dim) + i / group<ROLE>()]);
  if constexpr (ROLE == CACHE_WINDOW) return __fmul_rn(e4m3_to_float(b[i]), scale);
  else return __fmul_rn(e2m1_to_float((i & 1) ? b[i >> 1] >> 4 : b[i >> 1] & 15u), scale);
}

// Packs group g of a row whose value i is get(i) (dim values) into `row`; one thread per group.
template <int ROLE, class Get>
__device__ __forceinline__ void pack_group(Get get, long long g, long long dim, char* row) {
  constexpr int G = group<ROLE>();
  unsigned char* b = reinterpret_cast<unsigned char*>(row);
  const long long i0 = g * G;
  float amax = 0.0f;
  for (int i = 0; i < G; ++i) amax = fmaxf(amax, fabsf(get(i0 + i)));
  const unsigned s = scale_byte<ROLE>(amax);
  b[codes_bytes<ROLE>(dim) + g] = static_cast<unsigned char>(s);
  const float scale = scale_value<ROLE>(s);
  if constexpr (ROLE == CACHE_WINDOW) {
    for (int i = 0; i < G; ++i) b[i0 + i] = static_cast<unsigned char>(float_to_e4m3(__fdiv_rn(get(i0 + i), scale)));
  } else {
    for (int i = 0; i < G; i += 2)
      b[(i0 + i) / 2] = static_cast<unsigned char>(float_to_e2m1(__fdiv_rn(get(i0 + i), scale)) |
                                                   (float_to_e2m1(__fdiv_rn(get(i0 + i + 1), scale)) << 4));
  }
}
// Packs a whole row with the block's threads (a thread per group); the caller synchronises.
template <int ROLE, class Get>
__device__ __forceinline__ void pack_row(Get get, long long dim, char* row) {
  for (long long g = threadIdx.x; g < dim / group<ROLE>(); g += blockDim.x) pack_group<ROLE>(get, g, dim, row);
}

// Value i of an activation row of DT rounded through a window row's FP8 format (what the ring will
// hold): the group's amax read from the row, then code and scale, as pack_group then value.
template <int DT>
__device__ __forceinline__ float window_rounded(const void* act_row, long long i) {
  const long long g0 = i & ~31ll;
  float amax = 0.0f;
  for (int k = 0; k < 32; ++k) amax = fmaxf(amax, fabsf(load<DT>(act_row, g0 + k)));
  const float scale = e8m0_to_float(scale_byte<CACHE_WINDOW>(amax));
  return __fmul_rn(e4m3_to_float(float_to_e4m3(__fdiv_rn(load<DT>(act_row, i), scale))), scale);
}

}  // namespace cache_rows
#endif  // DSV41_CONTRACT_SCAN

}  // namespace dsv41k
