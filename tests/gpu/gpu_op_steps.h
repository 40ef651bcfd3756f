// tests/gpu/gpu_op_steps.h — the tight check of a product's bf16 output: how many bf16 steps the GPU
// is from the CPU in each element (issue 9: the bf16 pack's end-to-end drift).
#pragma once

#include <cstdint>
#include <string>

#include "common/dtype.h"
#include "tests/gpu/gpu_op_compare.h"

namespace dsv41::gpu_test {

// A product (linear, grouped_linear) rounds once, at its bf16 store, after an fp32 sum whose order
// alone differs from the CPU's: each element is then the CPU's bf16 or its neighbour, and neighbours
// are rare (the fp32 sums differ by a few fp32 ulps, a bf16 step is 2^16 of them). A second rounding,
// a truncation or a lost product would move many elements, or some by more than one step.
constexpr double kStepsAbs = 1e-4;         // |g−c| ≤ this·max|c| passes whatever the steps (cancellation)
constexpr double kStepsMaxDiffering = 0.02; // at most this fraction of elements one step off

struct Bf16Steps {
  int64_t n = 0;          // elements compared (NaN pairs left out)
  int64_t differ = 0;     // elements whose bf16 codes differ
  int64_t beyond = 0;     // elements more than one step apart and outside kStepsAbs·max|c|
  int64_t max_steps = 0;  // the largest distance in bf16 steps
};

// Per element of two BF16 buffers of n elements: the distance of their codes in bf16 steps.
Bf16Steps bf16_steps(const uint8_t* cpu, const uint8_t* gpu, int64_t n);

// Whether the op of a variant key ("op{...}") is a product whose bf16 outputs the tight check takes.
bool tight_bf16_op(const std::string& key);
// The experts' variants whose act (gate and up through SwiGLU) is rounded to bf16 on both sides.
bool rounds_act_to_bf16(const std::string& key);
// The dims of a variant's bf16 output rotated after a bf16 rounding (sparse_attention's inverse rope:
// head_dim and rope_dim from its key); none for every other variant.
RotatedDims rotated_after_rounding(const std::string& key);

// An F32 output measured in bf16 steps (issue 9's per-op diagnosis, DSV41_GPU_STEPS=1): per element
// |g − c| over the bf16 step at max(|c|, kStepsAbs·max|c|) (2^(e−8) for a value in [2^(e−1), 2^e)).
// Summation-order noise in fp32 is ~2^-16 of a step; a bf16 rounding that one side skips, or a
// rounded intermediate that flipped, shows as an element a sizeable fraction of a step off.
struct F32Steps {
  int64_t n = 0;            // elements compared (NaN pairs left out)
  int64_t sixteenth = 0;    // elements more than 1/16 step apart
  int64_t half = 0;         // elements more than half a step apart (as far as a bf16 rounding moves)
  double max_steps = 0;     // the largest distance (NaN against a number: infinity)
};
F32Steps f32_steps(const uint8_t* cpu, const uint8_t* gpu, int64_t n);

// One line of counts for an output of `dtype` (BF16: bf16_steps, F32: f32_steps; "" for others).
std::string steps_line(DType dtype, const uint8_t* cpu, const uint8_t* gpu, int64_t bytes);

// "" when `steps` is within the bounds above, else a report naming the counts and the bounds.
std::string steps_report(const std::string& what, const Bf16Steps& steps);

}  // namespace dsv41::gpu_test
