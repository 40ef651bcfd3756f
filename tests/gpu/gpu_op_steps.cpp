// tests/gpu/gpu_op_steps.cpp — bf16 step distances between the CPU's and the GPU's output of a product.
#include "tests/gpu/gpu_op_steps.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "common/numeric_formats.h"

namespace dsv41::gpu_test {
namespace {

// A bf16 code on a line where neighbouring values are neighbouring integers (−0 and +0 both 0).
int64_t ordered(uint16_t code) {
  const int64_t magnitude = code & 0x7FFF;
  return (code & 0x8000) ? -magnitude : magnitude;
}

uint16_t code_at(const uint8_t* bytes, int64_t i) {
  uint16_t c;
  std::memcpy(&c, bytes + 2 * i, 2);
  return c;
}

}  // namespace

Bf16Steps bf16_steps(const uint8_t* cpu, const uint8_t* gpu, int64_t n) {
  double max_c = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float c = bf16_to_f32(code_at(cpu, i));
    if (std::isfinite(c)) max_c = std::max(max_c, std::fabs(static_cast<double>(c)));
  }
  Bf16Steps s;
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t cc = code_at(cpu, i), gc = code_at(gpu, i);
    const float c = bf16_to_f32(cc), g = bf16_to_f32(gc);
    if (std::isnan(c) && std::isnan(g)) continue;
    ++s.n;
    if (std::isnan(c) || std::isnan(g)) {  // NaN matches only NaN: as far apart as it gets
      ++s.differ, ++s.beyond;
      s.max_steps = std::max<int64_t>(s.max_steps, 0x10000);
      continue;
    }
    const int64_t steps = std::llabs(ordered(cc) - ordered(gc));
    if (steps == 0) continue;
    ++s.differ;
    s.max_steps = std::max(s.max_steps, steps);
    if (steps > 1 && !(std::fabs(static_cast<double>(g) - c) <= kStepsAbs * max_c)) ++s.beyond;
  }
  return s;
}

F32Steps f32_steps(const uint8_t* cpu, const uint8_t* gpu, int64_t n) {
  auto at = [](const uint8_t* bytes, int64_t i) {
    float v;
    std::memcpy(&v, bytes + 4 * i, 4);
    return v;
  };
  double max_c = 0.0;
  for (int64_t i = 0; i < n; ++i)
    if (const float c = at(cpu, i); std::isfinite(c)) max_c = std::max(max_c, std::fabs(static_cast<double>(c)));
  F32Steps s;
  for (int64_t i = 0; i < n; ++i) {
    const float c = at(cpu, i), g = at(gpu, i);
    if (std::isnan(c) && std::isnan(g)) continue;
    ++s.n;
    double steps = INFINITY;
    if (!std::isnan(c) && !std::isnan(g)) {
      int e = 0;
      std::frexp(std::max(std::fabs(static_cast<double>(c)), kStepsAbs * max_c), &e);
      const double diff = std::fabs(static_cast<double>(g) - c);
      steps = diff == 0.0 ? 0.0 : diff / std::ldexp(1.0, e - 8);
    }
    s.sixteenth += steps > 1.0 / 16;
    s.half += steps > 0.5;
    s.max_steps = std::max(s.max_steps, steps);
  }
  return s;
}

std::string steps_line(DType dtype, const uint8_t* cpu, const uint8_t* gpu, int64_t bytes) {
  if (dtype == DType::BF16) {
    const Bf16Steps s = bf16_steps(cpu, gpu, bytes / 2);
    return fmt::format("bf16 n {} differ {} beyond1 {} max {}", s.n, s.differ, s.beyond, s.max_steps);
  }
  if (dtype == DType::F32) {
    const F32Steps s = f32_steps(cpu, gpu, bytes / 4);
    return fmt::format("f32 n {} over1/16 {} over1/2 {} max {:.4g}", s.n, s.sixteenth, s.half, s.max_steps);
  }
  return "";
}

bool tight_bf16_op(const std::string& key) { return key.rfind("linear{", 0) == 0 || key.rfind("grouped_linear{", 0) == 0; }

bool rounds_act_to_bf16(const std::string& key) {
  const bool experts = key.rfind("moe_experts{", 0) == 0 || key.rfind("shared_expert{", 0) == 0;
  return experts && key.find("dtype_x=bf16") != std::string::npos;
}

RotatedDims rotated_after_rounding(const std::string& key) {
  if (key.rfind("sparse_attention{", 0) != 0 || key.find("dtype_out=bf16") == std::string::npos) return {};
  auto constant = [&](const std::string& name) -> int64_t {
    const size_t at = key.find("," + name + "=") != std::string::npos ? key.find("," + name + "=") + 1
                                                                      : key.find("{" + name + "=") + 1;
    return at == 0 ? 0 : std::stoll(key.substr(at + name.size() + 1));
  };
  const RotatedDims dims{constant("head_dim"), constant("rope_dim")};
  return dims.rope_dim > 0 ? dims : RotatedDims{};
}

std::string steps_report(const std::string& what, const Bf16Steps& s) {
  const bool too_many = static_cast<double>(s.differ) > kStepsMaxDiffering * static_cast<double>(s.n);
  if (s.beyond == 0 && !too_many) return "";
  return fmt::format(
      "{} (BF16, tight: every element within 1 bf16 step of the CPU or |g-c| <= {}*max|c|, at most {} of them "
      "off): {} of {} elements differ, {} by more than 1 step (max {} steps)",
      what, kStepsAbs, kStepsMaxDiffering, s.differ, s.n, s.beyond, s.max_steps);
}

}  // namespace dsv41::gpu_test
