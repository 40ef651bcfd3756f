# tests/torch_ref/torch_ref_test.py — tools/torchref on the CPU: stored-format codes, MoE paths, prefill segments and batched decode rows agree.
import math
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import torch  # noqa: E402

from torchref.config import load_config  # noqa: E402
from torchref.moe import PATHS, route  # noqa: E402
from torchref.pack import SyntheticWeights, e2m1_table, e4m3_table, ue8m0_table  # noqa: E402
from torchref.runner import TorchModel  # noqa: E402

TINY = os.path.join(ROOT, "fixtures", "dsv41-tiny", "config.json")


def relative(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


class FormatCodes(unittest.TestCase):
    def test_e4m3_codes(self):
        t = e4m3_table()
        for code, value in ((0x00, 0.0), (0x01, 2.0 ** -9), (0x08, 2.0 ** -6), (0x38, 1.0), (0x7E, 448.0),
                            (0xFE, -448.0), (0xB8, -1.0), (0x3C, 1.5)):
            self.assertEqual(t[code].item(), value, f"e4m3 code {code:#04x}")
        self.assertTrue(math.isnan(t[0x7F].item()) and math.isnan(t[0xFF].item()))

    def test_e2m1_and_ue8m0_codes(self):
        self.assertEqual(e2m1_table().tolist(), [0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6])
        u = ue8m0_table()
        self.assertEqual((u[127].item(), u[128].item(), u[120].item()), (1.0, 2.0, 2.0 ** -7))
        self.assertTrue(math.isnan(u[255].item()))


class TinyModel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.config = load_config(TINY)
        cls.model = TorchModel(cls.config, SyntheticWeights(7, "cpu"), True, "cpu", 64)

    def test_moe_paths_agree(self):
        n, w = self.model.n, self.model.weights.layers[0]
        x = torch.randn(5, self.config.hidden_size)
        experts, weight = route(n, w, x)
        grouped = PATHS["grouped"](n, w, x, experts, weight)
        for name in ("gathered", "dense"):
            self.assertLess(relative(PATHS[name](n, w, x, experts, weight), grouped), 1e-5, name)

    def test_prefill_in_segments_matches_whole(self):
        # 23 rows cross the window (16), close compressor groups and leave one open across the segment cut.
        tokens = torch.randint(0, self.config.vocab_size, (23,))
        whole = self.model.prefill(self.model.new_state(1), 0, 0, tokens)
        state = self.model.new_state(1)
        parts = torch.cat([self.model.prefill(state, 0, 0, tokens[:9]), self.model.prefill(state, 0, 9, tokens[9:])])
        self.assertLess(relative(parts, whole), 1e-5)

    def test_decode_rows_match_each_sequence_alone(self):
        prompts = [torch.randint(0, self.config.vocab_size, (n,)) for n in (19, 6)]
        steps = torch.randint(0, self.config.vocab_size, (2, 5))
        alone = []
        for s, prompt in enumerate(prompts):
            state = self.model.new_state(1)
            self.model.prefill(state, 0, 0, prompt)
            alone.append(torch.cat([self.model.decode(state, steps[s, k:k + 1], torch.tensor([len(prompt) + k]))
                                    for k in range(steps.shape[1])]))
        state = self.model.new_state(2)
        for s, prompt in enumerate(prompts):
            self.model.prefill(state, s, 0, prompt)
        together = [self.model.decode(state, steps[:, k], torch.tensor([len(p) + k for p in prompts]))
                    for k in range(steps.shape[1])]
        for s in range(2):
            self.assertLess(relative(torch.stack([t[s] for t in together]), alone[s]), 1e-5, f"sequence {s}")


if __name__ == "__main__":
    unittest.main()
