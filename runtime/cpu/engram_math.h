// runtime/cpu/engram_math.h — Engram's row fetch (FP8 rows, a scale per 32) and per-stream gate, in reference form.
#pragma once

#include <cstdint>
#include <span>

#include "common/status.h"

namespace dsv41::cpu {

// One Engram table as stored: e4m3 codes [rows, dim] and UE8M0 scales [rows, dim/32].
struct EngramTable {
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
  int64_t rows = 0, dim = 0;
  int64_t layer = 0;  // for messages
};

// out[t, col, :] = bf16(e4m3(code)·2^(scale−127)) of row ids[t·columns + col]. A row id outside
// [0, rows) is an error naming the layer, the position, the column, the id and the table size.
Status engram_fetch_rows(const EngramTable& table, std::span<const int64_t> ids, int64_t columns, float* out);

// The gate of one token on every stream (docs/model.md "Engram"): x [streams, d] is updated in place,
// kv [(streams + 1)·d] holds the streams' keys then the value, q_weight and k_weight [streams, d].
// dot_i = Σ h·(q⊙k)·key_i · rsqrt(mean h² + eps) · rsqrt(mean key_i² + eps) / sqrt(d);
// g_i = sigmoid(sign(dot_i)·sqrt(max(|dot_i|, 1e-6))); x_i ← h + g_i·value, rounded to bf16 when asked.
void engram_gate(float* x, int64_t streams, int64_t d, const float* kv, const float* q_weight, const float* k_weight,
                 float eps, bool round_bf16);

}  // namespace dsv41::cpu
