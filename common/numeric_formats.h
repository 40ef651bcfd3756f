// common/numeric_formats.h — bf16, FP8 e4m3, UE8M0 and FP4 e2m1 conversions, and whole-tensor dequantization.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "common/tensor_inventory.h"

namespace dsv41 {

float bf16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);  // round to nearest, ties to even; NaN stays NaN
inline float bf16_round(float value) { return bf16_to_f32(f32_to_bf16(value)); }

constexpr float kE4M3Max = 448.0f;
constexpr float kE2M1Max = 6.0f;
float e4m3_to_f32(uint8_t bits);
uint8_t f32_to_e4m3(float value);  // nearest, ties to even, saturating at ±448
float e2m1_to_f32(uint8_t nibble); // bit 3 is the sign; magnitudes {0, .5, 1, 1.5, 2, 3, 4, 6}
uint8_t f32_to_e2m1(float value);  // nearest, ties to even, saturating at ±6
float e8m0_to_f32(uint8_t bits);   // 2^(bits - 127); 0xFF is NaN
// The smallest power-of-two scale (as a UE8M0 byte) with amax / scale <= max_code.
uint8_t e8m0_for_amax(float amax, float max_code);

// Dequantizes a [rows, cols] (logical) tensor held in `encoding` into fp32. `weight` and `scale`
// are the stored bytes of exactly those rows and columns (a rank's slice is itself such a tensor,
// because splits fall on 32-aligned boundaries). `plain_dtype` applies to Encoding::Plain.
void dequantize(Encoding encoding, DType plain_dtype, const uint8_t* weight, const uint8_t* scale, int64_t rows,
                int64_t cols, float* out);

}  // namespace dsv41
