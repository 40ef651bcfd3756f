# tools/torchref/pack.py — reads a pack's safetensors shards and decodes BF16, F32, FP8 e4m3 (UE8M0 32x32 tiles) and FP4 e2m1 (UE8M0 per 32) to fp32.
import glob
import json
import mmap
import os
import struct

import torch

RAW_DTYPES = {"BF16": torch.bfloat16, "F32": torch.float32, "F8_E4M3": torch.uint8, "I8": torch.uint8,
              "F8_E8M0": torch.uint8}


def e4m3_table():
    """All 256 e4m3 codes as fp32 (OCP OFP8: bias 7, subnormals, S.1111.111 is NaN, no infinities)."""
    out = []
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exponent, mantissa = (code >> 3) & 0xF, code & 0x7
        if exponent == 0xF and mantissa == 0x7:
            out.append(float("nan"))
        elif exponent == 0:
            out.append(sign * mantissa / 8.0 * 2.0 ** -6)
        else:
            out.append(sign * (1.0 + mantissa / 8.0) * 2.0 ** (exponent - 7))
    return torch.tensor(out, dtype=torch.float32)


def e2m1_table():
    """The 16 FP4 e2m1 codes (bit 3 the sign) as fp32."""
    magnitudes = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    return torch.tensor(magnitudes + [-m for m in magnitudes], dtype=torch.float32)


def ue8m0_table():
    """UE8M0 scale bytes: 2^(code-127); 0xFF is NaN (OCP MX)."""
    return torch.tensor([2.0 ** (c - 127) for c in range(255)] + [float("nan")], dtype=torch.float32)


class PackReader:
    """Tensor name -> (shard, dtype, shape, byte range) from every *.safetensors header in a folder; the
    bytes are memory-mapped and copied to `device` on request, where they are decoded."""

    def __init__(self, model_dir, device):
        self.dir, self.device, self.entries, self.maps, self.paths = model_dir, device, {}, [], []
        shards = sorted(glob.glob(os.path.join(model_dir, "*.safetensors")))
        if not shards:
            raise ValueError(f"{model_dir}: no *.safetensors shard (write one with `dsv41c synth-pack`)")
        for path in shards:
            with open(path, "rb") as f:
                header_bytes = struct.unpack("<Q", f.read(8))[0]
                header = json.loads(f.read(header_bytes))
                data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)  # writable: torch.frombuffer wants that
            self.maps.append(data)
            self.paths.append(path)
            for name, entry in header.items():
                if name != "__metadata__":
                    begin, end = entry["data_offsets"]
                    self.entries[name] = (len(self.maps) - 1, entry["dtype"], list(entry["shape"]),
                                          8 + header_bytes + begin, end - begin)
        self.tables = {name: fn().to(device) for name, fn in
                       (("e4m3", e4m3_table), ("e2m1", e2m1_table), ("ue8m0", ue8m0_table))}

    def raw(self, name):
        if name not in self.entries:
            raise KeyError(f"{name}: missing from the pack in {self.dir}")
        shard, dtype, shape, offset, size = self.entries[name]
        if dtype not in RAW_DTYPES:
            raise ValueError(f"{name}: dtype {dtype} is not one this reader decodes ({', '.join(RAW_DTYPES)})")
        element = torch.tensor([], dtype=RAW_DTYPES[dtype]).element_size()
        if offset + size > len(self.maps[shard]):
            raise ValueError(f"{name}: bytes {offset}..{offset + size} lie past the end of {self.paths[shard]} "
                             f"({len(self.maps[shard])} bytes; a --headers-only pack?)")
        flat = torch.frombuffer(self.maps[shard], dtype=RAW_DTYPES[dtype], count=size // element, offset=offset)
        return dtype, shape, flat.to(self.device).view(shape)

    def get(self, name, shape):
        """The tensor at its logical `shape` ([out, in] for a matrix), decoded to fp32 on the device."""
        dtype, stored, data = self.raw(name)
        rows, cols = (shape[0], shape[1]) if len(shape) == 2 else (1, shape[0])
        if dtype in ("BF16", "F32"):
            if stored != list(shape):
                raise ValueError(f"{name}: shape {stored}, expected {list(shape)}")
            return data.float()
        scale_name = name[: name.rfind(".weight")] + ".scale"
        if dtype == "F8_E4M3":
            expect, scale_shape = [rows, cols], [(rows + 31) // 32, (cols + 31) // 32]
        else:  # I8: FP4 pairs, element 0 in the low nibble
            expect, scale_shape = [rows, cols // 2], [rows, cols // 32]
        if stored != expect:
            raise ValueError(f"{name}: {dtype} shape {stored}, expected {expect} for logical {list(shape)}")
        scale_dtype, scale_stored, scale = self.raw(scale_name)
        if scale_dtype != "F8_E8M0" or scale_stored != scale_shape:
            raise ValueError(f"{scale_name}: {scale_dtype} {scale_stored}, expected F8_E8M0 {scale_shape}")
        scale = self.tables["ue8m0"][scale.long()]
        if dtype == "F8_E4M3":
            values = self.tables["e4m3"][data.long()]
            scale = scale.repeat_interleave(32, 0)[:rows].repeat_interleave(32, 1)[:, :cols]
        else:
            codes = torch.stack((data & 0xF, data >> 4), dim=-1).reshape(rows, cols)
            values = self.tables["e2m1"][codes.long()]
            scale = scale.repeat_interleave(32, 1)
        return (values * scale).view(shape)


class SyntheticWeights:
    """Seeded random weights at each tensor's logical shape, for timing configs that have no pack
    (the release shapes); the tokens they produce mean nothing."""

    def __init__(self, seed, device):
        self.device = device
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)

    def get(self, name, shape):
        def normal(std, mean=0.0):
            return torch.randn(shape, generator=self.generator, device=self.device) * std + mean

        if name.endswith("norm.weight"):
            return normal(0.05, 1.0)
        if name.endswith(("_base", "_scale", "attn_sink", "gate.bias")):
            return normal(0.1)
        if name.endswith("_fn"):
            return normal(0.02)
        if len(shape) == 2:
            return normal(shape[1] ** -0.5)
        return normal(1.0)
