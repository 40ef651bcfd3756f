# tools/torchref/moe.py — §7: sqrt-softplus routing with the selection bias, clamped SwiGLU experts weighted before w2, the shared expert.
import torch
import torch.nn.functional as F


def route(n, w, x):
    """The K experts of each row (higher σ + bias first, ties to the lower id) and their weights."""
    c = n.config
    logits = n.mm_f32(x, w.gate)
    score = torch.sqrt(logits.clamp_min(0.0) + torch.log1p(torch.exp(-logits.abs())))  # sqrt(softplus)
    experts = torch.sort(score + w.gate_bias, dim=-1, descending=True, stable=True)[1][:, :c.num_experts_per_tok]
    weight = torch.gather(score, 1, experts)
    if c.norm_topk_prob and c.num_experts_per_tok > 1:
        weight = weight / (weight.sum(-1, keepdim=True) + 1e-20)
    return experts, weight * c.routed_scaling_factor


def activation(n, g, u, weight):
    """b(w·silu(min(g, L))·clamp(u, −L, L)); no clamp when swiglu_limit is 0."""
    limit = n.config.swiglu_limit
    if limit > 0:
        g, u = g.clamp_max(limit), u.clamp(-limit, limit)
    return n.b(weight * F.silu(g) * u)


def gathered(n, w, x, experts, weight):
    """Each row's K experts indexed out of the stacked weights: few rows, static shapes (graphs)."""
    rows, k = experts.shape
    xs = x[:, None, None, :].expand(-1, k, -1, -1).reshape(rows * k, 1, -1)
    flat = experts.reshape(-1)
    g = n.bmm_f32(xs, w.w1[flat].transpose(1, 2))
    u = n.bmm_f32(xs, w.w3[flat].transpose(1, 2))
    act = activation(n, g, u, weight.reshape(-1, 1, 1))
    return n.bmm_f32(act, w.w2[flat].transpose(1, 2)).view(rows, k, -1).sum(1)


def dense(n, w, x, experts, weight):
    """Every expert over every row with weight 0 where not chosen (b(0·…) = 0 adds nothing): static shapes
    and each expert's weights read once, for rows whose choices together cover most experts."""
    combine = torch.zeros(x.shape[0], w.w1.shape[0], device=x.device).scatter(1, experts, weight)
    xs = x[None].expand(w.w1.shape[0], -1, -1)
    g, u = n.bmm_f32(xs, w.w1.transpose(1, 2)), n.bmm_f32(xs, w.w3.transpose(1, 2))
    act = activation(n, g, u, combine.t()[:, :, None])
    return n.bmm_f32(act, w.w2.transpose(1, 2)).sum(0)


def grouped(n, w, x, experts, weight):
    """Per expert, only the rows that chose it (host-side grouping: eager prefill)."""
    out = torch.zeros(x.shape[0], x.shape[1], device=x.device)
    for expert in torch.unique(experts).tolist():
        row, slot = (experts == expert).nonzero(as_tuple=True)
        xe = x[row]
        act = activation(n, n.mm_f32(xe, w.w1[expert]), n.mm_f32(xe, w.w3[expert]), weight[row, slot][:, None])
        out.index_add_(0, row, n.mm_f32(act, w.w2[expert]))
    return out


PATHS = {"gathered": gathered, "dense": dense, "grouped": grouped}


def moe(n, w, x, path):
    experts, weight = route(n, w, x)
    if path == "auto":  # graph-safe: copying the chosen experts out reads their bytes three times (read,
        # write, read back), so past a third of the experts reading them all once in place costs less
        path = "gathered" if 3 * experts.numel() <= w.w1.shape[0] else "dense"
    y = PATHS[path](n, w, x, experts, weight)
    if "shared_w1" in w:
        y = y + n.mm_f32(activation(n, n.mm_f32(x, w.shared_w1), n.mm_f32(x, w.shared_w3), 1.0), w.shared_w2)
    return n.b(y)
