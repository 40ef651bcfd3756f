// compiler/synth/synth_encode.h — encodes fp32 rows into a pack's stored bytes: bf16, f32, FP8 tiles/rows, FP4 rows.
#pragma once

#include <cstdint>
#include <vector>

#include "common/dtype.h"
#include "common/tensor_inventory.h"

namespace dsv41 {

// Appends the stored bytes of `rows` whole rows of `cols` values to `weight` and, for quantized
// encodings, their UE8M0 scales to `scale` (row-major over the scale tensor, so consecutive calls
// build the whole scale tensor). For FP8Block every call but the last must cover a multiple of 32
// rows, because one scale spans a 32x32 tile. `plain_dtype` (BF16 or F32) applies to Encoding::Plain.
// Bit-exact equals of f32_to_e4m3 and f32_to_e2m1 (common/numeric_formats.h) for finite inputs, an
// order of magnitude faster: the reference searches the code table, which made a tiny release pack
// take seconds. Tests compare them against the reference at every rounding boundary.
uint8_t fast_f32_to_e4m3(float value);
uint8_t fast_f32_to_e2m1(float value);

void encode_rows(Encoding encoding, DType plain_dtype, const float* values, int64_t rows, int64_t cols,
                 std::vector<uint8_t>& weight, std::vector<uint8_t>& scale);

}  // namespace dsv41
