# tools/torchref/runner.py — prefill and greedy decode over the model, eager or with the decode step captured in a CUDA graph.
import torch

from .model import forward
from .numerics import Numerics
from .state import DecodeRows, PrefillRows, State
from .weights import ModelWeights


class TorchModel:
    def __init__(self, config, source, check_mode, device, context):
        self.config, self.device, self.context = config, device, context
        self.n = Numerics(config, check_mode, device, context)
        self.weights = ModelWeights(config, source, self.n.matrix)

    def new_state(self, slots, context=None):
        return State(self.config, slots, context or self.context, self.n.act, self.device)

    @torch.no_grad()
    def prefill(self, state, slot, start, tokens, moe_path="grouped"):
        """Logits of every row of `tokens` (consecutive positions from `start` of sequence `slot`)."""
        rows = PrefillRows(state, slot, start, tokens.shape[0], self.device)
        return forward(self.n, self.weights, rows, tokens, moe_path)

    @torch.no_grad()
    def decode(self, state, tokens, positions, moe_path=None):
        """One row per slot of `state`: token t at positions[t] of sequence t. The MoE takes a path a CUDA
        graph can capture on the GPU; the CPU never captures, and its grouped path is the fastest there."""
        if moe_path is None:
            moe_path = "auto" if self.device.startswith("cuda") else "grouped"
        return forward(self.n, self.weights, DecodeRows(state, positions), tokens, moe_path)


class DecodeGraph:
    """The decode step of one state captured once, replayed with new tokens and positions copied into its
    static inputs. Capture happens at the first step, after one eager warm-up run of that same step: every
    state write is addressed by position, so running a step twice leaves the same state."""

    def __init__(self, model, state):
        self.model, self.state, self.graph = model, state, None
        self.tokens = torch.zeros(state.slots, dtype=torch.long, device=model.device)
        self.positions = torch.zeros(state.slots, dtype=torch.long, device=model.device)

    @torch.no_grad()
    def step(self, tokens, positions):
        self.tokens.copy_(tokens)
        self.positions.copy_(positions)
        if self.graph is None:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.model.decode(self.state, self.tokens, self.positions)
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.logits = self.model.decode(self.state, self.tokens, self.positions)
        self.graph.replay()
        return self.logits


def greedy(model, prompt, steps, use_graph, forced=None):
    """Prefill `prompt`, then `steps` decode steps; each step's input is the argmax of the previous row
    (ties to the lower id) or, with `forced`, the given token. Returns (logits rows, generated ids)."""
    device = model.device
    state = model.new_state(1, len(prompt) + steps)
    rows = [model.prefill(state, 0, 0, torch.tensor(prompt, dtype=torch.long, device=device))]
    graph = DecodeGraph(model, state) if use_graph else None
    generated = [int(torch.argmax(rows[0][-1]))]
    for k in range(steps):
        token = forced[k] if forced is not None else generated[-1]
        tokens = torch.tensor([token], dtype=torch.long, device=device)
        positions = torch.tensor([len(prompt) + k], dtype=torch.long, device=device)
        logits = graph.step(tokens, positions) if graph else model.decode(state, tokens, positions)
        rows.append(logits.clone())
        generated.append(int(torch.argmax(logits[0])))
    return torch.cat(rows).float(), generated
