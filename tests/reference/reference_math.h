// tests/reference/reference_math.h — the small numeric pieces of docs/model.md §3: bf16 rounding, products, RMSNorm, RoPE.
#pragma once

#include <cstdint>
#include <vector>

#include "common/model_config.h"

namespace dsv41::reference {

// A dequantized [rows, cols] weight, row-major fp32.
struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> v;
  const float* row(int64_t r) const { return v.data() + r * cols; }
};

using Vec = std::vector<float>;

// What b(v) of docs/model.md §2 does on this thread: round to the nearest bf16 (ties to even), or
// nothing (the fp32 check mode of docs/model.md §2, used to compare implementations end to end).
enum class Rounding : uint8_t { BF16, None };

// Sets the rounding of bf() on this thread for its lifetime.
class RoundingScope {
 public:
  explicit RoundingScope(Rounding rounding);
  ~RoundingScope();
  RoundingScope(const RoundingScope&) = delete;
  RoundingScope& operator=(const RoundingScope&) = delete;

 private:
  Rounding saved_;
};

// This thread's current Rounding.
Rounding current_rounding_mode();

// b(v): v rounded as the current Rounding says, read back as fp32.
float bf(float value);
void bf_inplace(Vec& values);

// y[o] = Σ_i A[row0 + o][i]·x[i] for o < rows (fp32 accumulation); x has A.cols values.
Vec matvec(const Matrix& a, const float* x, int64_t row0 = 0, int64_t rows = -1);
inline Vec matvec(const Matrix& a, const Vec& x) { return matvec(a, x.data()); }
float dot(const float* a, const float* b, int64_t n);

// RMSNorm(v, w) rounded to bf16 (docs/model.md §3).
Vec rms_norm(const float* v, const Vec& weight, double eps);
inline Vec rms_norm(const Vec& v, const Vec& weight, double eps) { return rms_norm(v.data(), weight, eps); }

float sigmoid(float v);
float silu(float v);
float softplus(float v);

// The rotary frequencies of one layer ratio (0: rope_theta; >0: compress_rope_theta with YaRN).
class Rope {
 public:
  Rope() = default;
  Rope(const ModelConfig& config, int ratio);
  // Rotates the last `freqs().size() * 2` dims of v[0..width) at position p (inverse: by -θ).
  void apply(float* v, int64_t width, int64_t position, bool inverse = false) const;
  const std::vector<double>& freqs() const { return freqs_; }
  // The YaRN ramp bounds (lo, hi) used, or (-1, -1) without YaRN; for tests.
  double ramp_lo() const { return lo_; }
  double ramp_hi() const { return hi_; }

 private:
  std::vector<double> freqs_;
  double lo_ = -1, hi_ = -1;
};

}  // namespace dsv41::reference
