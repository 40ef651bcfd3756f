#!/usr/bin/env python3
# tools/torch_ref.py — DeepSeek-V4.1 (docs/model.md) as a PyTorch user would write it: greedy decode, --compare with dsv41's logits, --time.
"""Runs the model of docs/model.md in PyTorch on a pack written by `dsv41c synth-pack` (bf16 or release
FP8/FP4 format, dequantized once at load), world 1: a prefill of --prompt-ids, then greedy decode steps until
--max-tokens ids are generated (argmax, ties to the lower id, as `dsv41-rt generate --ignore-eos`), eager and (on
CUDA) with the decode step captured in a CUDA graph. Prints the generated ids.

Examples:
  dsv41c synth-pack --config fixtures/dsv41-tiny/config.json --out /tmp/tiny --format release
  dsv41c plan /tmp/tiny --world 1 --context 64 --prefill-rows 8 --activations f32 --out /tmp/tiny-f32
  dsv41-rt generate /tmp/tiny-f32 --model /tmp/tiny --prompt-ids 5,6,7 --max-tokens 8 --ignore-eos \\
      --all-logits --logits-out /tmp/tiny-f32.logits
  tools/torch_ref.py /tmp/tiny --check-mode --prompt-ids 5,6,7 --compare /tmp/tiny-f32.logits
  tools/torch_ref.py --config fixtures/dsv41-bench/config.json --synthetic 1 --time --json

--compare reads dsv41-rt's --logits-out file (float32 rows of vocab_size values; with --all-logits every
prompt row, then one row per decode step), feeds the decode steps the tokens dsv41 chose (the argmax of its
previous row), and prints max|diff| / max|logit| per row. In --check-mode (no bf16 rounding anywhere; plan
with --activations f32) two implementations agree to fp32 accuracy, so it fails (exit 1) when any row exceeds
--tolerance, 1e-3 by default. In the bf16 mode the roundings amplify fp32 summation-order differences
(docs/model.md §2: ~1 % of max|logit|, up to ~20 % at rows where an expert choice flips), so there it fails when
the median row exceeds --tolerance (default 5e-2) or the argmax agrees on fewer than 75 % of the rows.
The number of decode steps comes from the file (its rows less the prompt's); --max-tokens is ignored then.

--time (CUDA) starts every case from caches filled with random values as if --fill positions were processed:
decode steps at each of --rows (one sequence per row; median of --iters CUDA-graph replays, and of a few eager
steps) and one --prefill-rows prefill from position --fill (eager). It prints ms/step and tokens/s per case;
--json prints one object instead: {"fill", "decode": [{"rows", "graph_ms", "graph_min_ms", "graph_max_ms",
"eager_ms", "graph_tokens_per_s", "eager_tokens_per_s"}], "prefill": {"rows", "eager_ms", "tokens_per_s"},
"config", "mode", "torch", "gpu", "fp32_out_products"}.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from torchref.config import load_config  # noqa: E402
from torchref.pack import PackReader, SyntheticWeights  # noqa: E402
from torchref.runner import TorchModel, greedy  # noqa: E402
from torchref.timing import time_model  # noqa: E402

CHECK_TOLERANCE, BF16_MEDIAN_TOLERANCE, BF16_MIN_TOP1 = 1e-3, 5e-2, 0.75


def parse_args(argv):
    p = argparse.ArgumentParser(prog="torch_ref.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model_dir", nargs="?", help="pack folder (config.json + *.safetensors from dsv41c synth-pack)")
    p.add_argument("--config", help="config.json to run with --synthetic weights instead of a pack")
    p.add_argument("--synthetic", type=int, metavar="SEED", help="random weights from SEED (timing only)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cuda or cpu")
    p.add_argument("--check-mode", action="store_true", help="fp32 everywhere, no bf16 rounding (docs/model.md §2)")
    p.add_argument("--prompt-ids", default="5,6,7", help="prompt token ids, comma separated")
    p.add_argument("--max-tokens", type=int, default=8, help="ids to generate (the prompt's next, then one a step)")
    p.add_argument("--eager", action="store_true", help="no CUDA graph (always so on the CPU)")
    p.add_argument("--logits-out", help="write the logits as dsv41-rt --all-logits does (float32 rows: every "
                   "prompt row, then each decode step)")
    p.add_argument("--compare", metavar="LOGITS", help="dsv41-rt generate --all-logits --logits-out file")
    p.add_argument("--tolerance", type=float, help=f"per-row max|diff|/max|logit| limit for --compare "
                   f"(default {CHECK_TOLERANCE} with --check-mode; bf16: the median row, default {BF16_MEDIAN_TOLERANCE})")
    p.add_argument("--time", action="store_true", help="time decode steps and a prefill (CUDA only)")
    p.add_argument("--rows", default="1,2,4,8,16", help="--time: decode row counts (concurrent sequences)")
    p.add_argument("--prefill-rows", type=int, default=2048, help="--time: prefill rows (0: none)")
    p.add_argument("--fill", type=int, default=4096, help="--time: positions already in the caches")
    p.add_argument("--iters", type=int, default=50, help="--time: replays per decode case")
    p.add_argument("--json", action="store_true", help="--time: print the results as one JSON object")
    args = p.parse_args(argv)
    if bool(args.model_dir) == bool(args.config):
        p.error("give a pack folder MODEL_DIR, or --config with --synthetic SEED")
    if args.config and args.synthetic is None:
        p.error("--config needs --synthetic SEED (a config has no weights)")
    if args.time and not args.device.startswith("cuda"):
        p.error("--time measures CUDA graphs and events: it needs --device cuda")
    return args


def read_reference(path, vocab):
    size = os.path.getsize(path)
    if size == 0 or size % (4 * vocab):
        raise ValueError(f"{path}: {size} bytes is not a whole number of float32 rows of vocab_size {vocab}")
    with open(path, "rb") as f:
        return torch.frombuffer(bytearray(f.read()), dtype=torch.float32).view(-1, vocab)


def compare(model, args, prompt, log):
    reference = read_reference(args.compare, model.config.vocab_size)
    steps = reference.shape[0] - len(prompt)
    if steps < 0:
        raise ValueError(f"{args.compare}: {reference.shape[0]} rows, fewer than the {len(prompt)} prompt rows "
                         "(was it written with --all-logits?)")
    forced = [int(torch.argmax(reference[len(prompt) - 1 + k])) for k in range(steps)]
    tolerance = compare_tolerance(args)
    passes = [("eager", False)] + ([("graph", True)] if model.device.startswith("cuda") and not args.eager else [])
    ok = True
    for name, use_graph in passes:
        ours, _ = greedy(model, prompt, steps, use_graph, forced)
        ours = ours.cpu()
        ratios = ((ours - reference).abs().amax(-1) / reference.abs().amax(-1)).tolist()
        agree = (ours.argmax(-1) == reference.argmax(-1)).sum().item()
        for row, ratio in enumerate(ratios):
            kind = f"prompt {row}" if row < len(prompt) else f"step {row - len(prompt)}"
            log(f"{name} {kind:>10}: max|diff|/max|logit| = {ratio:.3e}")
        worst, median = max(ratios), sorted(ratios)[len(ratios) // 2]
        log(f"{name}: {len(ratios)} rows, worst {worst:.3e}, median {median:.3e}, top-1 agreement "
            f"{agree}/{len(ratios)}")
        if args.check_mode:
            ok = ok and worst <= tolerance
        else:
            ok = ok and median <= tolerance and agree >= BF16_MIN_TOP1 * len(ratios)
    return ok


def compare_tolerance(args):
    if args.tolerance is not None:
        return args.tolerance
    return CHECK_TOLERANCE if args.check_mode else BF16_MEDIAN_TOLERANCE


def main(argv):
    args = parse_args(argv)
    log = (lambda line: print(line, file=sys.stderr)) if args.json else print
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 products stay fp32 (docs/model.md §2)
    torch.backends.cudnn.allow_tf32 = False
    try:  # keep bf16 products' split-K sums in fp32
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    except (AssertionError, AttributeError):  # an old PyTorch without the switch
        pass
    prompt = [int(t) for t in args.prompt_ids.split(",") if t.strip()]
    config = load_config(args.model_dir or args.config)
    for t in prompt:
        if not 0 <= t < config.vocab_size:
            raise SystemExit(f"--prompt-ids: token {t} is outside the vocabulary 0..{config.vocab_size - 1}")
    steps = max(args.max_tokens - 1, 0)
    if args.compare:
        steps = os.path.getsize(args.compare) // (4 * config.vocab_size) - len(prompt)
    context = len(prompt) + max(steps, 0) + 1
    if args.time:
        context = max(context, args.fill + max(args.prefill_rows, 1) + 1)
    source = PackReader(args.model_dir, args.device) if args.model_dir else SyntheticWeights(args.synthetic, args.device)
    started = time.time()
    model = TorchModel(config, source, args.check_mode, args.device, context)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    mode = "check mode (fp32)" if args.check_mode else "bf16"
    log(f"torch {torch.__version__} on {args.device}: {config.source}, {mode}, loaded in {time.time() - started:.1f} s"
        f"{', fp32-out bf16 products' if model.n.fp32_out else ''}")
    if args.time:
        rows = [int(r) for r in args.rows.split(",")]
        results = time_model(model, rows, args.prefill_rows, args.fill, args.iters, 1, log)
        results.update(config=config.source, mode=mode, torch=torch.__version__,
                       gpu=torch.cuda.get_device_name(), fp32_out_products=model.n.fp32_out)
        if args.json:
            print(json.dumps(results))
        return 0
    if args.compare:
        ok = compare(model, args, prompt, log)
        limit = f"every row <= {compare_tolerance(args):g}" if args.check_mode else \
            f"median row <= {compare_tolerance(args):g}, top-1 >= {BF16_MIN_TOP1:.0%}"
        log(f"compare: {'PASS' if ok else 'FAIL'} ({limit})")
        return 0 if ok else 1
    logits, generated = greedy(model, prompt, steps, args.device.startswith("cuda") and not args.eager)
    if args.logits_out:
        with open(args.logits_out, "wb") as f:  # float32 little-endian rows, as dsv41-rt writes them
            f.write(logits.cpu().contiguous().numpy().tobytes())
    print(" ".join(str(t) for t in generated[:args.max_tokens]))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (OSError, ValueError, KeyError) as error:  # bad inputs: one line naming the input, not a trace
        print(f"torch_ref.py: error: {error}", file=sys.stderr)
        sys.exit(2)
