// tests/reference/reference_model.cpp — the top level of docs/model.md §4-5: embed, blocks with the delayed pre, head.
#include "tests/reference/reference_model.h"

#include "tests/reference/reference_attention.h"
#include "tests/reference/reference_hc.h"
#include "tests/reference/reference_moe.h"

namespace dsv41::reference {

Result<ReferenceModel> ReferenceModel::load(const std::string& model_dir) {
  ReferenceModel model;
  DSV41_ASSIGN_OR_RETURN(model.config_, load_model_config(model_dir));
  DSV41_ASSIGN_OR_RETURN(model.engram_, engram_layouts(model.config_));
  model.wiring_ = derive_wiring(model.config_);
  DSV41_ASSIGN_OR_RETURN(model.weights_, load_model_weights(model.config_, model_dir));
  return model;
}

ReferenceModel ReferenceModel::assemble(ModelConfig config, ModelWeights weights) {
  DSV41_CHECK(static_cast<int64_t>(weights.layers.size()) == config.num_hidden_layers);
  ReferenceModel model;
  model.config_ = std::move(config);
  model.wiring_ = derive_wiring(model.config_);
  model.weights_ = std::move(weights);
  return model;
}

Result<std::vector<std::vector<float>>> ReferenceModel::forward(const std::vector<int32_t>& ids) const {
  return forward(ids, ForwardOptions{});
}

Result<std::vector<std::vector<float>>> ReferenceModel::forward(const std::vector<int32_t>& ids,
                                                                const ForwardOptions& options) const {
  ReferenceStats* stats = options.stats;
  const RoundingScope rounding(options.rounding);
  const ModelConfig& c = config_;
  const ModelWeights& w = weights_;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= c.vocab_size)
      return Status::errorf("ids[{}]: token {} is outside the vocabulary 0..{}", i, ids[i], c.vocab_size - 1);
  if (static_cast<int64_t>(ids.size()) > c.max_position_embeddings)
    return Status::errorf("ids: {} tokens exceed max_position_embeddings {}", ids.size(), c.max_position_embeddings);

  // Engram reads every position's compressed id; the map must cover the vocabulary.
  std::vector<int64_t> compressed;
  int64_t pad = 0;
  if (c.has_engram()) {
    const std::vector<int32_t>* map = options.engram_token_map;
    if (!map || static_cast<int64_t>(map->size()) != c.vocab_size)
      return Status::errorf("reference: Engram needs a token map of {} ids, got {}", c.vocab_size, map ? map->size() : 0);
    for (int32_t id : ids) compressed.push_back((*map)[id]);
    pad = (*map)[c.engram_pad_token_id];
  }
  const Rope ropes[3] = {Rope(c, 0), Rope(c, 1), Rope(c, 2)};
  const int64_t d_count = c.hidden_size, s_count = c.hc_mult;
  SequenceState sequence;
  sequence.layers.resize(static_cast<size_t>(c.num_hidden_layers));
  std::vector<std::vector<float>> all_logits;
  all_logits.reserve(ids.size());

  for (size_t t = 0; t < ids.size(); ++t) {
    const auto p = static_cast<int64_t>(t);
    RowScratch row;
    row.selection.resize(static_cast<size_t>(c.num_hidden_layers));
    // §4.1 embed into S identical streams; §4.2 the delayed pre starts one-hot on stream 0.
    Vec streams(static_cast<size_t>(s_count * d_count));
    for (int64_t s = 0; s < s_count; ++s)
      for (int64_t d = 0; d < d_count; ++d) streams[s * d_count + d] = bf(w.embed.row(ids[t])[d]);
    Vec pre_prev(static_cast<size_t>(s_count), 0.0f);
    pre_prev[0] = 1.0f;

    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      // Hook point of docs/model.md §8: Engram modifies `streams` here (DSpark would tap their mean).
      const LayerWeights& lw = w.layers[l];
      if (lw.has_engram) {
        size_t e = 0;
        while (c.engram_layer_ids[e] != l) ++e;
        DSV41_TRY(engram_apply(c, engram_[e], lw.engram, compressed, p, pad, streams));
      }
      const AttentionContext ctx{c, w, ropes[wiring_[l].ratio], wiring_[l], l, p, sequence, row, stats};
      const HcMix attn_mix = hc_mix(c, lw.hc_attn, streams);
      const Vec a = run_attention(ctx, rms_norm(hc_collapse(c, streams, pre_prev), lw.attn_norm, c.rms_norm_eps));
      streams = hc_post(c, a, streams, attn_mix);
      const HcMix ffn_mix = hc_mix(c, lw.hc_ffn, streams);
      const Vec f = run_moe(c, lw, rms_norm(hc_collapse(c, streams, attn_mix.pre), lw.ffn_norm, c.rms_norm_eps));
      streams = hc_post(c, f, streams, ffn_mix);
      pre_prev = ffn_mix.pre;
    }

    // §4.4 final collapse with the last FFN pre, norm, fp32 head.
    const Vec h = rms_norm(hc_collapse(c, streams, pre_prev), w.norm, c.rms_norm_eps);
    all_logits.push_back(matvec(w.head, h));
    sequence.length = p + 1;
    if (stats) stats->rows++;
  }
  return all_logits;
}

}  // namespace dsv41::reference
