// common/model_config_validate.cpp — refuses a config naming the field, its value and the rule; derives layer roles.
#include "common/model_config_validate.h"

#include <algorithm>

#include "common/hashing.h"

namespace dsv41 {
namespace {

std::string list_text(const std::vector<int64_t>& values) { return fmt::format("[{}]", fmt::join(values, ", ")); }

// No size of the model comes near 2^20; the bound keeps products of three sizes inside int64, so a
// hostile config is refused instead of overflowing.
constexpr int64_t kMaxSize = int64_t{1} << 20;

class Rules {
 public:
  explicit Rules(std::string prefix) : prefix_(std::move(prefix)) {}
  void positive(const char* field, int64_t value) {
    if (value <= 0) failf("{}{}: value {}, must be positive", prefix_, field, value);
    else if (value > kMaxSize) failf("{}{}: value {}, must be at most {}", prefix_, field, value, kMaxSize);
  }
  void whole_blocks(const char* field, int64_t value, int64_t block, const char* why) {
    if (value % block != 0)
      failf("{}{}: value {} is not a whole number of {}-column blocks ({})", prefix_, field, value, block, why);
  }
  template <class... Args>
  void failf(fmt::format_string<Args...> format, Args&&... args) {
    if (status_.is_ok()) status_ = Status::errorf(format, std::forward<Args>(args)...);
  }
  // Layer lists must be ascending, unique and name real layers.
  void layer_list(const char* field, const std::vector<int64_t>& ids, int64_t layers) {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= layers)
        failf("{}{}[{}]: layer {} is outside 0..{}", prefix_, field, i, ids[i], layers - 1);
      else if (i > 0 && ids[i] <= ids[i - 1])
        failf("{}{}: {} must be strictly ascending", prefix_, field, list_text(ids));
    }
  }
  const std::string& prefix() const { return prefix_; }
  const Status& status() const { return status_; }

 private:
  std::string prefix_;
  Status status_;
};

void check_sizes(Rules& r, const ModelConfig& c) {
  r.positive("vocab_size", c.vocab_size);
  r.positive("hidden_size", c.hidden_size);
  r.positive("num_hidden_layers", c.num_hidden_layers);
  r.positive("num_attention_heads", c.num_attention_heads);
  r.positive("head_dim", c.head_dim);
  r.positive("q_lora_rank", c.q_lora_rank);
  r.positive("o_lora_rank", c.o_lora_rank);
  r.positive("o_groups", c.o_groups);
  r.positive("n_routed_experts", c.n_routed_experts);
  r.positive("num_experts_per_tok", c.num_experts_per_tok);
  r.positive("moe_intermediate_size", c.moe_intermediate_size);
  r.positive("sliding_window", c.sliding_window);
  r.positive("hc_mult", c.hc_mult);
  r.positive("hc_sinkhorn_iters", c.hc_sinkhorn_iters);
  if (c.num_nextn_predict_layers > kMaxSize)
    r.failf("{}num_nextn_predict_layers: value {}, must be at most {}", r.prefix(), c.num_nextn_predict_layers,
            kMaxSize);
  if (!r.status().is_ok()) return;  // the products below assume bounded sizes
  if (c.num_key_value_heads != 1)
    r.failf("{}num_key_value_heads: value {}, must be 1 (one shared latent is both K and V)", r.prefix(),
            c.num_key_value_heads);
  if (c.qk_rope_head_dim <= 0 || c.qk_rope_head_dim % 2 != 0 || c.qk_rope_head_dim > c.head_dim)
    r.failf("{}qk_rope_head_dim: value {}, must be even, positive and at most head_dim {}", r.prefix(),
            c.qk_rope_head_dim, c.head_dim);
  if (c.o_groups > 0 && c.num_attention_heads % c.o_groups != 0)
    r.failf("{}num_attention_heads: value {} is not divisible by o_groups {}", r.prefix(), c.num_attention_heads,
            c.o_groups);
  r.whole_blocks("moe_intermediate_size", c.moe_intermediate_size, kColumnBlock, "experts split by blocks");
  r.whole_blocks("vocab_size", c.vocab_size, kColumnBlock, "the vocabulary splits by blocks");
  r.whole_blocks("hidden_size", c.hidden_size, kScaleBlock, "FP8/FP4 scales cover 32 inputs");
  r.whole_blocks("q_lora_rank", c.q_lora_rank, kScaleBlock, "FP8 scales cover 32 inputs");
  r.whole_blocks("o_lora_rank", c.o_lora_rank, kScaleBlock, "wo_b splits its inputs by groups of o_lora_rank");
  if (c.num_attention_heads > 0 && c.o_groups > 0 && (c.num_attention_heads / c.o_groups * c.head_dim) % kScaleBlock)
    r.failf("{}head_dim: value {} times {} heads a group is not a multiple of {} (FP8 scale rows)", r.prefix(),
            c.head_dim, c.num_attention_heads / c.o_groups, kScaleBlock);
  if (c.num_experts_per_tok > c.n_routed_experts)
    r.failf("{}num_experts_per_tok: value {} exceeds n_routed_experts {}", r.prefix(), c.num_experts_per_tok,
            c.n_routed_experts);
  if (c.n_shared_experts < 0 || c.n_shared_experts > 1)
    r.failf("{}n_shared_experts: value {}, supported values are 0 and 1", r.prefix(), c.n_shared_experts);
  if (c.scoring_func != "sqrtsoftplus")
    r.failf("{}scoring_func: value \"{}\", the only supported value is \"sqrtsoftplus\"", r.prefix(), c.scoring_func);
  if (!(c.rms_norm_eps > 0.0)) r.failf("{}rms_norm_eps: value {}, must be positive", r.prefix(), c.rms_norm_eps);
  if (!(c.rope_theta > 0.0)) r.failf("{}rope_theta: value {}, must be positive", r.prefix(), c.rope_theta);
  if (!(c.compress_rope_theta > 0.0))
    r.failf("{}compress_rope_theta: value {}, must be positive", r.prefix(), c.compress_rope_theta);
  if (!c.rope_scaling.type.empty() && c.rope_scaling.type != "yarn")
    r.failf("{}rope_scaling.type: value \"{}\", the only supported value is \"yarn\"", r.prefix(),
            c.rope_scaling.type);
}

void check_ratios(Rules& r, const ModelConfig& c) {
  const int64_t layers = c.num_hidden_layers;
  const auto n = static_cast<int64_t>(c.compress_ratios.size());
  if (n != layers && n != layers + c.num_nextn_predict_layers)
    r.failf("{}compress_ratios: {} entries, expected num_hidden_layers {} (+ num_nextn_predict_layers {})",
            r.prefix(), n, layers, c.num_nextn_predict_layers);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ratio = c.compress_ratios[i];
    if (ratio < 0 || ratio > 2)
      r.failf("{}compress_ratios[{}]: value {}, must be 0, 1 or 2", r.prefix(), i, ratio);
    else if (i >= layers && ratio != 0)
      r.failf("{}compress_ratios[{}]: value {}, DSpark blocks must be 0", r.prefix(), i, ratio);
  }
}

// Fills LayerRole for every layer; refuses sources that are not compressed layers.
void derive_roles(Rules& r, ModelConfig& c) {
  const int64_t layers = c.num_hidden_layers;
  r.layer_list("kv_source_layer_ids", c.kv_source_layer_ids, layers);
  r.layer_list("index_source_layer_ids", c.index_source_layer_ids, layers);
  r.layer_list("engram_layer_ids", c.engram_layer_ids, layers);
  if (!r.status().is_ok() || static_cast<int64_t>(c.compress_ratios.size()) < layers) return;
  c.layers.assign(layers, LayerRole{});
  for (int64_t l = 0; l < layers; ++l) c.layers[l].ratio = static_cast<int>(c.compress_ratios[l]);
  for (size_t i = 0; i < c.kv_source_layer_ids.size(); ++i) {
    const int64_t l = c.kv_source_layer_ids[i];
    if (c.layers[l].ratio == 0)
      r.failf("{}kv_source_layer_ids[{}]: layer {} has compress_ratios[{}] = 0; a kv source must be a compressed layer",
              r.prefix(), i, l, l);
    c.layers[l].kv_source = true;
  }
  for (size_t i = 0; i < c.index_source_layer_ids.size(); ++i) {
    const int64_t l = c.index_source_layer_ids[i];
    if (c.layers[l].ratio == 0)
      r.failf("{}index_source_layer_ids[{}]: layer {} has compress_ratios[{}] = 0; an index source must be a "
              "compressed layer", r.prefix(), i, l, l);
    c.layers[l].index_source = true;
  }
  for (int64_t id : c.engram_layer_ids) c.layers[id].engram = true;
  int kv = -1, index = -1;
  for (int64_t l = 0; l < layers; ++l) {
    LayerRole& role = c.layers[l];
    if (role.kv_source) kv = static_cast<int>(l);
    if (role.ratio == 0) continue;
    if (kv < 0 || c.layers[kv].ratio != role.ratio) {
      r.failf("{}kv_source_layer_ids: layer {} (compress ratio {}) has no kv source of the same ratio at or before it",
              r.prefix(), l, role.ratio);
      return;
    }
    role.kv_layer = kv;
    if (role.index_source) index = static_cast<int>(l);
    if (index < 0 || c.layers[index].kv_layer != kv) {
      r.failf("{}index_source_layer_ids: layer {} has no index source at or before it reading kv source {}",
              r.prefix(), l, kv);
      return;
    }
    role.index_layer = index;
  }
}

void check_indexer_and_candidates(Rules& r, ModelConfig& c) {
  if (!c.index_source_layer_ids.empty()) {
    r.positive("index_n_heads", c.index_n_heads);
    r.positive("index_head_dim", c.index_head_dim);
    r.positive("index_topk", c.index_topk);
    if (c.index_head_dim < c.qk_rope_head_dim)
      r.failf("{}index_head_dim: value {} is smaller than qk_rope_head_dim {}", r.prefix(), c.index_head_dim,
              c.qk_rope_head_dim);
  }
  const int64_t cand = c.candidate_source_layer_id;
  if (cand < 0 || c.layers.empty()) return;
  if (cand >= c.num_hidden_layers || !c.layers[cand].index_source) {
    r.failf("{}candidate_source_layer_id: layer {} is not an index source (index_source_layer_ids {})", r.prefix(),
            cand, list_text(c.index_source_layer_ids));
    return;
  }
  r.positive("candidate_topk_blocks", c.candidate_topk_blocks);
  r.positive("candidate_block_size", c.candidate_block_size);
  c.layers[cand].candidate_source = true;
  for (int64_t l = cand + 1; l < c.num_hidden_layers; ++l) {
    LayerRole& role = c.layers[l];
    if (role.index_source && role.kv_layer == c.layers[cand].kv_layer) role.candidate_masked = true;
  }
}

void check_engram(Rules& r, const ModelConfig& c) {
  if (c.engram_layer_ids.empty()) return;
  if (c.engram_num_embeddings.size() != c.engram_layer_ids.size())
    r.failf("{}engram_num_embeddings: {} entries, expected one per engram_layer_ids entry ({})", r.prefix(),
            c.engram_num_embeddings.size(), c.engram_layer_ids.size());
  for (size_t i = 0; i < c.engram_num_embeddings.size(); ++i)
    if (c.engram_num_embeddings[i] <= 0)
      r.failf("{}engram_num_embeddings[{}]: value {}, must be positive", r.prefix(), i, c.engram_num_embeddings[i]);
  if (c.engram_max_ngram_size < 2 || c.engram_max_ngram_size > kMaxSize)
    r.failf("{}engram_max_ngram_size: value {}, must be between 2 and {}", r.prefix(), c.engram_max_ngram_size,
            kMaxSize);
  r.positive("engram_n_heads", c.engram_n_heads);
  r.positive("engram_head_dim", c.engram_head_dim);
  r.whole_blocks("engram_head_dim", c.engram_head_dim, kScaleBlock, "one scale per 32 values of a row");
  r.positive("engram_compressed_vocab_size", c.engram_compressed_vocab_size);
}

void check_dspark(Rules& r, const ModelConfig& c) {
  if (c.num_nextn_predict_layers < 0)
    r.failf("{}num_nextn_predict_layers: value {}, must be 0 or more", r.prefix(), c.num_nextn_predict_layers);
  if (c.num_nextn_predict_layers <= 0) return;
  r.positive("dspark_block_size", c.dspark_block_size);
  r.positive("dspark_markov_rank", c.dspark_markov_rank);
  r.positive("dspark_n_routed_experts", c.dspark_n_routed_experts);
  r.positive("dspark_num_experts_per_tok", c.dspark_num_experts_per_tok);
  if (c.dspark_num_experts_per_tok > c.dspark_n_routed_experts)
    r.failf("{}dspark_num_experts_per_tok: value {} exceeds dspark_n_routed_experts {}", r.prefix(),
            c.dspark_num_experts_per_tok, c.dspark_n_routed_experts);
  if (c.dspark_target_layer_ids.empty())
    r.failf("{}dspark_target_layer_ids: empty, DSpark needs at least one tap layer", r.prefix());
  r.layer_list("dspark_target_layer_ids", c.dspark_target_layer_ids, c.num_hidden_layers);
}

}  // namespace

Status validate_model_config(ModelConfig& c, const std::string& prefix) {
  Rules r(prefix);
  check_sizes(r, c);
  if (!r.status().is_ok()) return r.status();  // later rules do arithmetic on the sizes
  check_ratios(r, c);
  if (!r.status().is_ok()) return r.status();
  derive_roles(r, c);
  if (!r.status().is_ok()) return r.status();
  check_indexer_and_candidates(r, c);
  check_engram(r, c);
  check_dspark(r, c);
  if (!r.status().is_ok()) return r.status();
  c.heads_per_group = c.num_attention_heads / c.o_groups;
  c.group_width = c.heads_per_group * c.head_dim;
  c.nope_head_dim = c.head_dim - c.qk_rope_head_dim;
  c.mix_hc = (2 + c.hc_mult) * c.hc_mult;
  c.hc_dim = c.hc_mult * c.hidden_size;
  c.expert_blocks = c.moe_intermediate_size / kColumnBlock;
  c.vocab_blocks = c.vocab_size / kColumnBlock;
  c.engram_columns = c.has_engram() ? (c.engram_max_ngram_size - 1) * c.engram_n_heads : 0;
  return Status::ok();
}

int64_t ModelConfig::engram_index(int64_t layer) const {
  auto it = std::find(engram_layer_ids.begin(), engram_layer_ids.end(), layer);
  return it == engram_layer_ids.end() ? -1 : it - engram_layer_ids.begin();
}

uint64_t config_digest(const ModelConfig& c) {
  Hasher h;
  for (int64_t v : {c.vocab_size, c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.num_key_value_heads,
                    c.head_dim, c.qk_rope_head_dim, c.q_lora_rank, c.o_lora_rank, c.o_groups, c.n_routed_experts,
                    c.num_experts_per_tok, c.n_shared_experts, c.moe_intermediate_size, c.max_position_embeddings,
                    c.sliding_window, c.index_n_heads, c.index_head_dim, c.index_topk, c.candidate_source_layer_id,
                    c.candidate_topk_blocks, c.candidate_block_size, c.hc_mult, c.hc_sinkhorn_iters,
                    c.engram_max_ngram_size, c.engram_n_heads, c.engram_head_dim, c.engram_vocab_size,
                    c.engram_compressed_vocab_size, c.engram_pad_token_id, c.num_nextn_predict_layers,
                    c.dspark_block_size, c.dspark_noise_token_id, c.dspark_markov_rank, c.dspark_n_routed_experts,
                    c.dspark_num_experts_per_tok, c.bos_token_id, c.eos_token_id, c.pad_token_id,
                    c.rope_scaling.original_max_position_embeddings})
    h.add_i64(v);
  for (double v : {c.routed_scaling_factor, c.swiglu_limit, c.rms_norm_eps, c.rope_theta, c.compress_rope_theta,
                   c.hc_eps, c.rope_scaling.factor, c.rope_scaling.beta_fast, c.rope_scaling.beta_slow})
    h.add_f64(v);
  h.add(c.scoring_func).add(c.rope_scaling.type).add(static_cast<uint64_t>(c.norm_topk_prob));
  for (const auto* list : {&c.compress_ratios, &c.kv_source_layer_ids, &c.index_source_layer_ids,
                           &c.engram_layer_ids, &c.engram_num_embeddings, &c.dspark_target_layer_ids}) {
    h.add(static_cast<uint64_t>(list->size()));
    for (int64_t v : *list) h.add_i64(v);
  }
  return h.digest();
}

}  // namespace dsv41
