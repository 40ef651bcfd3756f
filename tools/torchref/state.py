# tools/torchref/state.py — the per-sequence state of docs/model.md §9 as preallocated tensors, and how one step's rows address it.
import torch


class State:
    """Caches of `slots` sequences, each up to `context` positions: the window ring of every layer, and
    for kv sources the compressed rows, index keys and (ratio >= 2) the open group's raw rows. Every
    write is addressed by position, so replaying a step at the same position rewrites the same values."""

    def __init__(self, config, slots, context, act, device):
        c, self.config, self.slots, self.context = config, config, slots, context
        w = c.sliding_window
        self.ring = [torch.zeros(slots, w, c.head_dim, dtype=act, device=device) for _ in c.layers]
        self.compressed, self.index_keys, self.tail_u, self.tail_g = {}, {}, {}, {}
        for layer, role in enumerate(c.layers):
            if not role.kv_source:
                continue
            entries = -(-context // role.ratio)  # entry p div r is written from the group's first row on
            self.compressed[layer] = torch.zeros(slots, entries, c.head_dim, dtype=act, device=device)
            self.index_keys[layer] = torch.zeros(slots, entries, c.index_head_dim, dtype=act, device=device)
            if role.ratio >= 2:
                self.tail_u[layer] = torch.zeros(slots, role.ratio, c.head_dim, device=device)
                self.tail_g[layer] = torch.zeros(slots, role.ratio, c.head_dim, device=device)

    def randomize(self, seed):
        """Fills every cache with values of a plausible size, for timing at a context fill without
        prefilling it first (what is read, not what it means, sets the time)."""
        generator = torch.Generator(device=self.ring[0].device)
        generator.manual_seed(seed)
        for t in list(self.ring) + list(self.compressed.values()) + list(self.index_keys.values()) + \
                list(self.tail_u.values()) + list(self.tail_g.values()):
            t.copy_(torch.randn(t.shape, generator=generator, device=t.device))


class DecodeRows:
    """One row per slot (row t is slot t, all slots step together): tensors only, so the step can be
    captured in a CUDA graph and replayed with new tokens and positions."""

    def __init__(self, state, positions):
        self.state, self.pos, self.count = state, positions, positions.shape[0]
        self.batch = torch.arange(self.count, device=positions.device)
        w = state.config.sliding_window
        slot = torch.arange(w, device=positions.device)
        # Slot i of the ring holds the latest position q <= p with q mod W == i; q < 0 means never written.
        self.ring_valid = (positions[:, None] - torch.remainder(positions[:, None] - slot[None], w)) >= 0

    def cache(self, tensor):
        return tensor  # [rows, ...]: each row reads its own sequence

    def put(self, tensor, index, values):
        tensor[self.batch, index] = values.to(tensor.dtype)

    def window(self, layer, kv):
        ring = self.state.ring[layer]
        self.put(ring, torch.remainder(self.pos, ring.shape[1]), kv)
        return ring, self.ring_valid

    def close_groups(self, layer, ratio, u, g):
        """Keeps each row's raw (u, g) in its group's slot p mod r and pools the group every step: the entry
        p div r is rewritten until the step that closes it, and nothing reads it before (visibility)."""
        tail_u, tail_g = self.state.tail_u[layer], self.state.tail_g[layer]
        slot = torch.remainder(self.pos, ratio)
        self.put(tail_u, slot, u)
        self.put(tail_g, slot, g)
        return _pool(tail_g, tail_u), self.pos // ratio


class PrefillRows:
    """`count` consecutive positions from `start` of one slot: the rows see each other through the
    window and the compressed entries their own step closes."""

    def __init__(self, state, slot, start, count, device):
        self.state, self.slot, self.start, self.count = state, slot, start, count
        self.pos = torch.arange(start, start + count, device=device)
        w = state.config.sliding_window
        slot_ids = torch.arange(w, device=device)
        ring_pos = (start - 1) - torch.remainder((start - 1) - slot_ids, w)
        key_pos = torch.cat((ring_pos, self.pos))
        p = self.pos[:, None]
        self.window_valid = (key_pos[None] >= 0) & (key_pos[None] <= p) & (key_pos[None] > p - w)

    def cache(self, tensor):
        return tensor[self.slot: self.slot + 1]  # [1, ...]: every row reads the same sequence

    def put(self, tensor, index, values):
        tensor[self.slot, index] = values.to(tensor.dtype)

    def window(self, layer, kv):
        ring = self.state.ring[layer]
        keys = torch.cat((ring[self.slot], kv.to(ring.dtype)))[None]
        keep = min(self.count, ring.shape[1])  # only the last W rows survive in the ring
        self.put(ring, torch.remainder(self.pos[-keep:], ring.shape[1]), kv[-keep:])
        return keys, self.window_valid

    def close_groups(self, layer, ratio, u, g):
        """The open group's earlier rows, then this step's: every group that closes is pooled into its entry,
        the rows of a group still open stay in the tail slots (p mod r)."""
        tail_u, tail_g = self.state.tail_u[layer], self.state.tail_g[layer]
        held = self.start % ratio
        u = torch.cat((tail_u[self.slot, :held], u))
        g = torch.cat((tail_g[self.slot, :held], g))
        first = self.start // ratio
        closed = (self.start + self.count) // ratio - first
        rest = slice(closed * ratio, None)
        tail_u[self.slot, :u.shape[0] - closed * ratio] = u[rest]
        tail_g[self.slot, :g.shape[0] - closed * ratio] = g[rest]
        groups = slice(0, closed * ratio)
        pooled = _pool(g[groups].view(closed, ratio, -1), u[groups].view(closed, ratio, -1))
        return pooled, torch.arange(first, first + closed, device=u.device)


def _pool(g, u):
    """§6.2: per dim, the softmax over the group's positions of g weighs u (fp32, not rounded)."""
    return (torch.softmax(g, dim=-2) * u).sum(-2)
