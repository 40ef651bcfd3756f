// runtime/cpu/ops_draft.h — private to the CPU backend: the DSpark ops (docs/ops.md "DSpark") and the attention core they share with sparse_attention.
#pragma once

#include <cstdint>

#include "runtime/cpu/op_context.h"

namespace dsv41::cpu {

Status op_stream_mean(const OpContext& ctx);
Status op_block_attention(const OpContext& ctx);
Status op_markov_logits(const OpContext& ctx);
Status op_markov_pick(const OpContext& ctx);

// The arguments of an attention op (sparse_attention, block_attention), checked: the constants heads,
// head_dim and window, the statics, q (F32 after its rope; act when `q_before_rope`: sparse_attention
// rotates it), kv and out (one act dtype), sink and scale.
struct AttentionArgs {
  int64_t heads = 0, dh = 0, window = 0;
  TensorView q, kv, out;
  const float* sink = nullptr;
  float scale = 0.0f;
};
Result<AttentionArgs> attention_args(const OpContext& ctx, bool q_before_rope = false);

// Attention of `heads` query heads (q: heads·dh) over `count` key rows (keys = values, count·dh) with a
// per-head sink, into out (heads·dh, unrounded): docs/model.md §6.4, the keys in the order given.
void attend(const float* q, const float* keys, int64_t count, int64_t heads, int64_t dh, const float* sink, float scale,
            float* out);

}  // namespace dsv41::cpu
