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
};

class PhaseEmitter {
 public:
  PhaseEmitter(const EmitInputs& inputs, PhaseKind kind, int64_t rows);
  Phase emit();

 private:
  int buffer(const std::string& name, DType dtype, std::vector<int64_t> row_shape);
  int weight(const std::string& name) const;
  int state(const std::string& name) const;
  void add(CallBuilder& builder) { phase_.calls.push_back(builder.finish()); }
  CallBuilder& with_rope(CallBuilder& b, int layer);

  void emit_attention(int layer);
  void emit_query_and_window(const std::string& p, int layer);
  void emit_compressor(const std::string& p, int layer);
  void emit_indexer(const std::string& p, int layer);
  void emit_attention_output(const std::string& p, int layer);
  void emit_ffn(int layer);
  void emit_engram_hash();
  void emit_engram(int layer);
  void emit_head();
  // A sublayer's mHC front ("attn" or "ffn"): its mix into mix.<sublayer>, then the streams collapsed
  // with the previous sublayer's pre and normed into x.norm. Returns the mix buffer.
  int emit_hc_front(const std::string& p, const std::string& sublayer, const std::string& previous);
  void emit_hc_post(int mix);

  const EmitInputs& in_;
  Phase phase_;
  std::unordered_map<std::string, int> buffer_index_;
  int x_ = -1, x_next_ = -1;  // the streams ping-pong between two buffers
};

}  // namespace dsv41
