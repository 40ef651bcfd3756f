// common/model_config.h — the validated config.json of a DeepSeek-V4.1 model and its derived constants.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace dsv41 {

constexpr int64_t kColumnBlock = 128;  // experts and vocabulary split in whole blocks of this width
constexpr int64_t kScaleBlock = 32;    // FP8/FP4 scale granularity (UE8M0 per 32 values)

struct RopeScaling {
  std::string type;  // "yarn" or "" (none)
  double factor = 1.0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  int64_t original_max_position_embeddings = 0;
};

// What a layer does, decided by the config alone (no layer number is hard-coded).
struct LayerRole {
  int ratio = 0;                // compress_ratios[L]; 0 = window only
  bool kv_source = false;       // owns a compressor, a compressed cache and index keys
  bool index_source = false;    // runs its own indexer
  bool candidate_source = false;
  bool candidate_masked = false;  // index source masked to the candidate source's blocks
  bool engram = false;
  int kv_layer = -1;     // the layer whose compressed cache this layer reads (-1: none)
  int index_layer = -1;  // the layer whose top-k this layer uses (-1: none)
};

struct ModelConfig {
  // Sizes.
  int64_t vocab_size = 0, hidden_size = 0, num_hidden_layers = 0;
  int64_t num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0, qk_rope_head_dim = 0;
  int64_t q_lora_rank = 0, o_lora_rank = 0, o_groups = 0;
  // MoE.
  int64_t n_routed_experts = 0, num_experts_per_tok = 0, n_shared_experts = 0;
  int64_t moe_intermediate_size = 0;
  double routed_scaling_factor = 1.0, swiglu_limit = 0.0;
  bool norm_topk_prob = true;
  std::string scoring_func;
  // Norms, positions.
  double rms_norm_eps = 0.0, rope_theta = 0.0, compress_rope_theta = 0.0;
  RopeScaling rope_scaling;
  int64_t max_position_embeddings = 0;
  // Attention layout.
  int64_t sliding_window = 0;
  std::vector<int64_t> compress_ratios;
  std::vector<int64_t> kv_source_layer_ids, index_source_layer_ids;
  int64_t index_n_heads = 0, index_head_dim = 0, index_topk = 0;
  int64_t candidate_source_layer_id = -1, candidate_topk_blocks = 0, candidate_block_size = 0;
  // Hyper-connections.
  int64_t hc_mult = 0, hc_sinkhorn_iters = 0;
  double hc_eps = 0.0;
  // Engram (empty engram_layer_ids: none).
  std::vector<int64_t> engram_layer_ids, engram_num_embeddings;
  int64_t engram_max_ngram_size = 0, engram_n_heads = 0, engram_head_dim = 0;
  int64_t engram_vocab_size = 0, engram_compressed_vocab_size = 0, engram_pad_token_id = 0;
  // DSpark (num_nextn_predict_layers 0: none).
  int64_t num_nextn_predict_layers = 0, dspark_block_size = 0, dspark_noise_token_id = 0;
  std::vector<int64_t> dspark_target_layer_ids;
  int64_t dspark_markov_rank = 0, dspark_n_routed_experts = 0, dspark_num_experts_per_tok = 0;
  // Tokens.
  int64_t bos_token_id = 0, eos_token_id = 1, pad_token_id = 2;

  // Derived by validation.
  std::vector<LayerRole> layers;  // num_hidden_layers entries
  int64_t heads_per_group = 0;    // num_attention_heads / o_groups
  int64_t group_width = 0;        // heads_per_group * head_dim: wo_a inputs per group
  int64_t nope_head_dim = 0;      // head_dim - qk_rope_head_dim
  int64_t mix_hc = 0;             // (2 + hc_mult) * hc_mult
  int64_t hc_dim = 0;             // hc_mult * hidden_size
  int64_t expert_blocks = 0;      // moe_intermediate_size / 128
  int64_t vocab_blocks = 0;       // vocab_size / 128
  int64_t engram_columns = 0;     // (engram_max_ngram_size - 1) * engram_n_heads

  bool has_engram() const { return !engram_layer_ids.empty(); }
  bool has_dspark() const { return num_nextn_predict_layers > 0; }
  int64_t engram_index(int64_t layer) const;  // position in engram_layer_ids, or -1
};

// Parses and validates config.json text. `source` names the input in messages.
Result<ModelConfig> parse_model_config(const std::string& json_text, const std::string& source);
// Reads DIR/config.json (or a file path) and validates it.
Result<ModelConfig> load_model_config(const std::string& path);
// A stable digest of every field (used to bind programs to their config).
uint64_t config_digest(const ModelConfig& config);

}  // namespace dsv41
