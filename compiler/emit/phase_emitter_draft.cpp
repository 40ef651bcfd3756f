// compiler/emit/phase_emitter_draft.cpp — DSpark as calls (docs/model.md §8 "DSpark"): taps and context rows in the target's phases, and the Draft phase.
#include <algorithm>
#include <cmath>

#include "compiler/emit/phase_emitter.h"

namespace dsv41 {

void PhaseEmitter::emit_tap(int layer) {
  const ModelConfig& c = in_.config;
  const auto& ids = c.dspark_target_layer_ids;
  const auto it = std::find(ids.begin(), ids.end(), layer);
  if (it == ids.end()) return;
  const auto taps = static_cast<int64_t>(ids.size());
  add(CallBuilder("stream_mean").k("hidden", c.hidden_size).k("streams", c.hc_mult).k("taps", taps).statics().scratch("x", x_)
          .integer("tap", it - ids.begin()).scratch("out", buffer("draft.taps", DType::BF16, {taps * c.hidden_size})));
}

// After the target's last layer every tap of the row is taken: project them once, and write each
// draft block's context row for the row's position into that block's ring.
void PhaseEmitter::emit_draft_context() {
  const ModelConfig& c = in_.config;
  const auto taps = static_cast<int64_t>(c.dspark_target_layer_ids.size());
  const int raw = buffer("draft.main.raw", DType::F32, {c.hidden_size});
  const int main = buffer("draft.main", DType::BF16, {c.hidden_size});
  add(CallBuilder("linear").k("in_features", taps * c.hidden_size).k("out_features", c.hidden_size)
          .scratch("x", buffer("draft.taps", DType::BF16, {taps * c.hidden_size}))
          .weight("w", weight("mtp.0.main_proj.weight")).scratch("out", raw));
  add(CallBuilder("rmsnorm").k("width", c.hidden_size).scratch("x", raw).weight("w", weight("mtp.0.main_norm.weight"))
          .real("eps", c.rms_norm_eps).scratch("out", main));
  for (int64_t i = 0; i < c.num_nextn_predict_layers; ++i) {
    const int layer = static_cast<int>(c.num_hidden_layers + i);
    const int kv = emit_window_kv(block_prefix(layer), layer, main);  // the block's own wkv on the projection
    add(CallBuilder("window_store").k("window", c.sliding_window).k("head_dim", c.head_dim).statics().scratch("kv", kv)
            .state("ring", state("D" + std::to_string(i) + ".ring")));
  }
}

void PhaseEmitter::emit_draft_attention(int layer) {
  const ModelConfig& c = in_.config;
  const std::string p = block_prefix(layer);
  const int64_t heads = in_.share.heads.size(), width = heads * c.head_dim;
  const int mix = emit_hc_collapse_and_mix(p, "attn", "ffn");
  const int qb = emit_query(p, layer);
  const int q = buffer("q.heads", DType::F32, {width});
  emit_rope(layer, heads, c.head_dim, qb, q, 0);
  emit_window_kv(p, layer, buffer("x.norm", DType::BF16, {c.hidden_size}));
  const int out = buffer("attn.out", DType::BF16, {width});
  // Non-causal over the block, after the context window; the block's own rows never enter the ring.
  add(CallBuilder("block_attention").k("heads", heads).k("head_dim", c.head_dim).k("window", c.sliding_window)
          .statics().scratch("q", q)
          .scratch("kv", buffer("kv", DType::BF16, {c.head_dim}))
          .state("ring", state("D" + std::to_string(layer - c.num_hidden_layers) + ".ring"))
          .weight("sink", weight(p + "attn.attn_sink")).real("scale", 1.0 / std::sqrt(static_cast<double>(c.head_dim)))
          .scratch("out", out));
  emit_rope(layer, heads, c.head_dim, out, out, 1);
  emit_attention_projection(p, layer, out);
  emit_hc_post(mix);
}

// Rows: the bonus token then noise tokens at consecutive positions, per sequence; every row's
// Markov-adjusted logits land in "logits" (its argmax is that row's draft).
void PhaseEmitter::emit_draft() {
  const ModelConfig& c = in_.config;
  emit_embed();
  for (int64_t i = 0; i < c.num_nextn_predict_layers; ++i) {
    const int layer = static_cast<int>(c.num_hidden_layers + i);
    emit_draft_attention(layer);
    emit_ffn(layer);
  }
  const std::string last = block_prefix(static_cast<int>(c.num_hidden_layers + c.num_nextn_predict_layers - 1));
  emit_head(last + "norm.weight", "logits.base");
  // A sequence's rows one step at a time: each row's Markov term follows the previous row's pick, so
  // every step is its own call (spread over the whole device) and markov_pick hands the picks on.
  const int logits = buffer("logits", DType::F32, {c.vocab_size}), picks = buffer("draft.picks", DType::I32, {1});
  for (int64_t step = 0; step < c.dspark_block_size; ++step) {
    add(CallBuilder("markov_logits").k("vocab", c.vocab_size).k("rank", c.dspark_markov_rank).statics()
            .scratch("base", buffer("logits.base", DType::F32, {c.vocab_size}))
            .weight("embed", weight(last + "markov_head.embed.weight")).weight("head", weight(last + "markov_head.head.weight"))
            .scratch("picks", picks).integer("step", step).scratch("out", logits));
    if (step + 1 < c.dspark_block_size)
      add(CallBuilder("markov_pick").k("vocab", c.vocab_size).statics().scratch("logits", logits).integer("step", step)
              .scratch("picks", picks));
  }
}

}  // namespace dsv41
