// tests/reference/reference_decode.h — the reference's own decoder of the stored formats, written from their
// definitions by assembling IEEE bits (common/numeric_formats.cpp computes them another way), so a
// decoding mistake shared by the implementation and the reference cannot pass both.
#pragma once

#include <cstdint>
#include <vector>

#include "common/tensor_inventory.h"

namespace dsv41::reference {

float decode_e4m3(uint8_t code);   // OFP8 E4M3: bias 7, S.1111.111 NaN, no infinities
float decode_e2m1(uint8_t code);   // MX E2M1, low 4 bits: bias 1, one mantissa bit
float decode_ue8m0(uint8_t code);  // MX E8M0: 2^(code - 127), 0xFF NaN

// A [rows, cols] tensor stored in `encoding` (plain: `plain_f32` picks F32 over BF16), as fp32.
// FP8 blocks: one scale per 32×32 tile; FP4 and FP8 rows: one scale per 32 of a row; FP4 packs
// element 2k in the low nibble of byte k.
std::vector<float> decode_tensor(Encoding encoding, bool plain_f32, const std::vector<uint8_t>& weight,
                                 const std::vector<uint8_t>& scale, int64_t rows, int64_t cols);

}  // namespace dsv41::reference
