// compiler/emit/phase_emitter_attention.cpp — one layer's attention sublayer as calls (docs/model.md §6).
#include <cmath>

#include "compiler/emit/phase_emitter.h"

namespace dsv41 {

void PhaseEmitter::emit_attention(int layer) {
  const ModelConfig& c = in_.config;
  const std::string p = "layers." + std::to_string(layer) + ".";
  const int mix = emit_hc_collapse_and_mix(p, "attn", "ffn");
  emit_query(p, layer);
  emit_window_kv(p, layer, buffer("x.norm", DType::BF16, {c.hidden_size}));
  if (c.layers[layer].kv_source) emit_compressor(p, layer);
  if (c.layers[layer].index_source) emit_indexer(p, layer);
  emit_attention_output(p, layer);
  emit_hc_post(mix);
}

int PhaseEmitter::emit_query(const std::string& p, int layer) {
  const ModelConfig& c = in_.config;
  const int64_t heads = in_.share.heads.size(), width = heads * c.head_dim;
  const int xn = buffer("x.norm", DType::BF16, {c.hidden_size});
  const int qa = buffer("q.lora.raw", DType::F32, {c.q_lora_rank}), qr = buffer("q.lora", DType::BF16, {c.q_lora_rank});
  add(CallBuilder("linear").k("in_features", c.hidden_size).k("out_features", c.q_lora_rank).scratch("x", xn)
          .weight("w", weight(p + "attn.wq_a.weight")).scratch("out", qa));
  add(CallBuilder("rmsnorm").k("width", c.q_lora_rank).scratch("x", qa).weight("w", weight(p + "attn.q_norm.weight"))
          .real("eps", c.rms_norm_eps).scratch("out", qr));
  const int qb = buffer("q.heads.bf16", DType::BF16, {width});
  add(CallBuilder("linear").k("in_features", c.q_lora_rank).k("out_features", width).scratch("x", qr)
          .weight("w", weight(p + "attn.wq_b.weight")).scratch("out", qb));
  return qb;
}

void PhaseEmitter::emit_rope(int layer, int64_t heads, int64_t head_dim, int x, int out, int inverse) {
  CallBuilder rope("rope");
  rope.k("heads", heads).k("head_dim", head_dim).k("rope_dim", in_.config.qk_rope_head_dim).k("inverse", inverse)
      .statics().scratch("x", x).scratch("out", out);
  add(with_rope(rope, layer));
}

int PhaseEmitter::emit_window_kv(const std::string& p, int layer, int x) {
  const ModelConfig& c = in_.config;
  const int kva = buffer("kv.raw", DType::F32, {c.head_dim}), kv = buffer("kv", DType::BF16, {c.head_dim});
  add(CallBuilder("linear").k("in_features", c.hidden_size).k("out_features", c.head_dim).scratch("x", x)
          .weight("w", weight(p + "attn.wkv.weight")).scratch("out", kva));
  CallBuilder norm_rope("rmsnorm_rope");  // kv_norm, then rope (one launch: docs/ops.md "rmsnorm_rope")
  norm_rope.k("width", c.head_dim).k("rope_dim", c.qk_rope_head_dim).statics().scratch("x", kva)
      .weight("w", weight(p + "attn.kv_norm.weight")).real("eps", c.rms_norm_eps).scratch("out", kv);
  add(with_rope(norm_rope, layer));
  return kv;
}

void PhaseEmitter::emit_compressor(const std::string& p, int layer) {
  const ModelConfig& c = in_.config;
  const LayerRole& role = c.layers[layer];
  const int xn = buffer("x.norm", DType::BF16, {c.hidden_size});
  const int raw = buffer("compress.raw", DType::F32, {c.head_dim});
  add(CallBuilder("linear").k("in_features", c.hidden_size).k("out_features", c.head_dim).scratch("x", xn)
          .weight("w", weight(p + "attn.compressor.wkv.weight")).scratch("out", raw));
  CallBuilder b("compress");
  b.k("ratio", role.ratio).k("head_dim", c.head_dim).k("index_head_dim", c.index_head_dim)
      .k("rope_dim", c.qk_rope_head_dim).statics().scratch("raw", raw);
  if (role.ratio >= 2) {
    const int gate = buffer("compress.gate", DType::F32, {c.head_dim});
    add(CallBuilder("linear").k("in_features", c.hidden_size).k("out_features", c.head_dim).scratch("x", xn)
            .weight("w", weight(p + "attn.compressor.wgate.weight")).scratch("out", gate));
    b.scratch("gate", gate);
  }
  const std::string s = "L" + std::to_string(layer) + ".";
  b.weight("norm", weight(p + "attn.compressor.norm.weight")).weight("wk", weight(p + "attn.indexer.wk.weight"))
      .weight("k_norm", weight(p + "attn.indexer.k_norm.weight")).real("eps", c.rms_norm_eps);
  if (role.ratio >= 2) b.state("tail", state(s + "tail"));
  b.state("cache", state(s + "cache")).state("index_cache", state(s + "index_cache"));
  add(with_rope(b, layer));
}

void PhaseEmitter::emit_indexer(const std::string& p, int layer) {
  const ModelConfig& c = in_.config;
  const LayerRole& role = c.layers[layer];
  const int64_t width = c.index_n_heads * c.index_head_dim;
  const int iqb = buffer("index.q.bf16", DType::BF16, {width}), iq = buffer("index.q", DType::F32, {width});
  add(CallBuilder("linear").k("in_features", c.q_lora_rank).k("out_features", width).scratch("x", buffer("q.lora", DType::BF16, {c.q_lora_rank}))
          .weight("w", weight(p + "attn.indexer.wq_b.weight")).scratch("out", iqb));
  emit_rope(layer, c.index_n_heads, c.index_head_dim, iqb, iq, 0);
  const int iw = buffer("index.weights", DType::F32, {c.index_n_heads});
  add(CallBuilder("linear").k("in_features", c.hidden_size).k("out_features", c.index_n_heads)
          .scratch("x", buffer("x.norm", DType::BF16, {c.hidden_size}))
          .weight("w", weight(p + "attn.indexer.weights_proj.weight")).scratch("out", iw));
  const int mode = role.candidate_source ? 1 : role.candidate_masked ? 2 : 0;
  CallBuilder b("index_select");
  b.k("index_heads", c.index_n_heads).k("index_head_dim", c.index_head_dim).k("ratio", role.ratio)
      .k("topk", c.index_topk).k("mode", mode).k("cand_blocks", mode ? c.candidate_topk_blocks : 0)
      .k("cand_block_size", mode ? c.candidate_block_size : 0).statics().scratch("iq", iq).scratch("iw", iw)
      .state("index_cache", state("L" + std::to_string(role.kv_layer) + ".index_cache"));
  if (mode) b.scratch("candidates", buffer("candidates", DType::I32, {c.candidate_topk_blocks}));
  b.scratch("out", buffer("selected", DType::I32, {c.index_topk}));
  add(b);
}

void PhaseEmitter::emit_attention_output(const std::string& p, int layer) {
  const ModelConfig& c = in_.config;
  const LayerRole& role = c.layers[layer];
  const int64_t heads = in_.share.heads.size(), width = heads * c.head_dim;
  const std::string s = "L" + std::to_string(layer) + ".";
  const int kv = buffer("kv", DType::BF16, {c.head_dim}), out = buffer("attn.out", DType::BF16, {width});
  CallBuilder b("sparse_attention");
  b.k("heads", heads).k("head_dim", c.head_dim).k("window", c.sliding_window).k("topk", role.ratio > 0 ? c.index_topk : 0)
      .k("rope_dim", c.qk_rope_head_dim).statics().scratch("q", buffer("q.heads.bf16", DType::BF16, {width}))
      .scratch("kv", kv).state("ring", state(s + "ring"));
  if (role.ratio > 0)
    b.state("cache", state("L" + std::to_string(role.kv_layer) + ".cache"))
        .scratch("selected", buffer("selected", DType::I32, {c.index_topk}));
  // q's rope and the output's inverse rope are the op's (docs/ops.md "sparse_attention").
  b.weight("sink", weight(p + "attn.attn_sink")).real("scale", 1.0 / std::sqrt(static_cast<double>(c.head_dim)))
      .scratch("out", out);
  add(with_rope(b, layer));
  // The ring is written after attention: this step's rows are read from `kv` directly.
  add(CallBuilder("window_store").k("window", c.sliding_window).k("head_dim", c.head_dim).statics().scratch("kv", kv)
          .state("ring", state(s + "ring")));
  emit_attention_projection(p, layer, out);
}

void PhaseEmitter::emit_attention_projection(const std::string& p, int layer, int out) {
  const ModelConfig& c = in_.config;
  const int64_t groups = in_.share.groups.size();
  const int z = buffer("attn.groups", DType::BF16, {groups * c.o_lora_rank});
  add(CallBuilder("grouped_linear").k("groups", groups).k("in_per_group", c.group_width).k("out_per_group", c.o_lora_rank)
          .scratch("x", out).weight("w", weight(p + "attn.wo_a.weight")).scratch("out", z));
  const int partial = buffer("partial", DType::F32, {c.hidden_size});
  add(CallBuilder("linear").k("in_features", groups * c.o_lora_rank).k("out_features", c.hidden_size).scratch("x", z)
          .weight("w", weight(p + "attn.wo_b.weight")).scratch("out", partial));
  add(CallBuilder("exchange_sum").k("width", c.hidden_size).scratch("x", partial)
          .scratch("out", buffer("sub", DType::BF16, {c.hidden_size})));
}

}  // namespace dsv41
