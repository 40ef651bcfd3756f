// common/model_config_parse.cpp — reads config.json fields (nested text_config or top level) into ModelConfig.
#include <fstream>
#include <sstream>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/model_config.h"
#include "common/model_config_validate.h"

namespace dsv41 {
namespace {

using nlohmann::json;

// Reads fields of one JSON object, remembering the first failure with the field's name.
class FieldReader {
 public:
  FieldReader(const json& object, std::string prefix) : object_(object), prefix_(std::move(prefix)) {}

  void integer(const char* key, int64_t& out, bool required = true) {
    const json* v = find(key, required);
    if (!v) return;
    if (!v->is_number_integer()) return fail(key, *v, "an integer");
    out = v->get<int64_t>();
  }
  void number(const char* key, double& out, bool required = true) {
    const json* v = find(key, required);
    if (!v) return;
    if (!v->is_number()) return fail(key, *v, "a number");
    out = v->get<double>();
  }
  void boolean(const char* key, bool& out, bool required = true) {
    const json* v = find(key, required);
    if (!v) return;
    if (!v->is_boolean()) return fail(key, *v, "true or false");
    out = v->get<bool>();
  }
  void text(const char* key, std::string& out, bool required = true) {
    const json* v = find(key, required);
    if (!v) return;
    if (!v->is_string()) return fail(key, *v, "a string");
    out = v->get<std::string>();
  }
  void integers(const char* key, std::vector<int64_t>& out, bool required = true) {
    const json* v = find(key, required);
    if (!v) return;
    if (!v->is_array()) return fail(key, *v, "a list of integers");
    out.clear();
    for (const auto& item : *v) {
      if (!item.is_number_integer()) return fail(key, *v, "a list of integers");
      out.push_back(item.get<int64_t>());
    }
  }
  // A nested object, or nullptr when absent or null.
  const json* object(const char* key) {
    const json* v = find(key, false);
    if (v && !v->is_object()) {
      fail(key, *v, "an object");
      return nullptr;
    }
    return v;
  }
  const Status& status() const { return status_; }
  const std::string& prefix() const { return prefix_; }
  void merge(const Status& other) {
    if (status_.is_ok() && !other.is_ok()) status_ = other;
  }

 private:
  const json* find(const char* key, bool required) {
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) {
      if (required && status_.is_ok())
        status_ = Status::errorf("{}{}: missing (required field)", prefix_, key);
      return nullptr;
    }
    return &*it;
  }
  void fail(const char* key, const json& value, const char* expected) {
    if (!status_.is_ok()) return;
    std::string shown = value.dump();
    if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
    status_ = Status::errorf("{}{}: value {}, expected {}", prefix_, key, shown, expected);
  }

  const json& object_;
  std::string prefix_;
  Status status_;
};

void read_fields(FieldReader& r, ModelConfig& c) {
  r.integer("vocab_size", c.vocab_size);
  r.integer("hidden_size", c.hidden_size);
  r.integer("num_hidden_layers", c.num_hidden_layers);
  r.integer("num_attention_heads", c.num_attention_heads);
  r.integer("num_key_value_heads", c.num_key_value_heads);
  r.integer("head_dim", c.head_dim);
  r.integer("qk_rope_head_dim", c.qk_rope_head_dim);
  r.integer("q_lora_rank", c.q_lora_rank);
  r.integer("o_lora_rank", c.o_lora_rank);
  r.integer("o_groups", c.o_groups);
  r.integer("n_routed_experts", c.n_routed_experts);
  r.integer("num_experts_per_tok", c.num_experts_per_tok);
  r.integer("n_shared_experts", c.n_shared_experts);
  r.integer("moe_intermediate_size", c.moe_intermediate_size);
  r.number("routed_scaling_factor", c.routed_scaling_factor);
  r.number("swiglu_limit", c.swiglu_limit);
  r.boolean("norm_topk_prob", c.norm_topk_prob, false);
  c.scoring_func = "sqrtsoftplus";
  r.text("scoring_func", c.scoring_func, false);
  r.number("rms_norm_eps", c.rms_norm_eps);
  r.number("rope_theta", c.rope_theta);
  c.compress_rope_theta = c.rope_theta;
  r.number("compress_rope_theta", c.compress_rope_theta, false);
  r.integer("max_position_embeddings", c.max_position_embeddings, false);
  if (const json* rope = r.object("rope_scaling")) {
    FieldReader rr(*rope, r.prefix() + "rope_scaling.");
    rr.text("type", c.rope_scaling.type, false);
    if (c.rope_scaling.type.empty()) rr.text("rope_type", c.rope_scaling.type, false);
    rr.number("factor", c.rope_scaling.factor);
    rr.number("beta_fast", c.rope_scaling.beta_fast, false);
    rr.number("beta_slow", c.rope_scaling.beta_slow, false);
    rr.integer("original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings);
    r.merge(rr.status());
  }
  r.integer("sliding_window", c.sliding_window);
  r.integers("compress_ratios", c.compress_ratios);
  r.integers("kv_source_layer_ids", c.kv_source_layer_ids, false);
  r.integers("index_source_layer_ids", c.index_source_layer_ids, false);
  r.integer("index_n_heads", c.index_n_heads, !c.index_source_layer_ids.empty());
  r.integer("index_head_dim", c.index_head_dim, !c.index_source_layer_ids.empty());
  r.integer("index_topk", c.index_topk, !c.index_source_layer_ids.empty());
  r.integer("candidate_source_layer_id", c.candidate_source_layer_id, false);
  r.integer("candidate_topk_blocks", c.candidate_topk_blocks, c.candidate_source_layer_id >= 0);
  r.integer("candidate_block_size", c.candidate_block_size, c.candidate_source_layer_id >= 0);
  r.integer("hc_mult", c.hc_mult);
  c.hc_sinkhorn_iters = 20;
  r.integer("hc_sinkhorn_iters", c.hc_sinkhorn_iters, false);
  c.hc_eps = 1e-6;
  r.number("hc_eps", c.hc_eps, false);
  r.integers("engram_layer_ids", c.engram_layer_ids, false);
  const bool engram = !c.engram_layer_ids.empty();
  r.integers("engram_num_embeddings", c.engram_num_embeddings, engram);
  r.integer("engram_max_ngram_size", c.engram_max_ngram_size, engram);
  r.integer("engram_n_heads", c.engram_n_heads, engram);
  r.integer("engram_head_dim", c.engram_head_dim, engram);
  r.integer("engram_vocab_size", c.engram_vocab_size, engram);
  r.integer("engram_compressed_vocab_size", c.engram_compressed_vocab_size, engram);
  r.integer("engram_pad_token_id", c.engram_pad_token_id, false);
  r.integer("num_nextn_predict_layers", c.num_nextn_predict_layers, false);
  const bool dspark = c.num_nextn_predict_layers > 0;
  r.integer("dspark_block_size", c.dspark_block_size, dspark);
  r.integer("dspark_noise_token_id", c.dspark_noise_token_id, dspark);
  r.integers("dspark_target_layer_ids", c.dspark_target_layer_ids, dspark);
  r.integer("dspark_markov_rank", c.dspark_markov_rank, dspark);
  r.integer("dspark_n_routed_experts", c.dspark_n_routed_experts, dspark);
  r.integer("dspark_num_experts_per_tok", c.dspark_num_experts_per_tok, dspark);
  r.integer("bos_token_id", c.bos_token_id, false);
  r.integer("eos_token_id", c.eos_token_id, false);
  r.integer("pad_token_id", c.pad_token_id, false);
}

}  // namespace

Result<ModelConfig> parse_model_config(const std::string& json_text, const std::string& source) {
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded())
    return Status::errorf("{}: not valid JSON", source);
  if (!root.is_object())
    return Status::errorf("{}: top level is {}, expected a JSON object", source, root.type_name());
  // The release nests the text model under text_config; a plain config keeps it at top level.
  const json* text = &root;
  std::string prefix;
  auto nested = root.find("text_config");
  if (nested != root.end() && nested->is_object()) {
    text = &*nested;
    prefix = "text_config.";
  }
  ModelConfig config;
  FieldReader reader(*text, prefix);
  read_fields(reader, config);
  if (!reader.status().is_ok()) return reader.status().with_context(source);
  DSV41_TRY(validate_model_config(config, prefix).with_context(source));
  return config;
}

Result<ModelConfig> load_model_config(const std::string& path) {
  std::filesystem::path file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) file /= "config.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::errorf("{}: cannot open (does the model folder have a config.json?)", file.string());
  std::stringstream text;
  text << in.rdbuf();
  return parse_model_config(text.str(), file.string());
}

}  // namespace dsv41
