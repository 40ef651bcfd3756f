// tests/runtime/cpu_ops_math.h — what the CPU op tests share beside the fake context: the bf16 tolerance and a
// double-precision sigmoid for the formulas they evaluate directly.
#pragma once

#include <cmath>

namespace dsv41::cpu::testing {

// One bf16 step (2^-8 relative) is the most a correctly rounded store can differ from an exact value
// when both sides round independently; tolerances below allow two.
inline constexpr double kBf16Rel = 1.0 / 128;

inline double sigmoid_d(double v) { return 1.0 / (1.0 + std::exp(-v)); }

}  // namespace dsv41::cpu::testing
