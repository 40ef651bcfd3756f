# tools/torchref/config.py — config.json's fields, each layer's role and the RoPE frequencies (docs/model.md §3, §6).
import json
import math
import os


class LayerRole:
    """Which caches a layer owns and which layers it reads (docs/model.md §6, ModelConfig::layers)."""

    def __init__(self, ratio):
        self.ratio = ratio
        self.kv_source = self.index_source = self.candidate_source = self.candidate_masked = False
        self.kv_layer = self.index_layer = -1


class Config:
    """The fields of config.json the forward needs (a nested text_config wins), with the layer roles."""

    def __init__(self, raw, source):
        c = raw.get("text_config", raw)
        self.source = source

        def need(name):
            if name not in c:
                raise ValueError(f"{source}: {name}: missing")
            return c[name]

        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "head_dim",
                     "qk_rope_head_dim", "q_lora_rank", "o_lora_rank", "o_groups", "n_routed_experts",
                     "num_experts_per_tok", "moe_intermediate_size", "sliding_window", "hc_mult",
                     "hc_sinkhorn_iters", "eos_token_id"):
            setattr(self, name, int(need(name)))
        for name in ("rms_norm_eps", "hc_eps", "rope_theta", "routed_scaling_factor", "swiglu_limit"):
            setattr(self, name, float(need(name)))
        self.compress_rope_theta = float(c.get("compress_rope_theta", self.rope_theta))
        self.rope_scaling = c.get("rope_scaling") or {}
        self.norm_topk_prob = bool(c.get("norm_topk_prob", True))
        self.n_shared_experts = int(c.get("n_shared_experts", 0))
        self.index_n_heads = int(c.get("index_n_heads", 0))
        self.index_head_dim = int(c.get("index_head_dim", 0))
        self.index_topk = int(c.get("index_topk", 0))
        self.candidate_source_layer_id = int(c.get("candidate_source_layer_id", -1))
        self.candidate_topk_blocks = int(c.get("candidate_topk_blocks", 0))
        self.candidate_block_size = int(c.get("candidate_block_size", 0))
        if c.get("engram_layer_ids"):
            raise ValueError(f"{source}: engram_layer_ids: {len(c['engram_layer_ids'])} layers; this model has no "
                             "Engram (docs/model.md §8: the call lists omit it too)")
        ratios = [int(r) for r in need("compress_ratios")]
        if len(ratios) < self.num_hidden_layers:
            raise ValueError(f"{source}: compress_ratios: {len(ratios)} entries, expected at least "
                             f"num_hidden_layers {self.num_hidden_layers}")
        self.layers = derive_roles(ratios[:self.num_hidden_layers], c.get("kv_source_layer_ids", []),
                                   c.get("index_source_layer_ids", []), self.candidate_source_layer_id, source)

    @property
    def heads_per_group(self):
        return self.num_attention_heads // self.o_groups


def derive_roles(ratios, kv_ids, index_ids, candidate, source):
    """The wiring ModelConfig validation derives: a compressed layer reads the nearest kv source at or
    before it and the selection of the nearest index source at or before it on the same kv source."""
    roles = [LayerRole(r) for r in ratios]
    for layer in kv_ids:
        roles[layer].kv_source = True
    for layer in index_ids:
        roles[layer].index_source = True
    kv = index = -1
    for layer, role in enumerate(roles):
        if role.kv_source:
            kv = layer
        if role.ratio == 0:
            continue
        if kv < 0 or roles[kv].ratio != role.ratio:
            raise ValueError(f"{source}: kv_source_layer_ids: layer {layer} (compress ratio {role.ratio}) has no "
                             "kv source of the same ratio at or before it")
        role.kv_layer = kv
        if role.index_source:
            index = layer
        if index < 0 or roles[index].kv_layer != kv:
            raise ValueError(f"{source}: index_source_layer_ids: layer {layer} has no index source at or before "
                             f"it reading kv source {kv}")
        role.index_layer = index
    if candidate >= 0:
        roles[candidate].candidate_source = True
        for layer in range(candidate + 1, len(roles)):
            roles[layer].candidate_masked = roles[layer].index_source and \
                roles[layer].kv_layer == roles[candidate].kv_layer
    return roles


def load_config(path):
    """A config.json, or the one in a model folder."""
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    with open(path) as f:
        return Config(json.load(f), path)


def rope_frequencies(config, ratio):
    """docs/model.md §3, in float64: plain for ratio 0, the compress base with YaRN's ramp otherwise."""
    rot = config.qk_rope_head_dim
    base = config.rope_theta if ratio == 0 else config.compress_rope_theta
    freqs = [base ** (-2.0 * i / rot) for i in range(rot // 2)]
    scaling = config.rope_scaling
    if ratio == 0 or scaling.get("type") != "yarn":
        return freqs
    original = float(scaling["original_max_position_embeddings"])

    def corr(turns):
        return rot * math.log(original / (2.0 * math.pi * turns)) / (2.0 * math.log(base))

    lo = max(math.floor(corr(scaling["beta_fast"])), 0.0)
    hi = min(math.ceil(corr(scaling["beta_slow"])), float(rot - 1))
    if hi == lo:
        hi = lo + 0.001
    factor = float(scaling["factor"])
    out = []
    for i, f in enumerate(freqs):
        ramp = min(max((i - lo) / (hi - lo), 0.0), 1.0)
        out.append(f * (1.0 - ramp) + f / factor * ramp)
    return out
