// compiler/plan/serving_settings.cpp — serving settings: the context default and the bounds every setting must meet.
#include "compiler/plan/serving_settings.h"

#include <algorithm>

namespace dsv41 {

int64_t default_context(const ModelConfig& config) {
  return config.max_position_embeddings > 0 ? std::min(kDefaultContext, config.max_position_embeddings)
                                            : kDefaultContext;
}

Status check_settings(const ModelConfig& c, const ServingSettings& s) {
  if (s.context < 1 || (c.max_position_embeddings > 0 && s.context > c.max_position_embeddings))
    return Status::errorf("setting context = {}: must be between 1 and max_position_embeddings {}", s.context,
                          c.max_position_embeddings);
  if (s.slots < 1 || s.slots > 4096) return Status::errorf("setting slots = {}: must be between 1 and 4096", s.slots);
  if (s.prefill_rows.empty()) return Status::error("setting prefill_rows = (none): needs at least one segment size");
  for (size_t i = 0; i < s.prefill_rows.size(); ++i) {
    if (s.prefill_rows[i] < 1 || s.prefill_rows[i] > 65536)
      return Status::errorf("setting prefill_rows = {}: must be between 1 and 65536", s.prefill_rows[i]);
    for (size_t k = 0; k < i; ++k)
      if (s.prefill_rows[k] == s.prefill_rows[i])
        return Status::errorf("setting prefill_rows = {}: listed twice", s.prefill_rows[i]);
  }
  if (s.activations != DType::BF16 && s.activations != DType::F32)
    return Status::errorf("setting activations = {}: must be bf16 or f32", dtype_name(s.activations));
  if (s.decode_rows.empty()) return Status::error("setting decode_rows = (none): needs at least one row count");
  for (size_t i = 0; i < s.decode_rows.size(); ++i) {
    if (s.decode_rows[i] < 1 || s.decode_rows[i] > 256)
      return Status::errorf("setting decode_rows = {}: must be between 1 and 256", s.decode_rows[i]);
    if (i > 0 && s.decode_rows[i] <= s.decode_rows[i - 1])
      return Status::errorf("setting decode_rows = {}: after {}; list them strictly ascending", s.decode_rows[i],
                            s.decode_rows[i - 1]);
  }
  if (s.draft_tokens != 0) {
    if (!c.has_dspark())
      return Status::errorf("setting draft_tokens = {}: the model has no DSpark blocks (num_nextn_predict_layers 0); "
                            "use 0", s.draft_tokens);
    if (s.draft_tokens < 0 || s.draft_tokens > c.dspark_block_size)
      return Status::errorf("setting draft_tokens = {}: must be between 0 and dspark_block_size {}", s.draft_tokens,
                            c.dspark_block_size);
    if (s.decode_rows.back() < s.draft_tokens + 1)
      return Status::errorf("setting decode_rows = {}: the largest is below draft_tokens {} + 1, the rows one slot's "
                            "verification needs", s.decode_rows.back(), s.draft_tokens);
  }
  if (s.cache_format == CacheFormat::Official)
    for (const auto& [field, dim] : {std::pair<const char*, int64_t>{"head_dim", c.head_dim}, {"index_head_dim", c.index_head_dim}})
      if (dim % 32 != 0)
        return Status::errorf("setting cache_format = official: {} {} is not a multiple of 32, the values one cache "
                              "scale covers", field, dim);
  return Status::ok();
}

Result<ServingSettings> resolve_settings(const ModelConfig& config, const ServingSettings& settings) {
  ServingSettings resolved = settings;
  if (resolved.context == 0) resolved.context = default_context(config);
  DSV41_TRY(check_settings(config, resolved));
  return resolved;
}

}  // namespace dsv41
