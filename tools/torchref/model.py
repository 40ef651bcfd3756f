# tools/torchref/model.py — the forward of docs/model.md §4-7 over a step's rows: embed, blocks with mHC and the delayed pre, head.
import torch

from .attention import attention
from .moe import moe


def hc_mix(n, x, fn, base, scale):
    """§5 HCmix: pre and post weights and the Sinkhorn-balanced comb, from the flattened streams."""
    c = n.config
    s, rows = c.hc_mult, x.shape[0]
    flat = x.float().reshape(rows, -1)
    m = (flat @ fn.t()) * torch.rsqrt(flat.square().mean(-1, keepdim=True) + c.rms_norm_eps)
    pre = torch.sigmoid(scale[0] * m[:, :s] + base[:s]) + c.hc_eps
    post = 2.0 * torch.sigmoid(scale[1] * m[:, s:2 * s] + base[s:2 * s])
    comb = (scale[2].to(n.comb) * m[:, 2 * s:].to(n.comb) + base[2 * s:].to(n.comb)).view(rows, s, s)
    comb = torch.softmax(comb, dim=-1) + c.hc_eps
    comb = comb / (comb.sum(1, keepdim=True) + c.hc_eps)  # columns: the sum runs over the first index
    for _ in range(c.hc_sinkhorn_iters - 1):
        comb = comb / (comb.sum(2, keepdim=True) + c.hc_eps)
        comb = comb / (comb.sum(1, keepdim=True) + c.hc_eps)
    return pre, post, comb.float()


def collapse(n, x, weights):
    return n.b((weights[:, :, None] * x.float()).sum(1))


def hc_post(n, a, x, post, comb):
    """X'[j] = b(post[j]·a + Σ_i C[i][j]·X[i])."""
    return n.b(post[:, :, None] * a.float()[:, None, :] + torch.bmm(comb.transpose(1, 2), x.float()))


def forward(n, weights, rows, tokens, moe_path):
    """Logits [rows, vocab] (fp32) for one step; `rows` (state.DecodeRows or PrefillRows) says which
    sequence and position each token has and addresses their caches."""
    c = n.config
    e = n.b(weights.embed[tokens])
    x = e[:, None, :].expand(-1, c.hc_mult, -1).contiguous()
    pre_prev = torch.zeros(tokens.shape[0], c.hc_mult, device=tokens.device)
    pre_prev[:, 0] = 1.0  # one-hot: the first collapse returns e
    selections, scratch = {}, {}
    for layer, w in enumerate(weights.layers):
        pre_a, post_a, comb_a = hc_mix(n, x, w.hc_attn_fn, w.hc_attn_base, w.hc_attn_scale)
        a = attention(n, w, layer, rows, n.rms_norm(collapse(n, x, pre_prev), w.attn_norm), selections, scratch)
        x = hc_post(n, a, x, post_a, comb_a)
        pre_f, post_f, comb_f = hc_mix(n, x, w.hc_ffn_fn, w.hc_ffn_base, w.hc_ffn_scale)
        f = moe(n, w, n.rms_norm(collapse(n, x, pre_a), w.ffn_norm), moe_path)
        x = hc_post(n, f, x, post_f, comb_f)
        pre_prev = pre_f
    h = n.rms_norm(collapse(n, x, pre_prev), weights.norm)
    return n.mm_f32(h, weights.head)
