# tools/torchref/attention.py — §6: query and window row, compressor entries, the indexer's selection, sparse attention with the sink, grouped output.
import torch

NEG_INF = float("-inf")


def keys_product(q, keys):
    """q [T, H, D] against keys [T or 1, K, D] (one cache per row, or one shared by every row) -> [T, H, K]."""
    if keys.shape[0] == 1:
        t, h, d = q.shape
        return (q.reshape(t * h, d) @ keys[0].t()).view(t, h, -1)
    return torch.bmm(q, keys.transpose(1, 2))


def weights_product(p, keys):
    """Softmax weights p [T, H, K] times the rows keys [T or 1, K, D] -> [T, H, D]."""
    if keys.shape[0] == 1:
        t, h, k = p.shape
        return (p.reshape(t * h, k) @ keys[0]).view(t, h, -1)
    return torch.bmm(p, keys)


def write_entries(n, w, layer, role, rows, latent, entries):
    """§6.2: compressed row and index key of entries j from their pre-RoPE latents, at RoPE position j·r."""
    state, first = rows.state, entries * role.ratio
    rows.put(state.compressed[layer], entries, n.b(n.rope(latent, first, role.ratio)))
    key = n.rms_norm(n.mm_f32(latent, w.i_wk), w.i_k_norm)
    rows.put(state.index_keys[layer], entries, n.b(n.rope(key, first, role.ratio)))


def compress(n, w, layer, role, rows, x):
    if role.ratio == 1:
        write_entries(n, w, layer, role, rows, n.rms_norm(n.mm_f32(x, w.c_wkv), w.c_norm), rows.pos)
        return
    pooled, entries = rows.close_groups(layer, role.ratio, n.mm_f32(x, w.c_wkv), n.mm_f32(x, w.c_wgate))
    if entries.numel():
        write_entries(n, w, layer, role, rows, n.rms_norm(pooled, w.c_norm), entries)


def first_by_score(scores, k):
    """Indices of the k highest scores per row, ties to the lower index (a stable descending sort)."""
    return torch.sort(scores, dim=-1, descending=True, stable=True)[1][..., :k]


def indexer(n, w, role, rows, x, qr, scratch):
    """§6.3: the selected compressed entries of each row, as a mask [T, entries]."""
    c = n.config
    heads, width = c.index_n_heads, c.index_head_dim
    iq = n.rope(n.mm_act(qr, w.i_wq_b).view(-1, heads, width), rows.pos, role.ratio)
    weight = n.mm_f32(x, w.i_weights) * (width ** -0.5) * (heads ** -0.5)
    keys = rows.cache(rows.state.index_keys[role.kv_layer]).float()
    score = (weight[:, :, None] * keys_product(iq, keys).clamp_min(0.0)).sum(1)
    entries = keys.shape[1]
    visible = (rows.pos + 1) // role.ratio
    index = torch.arange(entries, device=score.device)
    score = torch.where(index[None] < visible[:, None], score, NEG_INF)
    block = c.candidate_block_size
    if role.candidate_source:
        blocks = -(-entries // block)
        padded = torch.nn.functional.pad(score, (0, blocks * block - entries), value=NEG_INF)
        best = padded.view(-1, blocks, block).amax(-1)
        block_id = torch.arange(blocks, device=score.device)
        newest = (visible - 1) // block  # always kept (when there is an entry at all)
        best = torch.where((block_id[None] == newest[:, None]) & (visible[:, None] > 0), float("inf"), best)
        chosen = first_by_score(best, min(c.candidate_topk_blocks, blocks))
        kept = torch.zeros_like(best, dtype=torch.bool).scatter(1, chosen, torch.gather(best, 1, chosen) > NEG_INF)
        scratch["candidate_blocks"] = kept
    if role.candidate_masked:
        kept = scratch["candidate_blocks"]
        score = torch.where(kept[:, index // block], score, NEG_INF)
    chosen = first_by_score(score, min(c.index_topk, entries))
    return torch.zeros_like(score, dtype=torch.bool).scatter(1, chosen, torch.gather(score, 1, chosen) > NEG_INF)


def attention(n, w, layer, rows, x, selections, scratch):
    c = n.config
    role = c.layers[layer]
    heads, dh, ratio = c.num_attention_heads, c.head_dim, role.ratio
    # §6.1 query and window row.
    qr = n.rms_norm(n.mm_f32(x, w.wq_a), w.q_norm)
    q = n.rope(n.mm_act(qr, w.wq_b).view(-1, heads, dh), rows.pos, ratio)
    kv = n.b(n.rope(n.rms_norm(n.mm_f32(x, w.wkv), w.kv_norm), rows.pos, ratio))
    window, window_valid = rows.window(layer, kv)
    # §6.2-6.3 the source writes its new entries before anyone reads the cache.
    if role.kv_source:
        compress(n, w, layer, role, rows, x)
    if role.index_source:
        selections[layer] = indexer(n, w, role, rows, x, qr, scratch)
    # §6.4 one softmax over the window rows, the selected compressed rows and the sink (denominator only).
    scale = dh ** -0.5
    logits = [torch.where(window_valid[:, None], keys_product(q, window.float()) * scale, NEG_INF)]
    if ratio > 0:
        compressed = rows.cache(rows.state.compressed[role.kv_layer]).float()
        selected = selections[role.index_layer]
        logits.append(torch.where(selected[:, None], keys_product(q, compressed) * scale, NEG_INF))
    logits.append(w.attn_sink[None, :, None].expand(q.shape[0], -1, 1))
    p = torch.softmax(torch.cat(logits, dim=-1), dim=-1)
    o = weights_product(p[..., :window.shape[1]], window.float())
    if ratio > 0:
        o = o + weights_product(p[..., window.shape[1]:-1], compressed)
    # §6.5 undo V's rotation per head, then the block-diagonal wo_a by groups, then wo_b.
    o = n.b(n.rope(n.b(o), rows.pos, ratio, inverse=True))
    groups = o.view(o.shape[0], c.o_groups, -1).transpose(0, 1).to(w.wo_a.dtype)
    z = n.b(torch.bmm(groups, w.wo_a.transpose(1, 2))).transpose(0, 1).reshape(o.shape[0], -1)
    return n.mm_act(z, w.wo_b)
