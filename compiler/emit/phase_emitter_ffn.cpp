// compiler/emit/phase_emitter_ffn.cpp — one layer's MoE sublayer and the final head as calls (docs/model.md §4, §7).
#include "common/kernel_contract.h"
#include "compiler/emit/phase_emitter.h"

namespace dsv41 {

void PhaseEmitter::emit_ffn(int layer) {
  const ModelConfig& c = in_.config;
  const std::string p = block_prefix(layer);
  const int64_t width = in_.share.expert_cols.size();
  const bool draft = is_draft_block(layer);  // the draft blocks have experts of their own count and top-k
  const int64_t experts = draft ? c.dspark_n_routed_experts : c.n_routed_experts;
  const int64_t topk = draft ? c.dspark_num_experts_per_tok : c.num_experts_per_tok;
  const int mix = emit_hc_collapse_and_mix(p, "ffn", "attn");
  const int xn = buffer("x.norm", DType::BF16, {c.hidden_size});
  const int ids = buffer("router.ids", DType::I32, {topk});
  const int weights = buffer("router.weights", DType::F32, {topk});
  add(CallBuilder("router").k("hidden", c.hidden_size).k("experts", experts).k("topk", topk)
          .scratch("x", xn).weight("gate", weight(p + "ffn.gate.weight")).weight("bias", weight(p + "ffn.gate.bias"))
          .real("scaling", c.routed_scaling_factor).integer("normalize", c.norm_topk_prob ? 1 : 0)
          .scratch("ids", ids).scratch("weights", weights));
  std::vector<int64_t> w1, w2, w3;
  for (int64_t e = 0; e < experts; ++e) {
    const std::string ep = p + "ffn.experts." + std::to_string(e) + ".";
    w1.push_back(weight(ep + "w1.weight"));
    w2.push_back(weight(ep + "w2.weight"));
    w3.push_back(weight(ep + "w3.weight"));
  }
  const int partial = buffer("partial", DType::F32, {c.hidden_size});
  // The prefill experts' act and sorted pairs (kernels/moe_prefill.cuh): K·F bf16 and K int32 a row.
  const int work = buffer("moe.work", DType::BF16, {topk * (width + 2)});
  CallBuilder routed("moe_experts");
  routed.k("hidden", c.hidden_size).k("width", width).k("experts", experts).k("topk", topk).scratch("x", xn)
      .scratch("ids", ids).scratch("weights", weights).weights("w1", w1).weights("w3", w3).weights("w2", w2);
  // Decode windows (the grouped experts' rows, kernels/moe_grouped.cuh) run the shared expert in the routed
  // experts' launch: its weights stream beside theirs, one launch and one tail fewer a layer. Larger
  // phases keep two launches (the prefill GEMMs of kernels/moe_prefill.cuh take the routed experts only):
  // the launch's row bound (kMoeRows, common/kernel_contract.h) decides.
  const std::string sp = p + "ffn.shared_experts.";
  const bool fused = c.n_shared_experts > 0 && phase_.rows <= kMoeRows;
  if (fused)
    routed.weight("shared_w1", weight(sp + "w1.weight")).weight("shared_w3", weight(sp + "w3.weight"))
        .weight("shared_w2", weight(sp + "w2.weight"));
  add(routed.real("limit", c.swiglu_limit).scratch("out", partial).scratch("work", work));
  if (c.n_shared_experts > 0 && !fused) {
    add(CallBuilder("shared_expert").k("hidden", c.hidden_size).k("width", width).scratch("x", xn)
            .weight("w1", weight(sp + "w1.weight")).weight("w3", weight(sp + "w3.weight"))
            .weight("w2", weight(sp + "w2.weight")).real("limit", c.swiglu_limit).scratch("out", partial)
            .scratch("work", work));
  }
  // Routed and shared partials are added before the one exchange of the sublayer.
  add(CallBuilder("exchange_sum").k("width", c.hidden_size).scratch("x", partial)
          .scratch("out", buffer("sub", DType::BF16, {c.hidden_size})));
  emit_hc_post(mix);
}

void PhaseEmitter::emit_head(const std::string& norm, const std::string& logits) {
  const ModelConfig& c = in_.config;
  const int64_t vocab = in_.share.vocab_rows.size();
  const int xn = buffer("x.norm", DType::BF16, {c.hidden_size});
  add(CallBuilder("hc_collapse_norm").k("hidden", c.hidden_size).k("streams", c.hc_mult).scratch("x", x_)
          .scratch("mix", buffer("mix.ffn", DType::F32, {c.mix_hc})).weight("norm", weight(norm))
          .real("eps", c.rms_norm_eps).scratch("out", xn));
  const int local = buffer("logits.local", DType::F32, {vocab});
  add(CallBuilder("linear").k("in_features", c.hidden_size).k("out_features", vocab).scratch("x", xn).weight("w", weight("head.weight"))
          .scratch("out", local));
  add(CallBuilder("exchange_gather").k("width", vocab).scratch("x", local).integers("widths", in_.vocab_widths)
          .scratch("out", buffer(logits, DType::F32, {c.vocab_size})));
}

}  // namespace dsv41
