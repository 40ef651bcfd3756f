// runtime/cpu/engram_math.cpp — Engram row fetch and gate in straightforward fp32 (the CPU oracle's form).
#include "runtime/cpu/engram_math.h"

#include <cmath>

#include <fmt/format.h>

#include "common/engram_hash.h"
#include "common/numeric_formats.h"

namespace dsv41::cpu {

Status engram_fetch_rows(const EngramTable& table, std::span<const int64_t> ids, int64_t columns, float* out) {
  constexpr int64_t kGroup = 32;  // one UE8M0 scale per 32 values of a row
  if (table.dim % kGroup != 0)
    return Status::errorf("Engram layer {}: row width {} is not a multiple of {}", table.layer, table.dim, kGroup);
  if (columns <= 0 || static_cast<int64_t>(ids.size()) % columns != 0)
    return Status::errorf("Engram layer {}: {} row ids are not whole positions of {} columns", table.layer, ids.size(),
                          columns);
  const int64_t groups = table.dim / kGroup;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t row = ids[i];
    if (row < 0 || row >= table.rows)
      return engram_row_outside(table.layer, static_cast<int64_t>(i) / columns, static_cast<int64_t>(i) % columns, row,
                                table.rows);
    const uint8_t* codes = table.codes + row * table.dim;
    const uint8_t* scales = table.scales + row * groups;
    float* dst = out + static_cast<int64_t>(i) * table.dim;
    for (int64_t k = 0; k < table.dim; ++k)
      dst[k] = bf16_round(e4m3_to_f32(codes[k]) * e8m0_to_f32(scales[k / kGroup]));
  }
  return Status::ok();
}

void engram_gate(float* x, int64_t streams, int64_t d, const float* kv, const float* q_weight, const float* k_weight,
                 float eps, bool round_bf16) {
  const float* value = kv + streams * d;
  const float inv_sqrt_d = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t s = 0; s < streams; ++s) {
    float* h = x + s * d;
    const float* key = kv + s * d;
    float hh = 0.0f, kk = 0.0f, dot = 0.0f;
    for (int64_t i = 0; i < d; ++i) {
      hh += h[i] * h[i];
      kk += key[i] * key[i];
      dot += h[i] * q_weight[s * d + i] * k_weight[s * d + i] * key[i];
    }
    dot *= (1.0f / std::sqrt(hh / static_cast<float>(d) + eps)) * (1.0f / std::sqrt(kk / static_cast<float>(d) + eps)) *
           inv_sqrt_d;
    // sign(0) is 0 (as torch.sign), so an exactly orthogonal key gates at 0.5, not sigmoid(±1e-3).
    const float sign = dot > 0.0f ? 1.0f : (dot < 0.0f ? -1.0f : 0.0f);
    const float signed_root = sign * std::sqrt(std::max(std::fabs(dot), 1e-6f));
    const float g = 1.0f / (1.0f + std::exp(-signed_root));
    for (int64_t i = 0; i < d; ++i) {
      const float y = h[i] + g * value[i];
      h[i] = round_bf16 ? bf16_round(y) : y;
    }
  }
}

}  // namespace dsv41::cpu
