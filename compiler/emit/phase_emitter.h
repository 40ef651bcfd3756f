// compiler/emit/phase_emitter.h — writes one phase's call list: the whole forward of one rank for R rows.
#pragma once

#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/call_list.h"
#include "common/engram_hash.h"
#include "common/model_config.h"
#include "common/rank_share.h"
#include "compiler/plan/state_layout.h"
#include "compiler/plan/weight_plan.h"

namespace dsv41 {

// Builds one call, checked against the op set when finished.
class CallBuilder {
 public:
  explicit CallBuilder(std::string op) { call_.op = std::move(op); }
  CallBuilder& k(std::string name, int64_t value);
  CallBuilder& scratch(std::string name, int index);
  CallBuilder& state(std::string name, int index);
  CallBuilder& statics();
  CallBuilder& weight(std::string name, int index);
  CallBuilder& weights(std::string name, std::vector<int64_t> indices);
  CallBuilder& integer(std::string name, int64_t value);
  CallBuilder& real(std::string name, double value);
  CallBuilder& integers(std::string name, std::vector<int64_t> values);
  Call finish();

 private:
  Call call_;
};

struct EmitInputs {
  const ModelConfig& config;
  const RankShare& share;
  const WeightPlan& weights;
  const StateLayout& state;
  std::vector<int64_t> vocab_widths;  // every rank's vocabulary rows, for the logits gather
  std::unordered_map<std::string, int> weight_index;  // tensor name -> index in weights.tensors
  DType activations = DType::BF16;  // what the model's bf16 values are stored as (F32: check mode)
  std::vector<EngramLayerHash> engram;       // one per engram_layer_ids entry, in that order
  std::span<const int32_t> engram_token_map;  // empty: not built (no tokenizer.json)
  // DSpark: the target's phases tap their streams into the draft blocks' context rings, and Draft
  // phases run the draft blocks (phase_emitter_draft.cpp).
  bool dspark = false;
};

class PhaseEmitter {
 public:
  // `draft`: a DSpark Draft phase "draft.rN" (kind Decode: a window of rows with no prefill role).
  PhaseEmitter(const EmitInputs& inputs, PhaseKind kind, int64_t rows, bool draft = false);
  Phase emit();

 private:
  int buffer(const std::string& name, DType dtype, std::vector<int64_t> row_shape);
  int weight(const std::string& name) const;
  int state(const std::string& name) const;
  void add(CallBuilder& builder) { phase_.calls.push_back(builder.finish()); }
  CallBuilder& with_rope(CallBuilder& b, int layer);

  void emit_attention(int layer);
  // The streams' buffers, the embedding into all of them and the one-hot first pre.
  void emit_embed();
  // q.heads.bf16 = RMSNorm(x.norm·wq_aᵀ, q_norm)·wq_bᵀ of `p`'s attention, before its rope (sparse_attention
  // rotates q itself; block_attention reads it rotated by emit_rope); returns "q.heads.bf16".
  int emit_query(const std::string& p, int layer);
  // The window row kv = rope(RMSNorm(x·wkvᵀ, kv_norm)) of `p`'s attention from buffer `x`; returns "kv".
  int emit_window_kv(const std::string& p, int layer, int x);
  void emit_compressor(const std::string& p, int layer);
  void emit_indexer(const std::string& p, int layer);
  void emit_attention_output(const std::string& p, int layer);
  // RoPE (inverse 1: by −θ) of `heads` heads of `head_dim` dims from buffer `x` into `out` (may be `x`):
  // the indexer's q, and block_attention's q and output (sparse_attention rotates its own).
  void emit_rope(int layer, int64_t heads, int64_t head_dim, int x, int out, int inverse);
  // wo_a, wo_b and the exchange into `sub`: the end of every attention sublayer.
  void emit_attention_projection(const std::string& p, int layer, int out);
  // `layer` counts the draft blocks on from num_hidden_layers (the release's logical ids 40-42).
  void emit_ffn(int layer);
  std::string block_prefix(int layer) const;
  bool is_draft_block(int layer) const { return layer >= in_.config.num_hidden_layers; }
  // DSpark (phase_emitter_draft.cpp): a tap at the input of a target layer, the context rows of every
  // draft block after the target's layers, and the whole forward of a Draft phase.
  void emit_tap(int layer);
  void emit_draft_context();
  void emit_draft();
  void emit_draft_attention(int layer);
  void emit_engram_hash();
  void emit_engram(int layer);
  void emit_head(const std::string& norm, const std::string& logits);
  // A sublayer's mHC front ("attn" or "ffn"): the streams collapsed with the previous sublayer's pre and
  // normed into x.norm (hc_collapse_norm), then its mix into mix.<sublayer> (hc_mix). Returns the mix buffer.
  int emit_hc_collapse_and_mix(const std::string& p, const std::string& sublayer, const std::string& previous);
  void emit_hc_post(int mix);

  const EmitInputs& in_;
  Phase phase_;
  std::unordered_map<std::string, int> buffer_index_;
  int x_ = -1, x_next_ = -1;  // the streams ping-pong between two buffers
  bool draft_ = false;
};

}  // namespace dsv41
