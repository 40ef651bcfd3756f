// tests/gpu/gpu_op_compare.h — the comparison of every buffer an op writes, CPU against GPU: where an
// output lives in an image, its dtype and shape, and the tolerances.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/gpu/gpu_op_inputs.h"

namespace dsv41::gpu_test {

// Tolerances (docs/ops.md: products accumulate in fp32; act stores round to bf16):
//   BF16 output: |g − c| ≤ 2e-2·|c| + 1e-3·max|c|
//   F32 output:  |g − c| ≤ 1e-3·|c| + 1e-4·max|c|
//   I32 output (ids, selections, candidates): identical
// max|c| is over the whole compared buffer; NaN matches only NaN.
constexpr double kBf16Rel = 2e-2, kBf16Abs = 1e-3, kF32Rel = 1e-3, kF32Abs = 1e-4;
// An F32 output summed from intermediates that both sides round to bf16 (the experts' act in bf16
// mode): the GPU forms g and u in another fp32 order than the CPU, so now and then an act rounds to the
// neighbouring bf16 value (2^-8 relative) and moves its term of the down projection; seen on the H200:
// 1.1e-4·max|c| once in 4096 values. The absolute part is 10x kF32Abs for those outputs.
constexpr double kF32AbsAfterBf16Act = 1e-3;
// A BF16 output rotated after a bf16 rounding (sparse_attention with rope_dim > 0: the inverse rope of its
// store rounds the attention output, rotates the pair, rounds again, as the separate rope op did): when the
// two sides round a pre-rotation value to neighbouring bf16 values (2^-8 relative), the rotation's
// cancellation can leave that step on an output near zero; seen on the H200: 1.1e-3·max|c| once in 1.6M
// values. The absolute part of the rotated dims (the last rope_dim of each head) is then one bf16 step of a
// pair at max|c| each, 2·2^-8; the other dims keep kBf16Abs.
constexpr double kBf16AbsAfterRotation = 2.0 / 256;
struct RotatedDims {        // the dims of a BF16 output rotated after a bf16 rounding; none while head_dim is 0
  int64_t head_dim = 0;     // a row is heads × head_dim
  int64_t rope_dim = 0;     // the last rope_dim of each head
};

// Compares one output; "" when it matches, else a report of the first mismatches (element, slot
// when `slot_stride` (bytes between slot copies of a state buffer) is given, row and column).
// `f32_abs` is the absolute part for F32 outputs (kF32Abs, or kF32AbsAfterBf16Act); BF16 outputs take
// kBf16Abs, or kBf16AbsAfterRotation in their `rotated` dims. Packed cache
// rows (U8) must be the same bytes, except at most `packed_fraction` of them (a value on a rounding
// boundary of its code or scale; the count of differing bytes is printed whenever it is not 0).
constexpr double kPackedFraction = 1.0 / 200;
std::string compare_output(const std::string& what, DType dtype, const std::vector<int64_t>& shape,
                           const uint8_t* cpu, const uint8_t* gpu, size_t bytes, size_t slot_stride = 0,
                           double f32_abs = kF32Abs, double packed_fraction = 0, RotatedDims rotated = {});

// The bytes of an output in an image.
const std::vector<uint8_t>& output_bytes(const Image& image, const Output& output);
// Its dtype and shape (the state's per-slot shape).
DType output_dtype(const CallSite& site, const Output& output);
std::vector<int64_t> output_shape(const CallSite& site, const CallInputs& inputs, const Output& output);

}  // namespace dsv41::gpu_test
