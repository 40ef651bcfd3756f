# tools/torchref/numerics.py — the fp32/bf16 rules of docs/model.md §2 as helpers: rounding points, fp32-accumulated products, RMSNorm, RoPE.
import torch
import torch.nn.functional as F

from .config import rope_frequencies


def fp32_out_products_supported(device):
    """Whether torch.mm/bmm take out_dtype=float32 for bf16 inputs (PyTorch 2.8+ on CUDA): a product whose
    fp32 result docs/model.md keeps is then not rounded to bf16 on the way out."""
    try:
        a = torch.ones(2, 2, dtype=torch.bfloat16, device=device)
        return torch.mm(a, a, out_dtype=torch.float32).dtype == torch.float32 and \
            torch.bmm(a[None], a[None], out_dtype=torch.float32).dtype == torch.float32
    except (TypeError, RuntimeError):
        return False


class Numerics:
    """`act` is what a rounded value is stored as: bfloat16 (served) or float32 (check mode, b(v) = v).
    Matrices are in `matrix` (bf16 when serving: every stored format decodes exactly into it)."""

    def __init__(self, config, check_mode, device, context):
        self.config = config
        self.act = torch.float32 if check_mode else torch.bfloat16
        self.matrix = self.act
        # The reference runs Sinkhorn in double in check mode (tests/reference/reference_hc.cpp).
        self.comb = torch.float64 if check_mode else torch.float32
        self.fp32_out = not check_mode and fp32_out_products_supported(device)
        # cos/sin of p·freq_i, the angle formed in float64 and rounded to fp32 (docs/model.md §3).
        positions = torch.arange(context, dtype=torch.float64, device=device)[:, None]
        self.rope_tables = {}
        for ratio in sorted({role.ratio for role in config.layers}):
            freqs = torch.tensor(rope_frequencies(config, ratio), dtype=torch.float64, device=device)
            angle = positions * freqs[None]
            self.rope_tables[ratio] = (angle.cos().float(), angle.sin().float())

    def b(self, v):
        return v.to(self.act)

    def mm_f32(self, x, w):
        """x·wᵀ accumulated and returned in fp32."""
        if w.dtype == torch.float32:
            return F.linear(x.float(), w)
        x = x.to(w.dtype)
        if self.fp32_out:
            return torch.mm(x.reshape(-1, x.shape[-1]), w.t(), out_dtype=torch.float32).view(*x.shape[:-1], -1)
        return F.linear(x, w).float()  # older PyTorch: one extra bf16 rounding (docs/perf.md says where)

    def mm_act(self, x, w):
        """b(x·wᵀ): the fp32-accumulated product rounded once."""
        return F.linear(x.to(w.dtype), w).to(self.act)

    def bmm_f32(self, a, b):
        if b.dtype == torch.float32:
            return torch.bmm(a.float(), b)
        a = a.to(b.dtype)
        return torch.bmm(a, b, out_dtype=torch.float32) if self.fp32_out else torch.bmm(a, b).float()

    def rms_norm(self, v, weight):
        v = v.float()
        return self.b(v * torch.rsqrt(v.square().mean(-1, keepdim=True) + self.config.rms_norm_eps) * weight)

    def rope(self, v, positions, ratio, inverse=False):
        """GPT-J interleaved rotation of the last R dims of v [..., n] (fp32 out); positions index v's
        first dim, the dims between broadcast."""
        cos, sin = self.rope_tables[ratio]
        cos, sin = cos[positions], sin[positions]
        if inverse:
            sin = -sin
        for _ in range(v.dim() - 2):
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        v = v.float()
        keep = v.shape[-1] - 2 * cos.shape[-1]
        even, odd = v[..., keep::2], v[..., keep + 1::2]
        rotated = torch.stack((even * cos - odd * sin, odd * cos + even * sin), dim=-1).flatten(-2)
        return torch.cat((v[..., :keep], rotated), dim=-1)
