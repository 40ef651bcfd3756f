# tools/torchref/weights.py — every tensor docs/model.md §10 names, decoded once at load and kept on the device (experts stacked per layer).
import torch


class LayerWeights(dict):
    """One layer's tensors by short name; attribute access for readability in the forward."""
    __getattr__ = dict.__getitem__


class ModelWeights:
    """Matrices in `matrix_dtype` (bf16 holds every stored value exactly; fp32 in check mode); vectors, hc
    mixes and sinks stay fp32 as the pack stores them or as the math uses them."""

    def __init__(self, config, source, matrix_dtype):
        c, self.dtype = config, matrix_dtype
        d, f, e = c.hidden_size, c.moe_intermediate_size, c.n_routed_experts

        def mat(name, rows, cols):
            return source.get(name, [rows, cols]).to(matrix_dtype)

        def vec(name, n):
            return source.get(name, [n]).float()

        self.embed = mat("embed.weight", c.vocab_size, d)
        self.head = mat("head.weight", c.vocab_size, d)
        self.norm = vec("norm.weight", d)
        self.layers = []
        for layer, role in enumerate(c.layers):
            p = f"layers.{layer}."
            heads, dh, mix = c.num_attention_heads, c.head_dim, (2 + c.hc_mult) * c.hc_mult
            w = LayerWeights(
                wq_a=mat(p + "attn.wq_a.weight", c.q_lora_rank, d), q_norm=vec(p + "attn.q_norm.weight", c.q_lora_rank),
                wq_b=mat(p + "attn.wq_b.weight", heads * dh, c.q_lora_rank),
                wkv=mat(p + "attn.wkv.weight", dh, d), kv_norm=vec(p + "attn.kv_norm.weight", dh),
                # wo_a is block diagonal: group g's rows read only its own heads, so keep it [G, Og, Hg·Dh].
                wo_a=mat(p + "attn.wo_a.weight", c.o_groups * c.o_lora_rank, heads * dh // c.o_groups)
                .view(c.o_groups, c.o_lora_rank, -1),
                wo_b=mat(p + "attn.wo_b.weight", d, c.o_groups * c.o_lora_rank),
                attn_sink=vec(p + "attn.attn_sink", heads),
                attn_norm=vec(p + "attn_norm.weight", d), ffn_norm=vec(p + "ffn_norm.weight", d),
                gate=mat(p + "ffn.gate.weight", e, d), gate_bias=vec(p + "ffn.gate.bias", e))
            for sub in ("attn", "ffn"):
                w[f"hc_{sub}_fn"] = source.get(f"{p}hc_{sub}_fn", [mix, c.hc_mult * d]).float()
                w[f"hc_{sub}_base"] = vec(f"{p}hc_{sub}_base", mix)
                w[f"hc_{sub}_scale"] = vec(f"{p}hc_{sub}_scale", 3)
            if role.kv_source:
                w.c_wkv = mat(p + "attn.compressor.wkv.weight", dh, d)
                if role.ratio >= 2:
                    w.c_wgate = mat(p + "attn.compressor.wgate.weight", dh, d)
                w.c_norm = vec(p + "attn.compressor.norm.weight", dh)
                w.i_wk = mat(p + "attn.indexer.wk.weight", c.index_head_dim, dh)
                w.i_k_norm = vec(p + "attn.indexer.k_norm.weight", c.index_head_dim)
            if role.index_source:
                w.i_wq_b = mat(p + "attn.indexer.wq_b.weight", c.index_n_heads * c.index_head_dim, c.q_lora_rank)
                w.i_weights = mat(p + "attn.indexer.weights_proj.weight", c.index_n_heads, d)
            # Experts stacked [E, out, in] so a step can index the selected ones or run all at once.
            for name, rows, cols in (("w1", f, d), ("w3", f, d), ("w2", d, f)):
                stacked = torch.empty(e, rows, cols, dtype=matrix_dtype, device=self.embed.device)
                for expert in range(e):
                    stacked[expert] = mat(f"{p}ffn.experts.{expert}.{name}.weight", rows, cols)
                w[name] = stacked
                if c.n_shared_experts > 0:
                    w["shared_" + name] = mat(f"{p}ffn.shared_experts.{name}.weight", rows, cols)
            self.layers.append(w)
