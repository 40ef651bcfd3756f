// tests/gpu/gpu_op_compare.cpp — where an output lives in an image, and the comparison of the CPU
// and GPU bytes of one output within the tolerances of gpu_op_compare.h.
#include "tests/gpu/gpu_op_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "tests/gpu/gpu_op_values.h"

namespace dsv41::gpu_test {

const std::vector<uint8_t>& output_bytes(const Image& image, const Output& output) {
  return output.state ? image.state.at(output.index) : image.scratch.at(output.index);
}

DType output_dtype(const CallSite& site, const Output& output) {
  return output.state ? site.lists->state_buffers.at(output.index).dtype : site.phase->buffers.at(output.index).dtype;
}

std::vector<int64_t> output_shape(const CallSite& site, const CallInputs& inputs, const Output& output) {
  return output.state ? site.lists->state_buffers.at(output.index).shape : site.phase->buffers.at(output.index).shape;
}

std::string compare_output(const std::string& what, DType dtype, const std::vector<int64_t>& shape, const uint8_t* cpu,
                           const uint8_t* gpu, size_t bytes, size_t slot_stride, double f32_abs,
                           double packed_fraction, RotatedDims rotated) {
  const int size = dtype_bytes(dtype);
  const int64_t n = static_cast<int64_t>(bytes) / size;
  // Elements per row of the buffer (per cache entry for a state buffer) and per slot copy.
  const int64_t per_row = shape.size() > 1 ? std::max<int64_t>(1, numel_of(shape) / std::max<int64_t>(shape[0], 1)) : 1;
  const int64_t per_slot = static_cast<int64_t>(slot_stride) / size;
  std::string report;
  int64_t bad = 0;
  auto note = [&](int64_t i, const std::string& text) {
    if (++bad > 8) return;
    const int64_t in_slot = per_slot > 0 ? i % per_slot : i;
    const std::string slot = per_slot > 0 ? fmt::format("slot {}, ", i / per_slot) : "";
    report += fmt::format("\n    [{}] ({}row {}, col {}): {}", i, slot, in_slot / per_row, in_slot % per_row, text);
  };
  if (dtype == DType::I32) {
    for (int64_t i = 0; i < n; ++i) {
      int32_t c, g;
      std::memcpy(&c, cpu + 4 * i, 4);
      std::memcpy(&g, gpu + 4 * i, 4);
      if (c != g) note(i, fmt::format("cpu {} gpu {}", c, g));
    }
    if (bad == 0) return "";
    return fmt::format("{} (I32, must be identical): {} of {} values differ{}", what, bad, n, report);
  }
  if (dtype == kPackedCacheDType) {
    // Packed cache rows: the same bytes, except (packed_fraction) where an fp32 value the kernel
    // computed sits on a rounding boundary of its code or its group's scale.
    for (int64_t i = 0; i < n; ++i)
      if (cpu[i] != gpu[i]) note(i, fmt::format("cpu byte 0x{:02x} gpu 0x{:02x}", cpu[i], gpu[i]));
    const auto allowed = static_cast<int64_t>(packed_fraction * static_cast<double>(n));
    if (bad > 0) std::printf("       packed output %s: %lld of %lld bytes differ\n", what.c_str(), static_cast<long long>(bad),
                             static_cast<long long>(n));
    if (bad <= allowed) return "";
    return fmt::format("{} (packed cache rows, at most {} bytes may differ): {} of {} bytes differ{}", what, allowed,
                       bad, n, report);
  }
  const bool bf16 = dtype == DType::BF16;
  const double rel = bf16 ? kBf16Rel : kF32Rel, abs_part = bf16 ? kBf16Abs : f32_abs;
  auto abs_of = [&](int64_t i) {
    if (!bf16 || rotated.head_dim <= 0) return abs_part;
    const int64_t in_head = (i % per_row) % rotated.head_dim;
    return in_head >= rotated.head_dim - rotated.rope_dim ? kBf16AbsAfterRotation : abs_part;
  };
  double max_c = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float c = load(cpu, dtype, i);
    if (std::isfinite(c)) max_c = std::max(max_c, std::fabs(static_cast<double>(c)));
  }
  for (int64_t i = 0; i < n; ++i) {
    const float c = load(cpu, dtype, i), g = load(gpu, dtype, i);
    if (std::isnan(c) || std::isnan(g)) {
      if (std::isnan(c) != std::isnan(g)) note(i, fmt::format("cpu {} gpu {} (NaN matches only NaN; 0xFF poison is NaN)", c, g));
      continue;
    }
    if (c == g) continue;
    const double diff = std::fabs(static_cast<double>(g) - c);
    const double tol = rel * std::fabs(static_cast<double>(c)) + abs_of(i) * max_c;
    if (!(diff <= tol)) {
      note(i, fmt::format("cpu {:.8g} gpu {:.8g} |diff| {:.3g} > tol {:.3g}", c, g, diff, tol));
    }
  }
  if (bad == 0) return "";
  const std::string rotated_part =
      bf16 && rotated.head_dim > 0
          ? fmt::format(" ({} in the last {} dims of each {})", kBf16AbsAfterRotation, rotated.rope_dim, rotated.head_dim)
          : "";
  return fmt::format("{} ({}, tolerance |g-c| <= {}*|c| + {}{}*max|c|, max|c| = {:.6g}): {} of {} values outside{}",
                     what, dtype_name(dtype), rel, abs_part, rotated_part, max_c, bad, n, report);
}

}  // namespace dsv41::gpu_test
