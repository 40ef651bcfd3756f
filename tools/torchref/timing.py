# tools/torchref/timing.py — times decode steps (CUDA graph and eager) at several row counts and one long prefill, on random state.
import statistics

import torch


def _median_ms(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times)


def time_model(model, rows_list, prefill_rows, fill, iters, seed, log):
    """Every case starts from caches filled with random values as if `fill` positions were processed
    (prefill and decode cost depend on what they read, not on what it means); one random token per row."""
    from .runner import DecodeGraph

    generator = torch.Generator(device=model.device)
    generator.manual_seed(seed)
    vocab = model.config.vocab_size
    results = {"fill": fill, "decode": [], "prefill": None}
    for rows in rows_list:
        state = model.new_state(rows, fill + 1)
        state.randomize(seed + rows)
        tokens = torch.randint(0, vocab, (rows,), generator=generator, device=model.device)
        positions = torch.full((rows,), fill, dtype=torch.long, device=model.device)
        graph = DecodeGraph(model, state)
        graph_ms, graph_lo, graph_hi = _median_ms(lambda: graph.step(tokens, positions), iters, 3)
        eager_ms, _, _ = _median_ms(lambda: model.decode(state, tokens, positions), max(3, iters // 10), 1)
        del graph
        case = {"rows": rows, "graph_ms": graph_ms, "graph_min_ms": graph_lo, "graph_max_ms": graph_hi,
                "eager_ms": eager_ms, "graph_tokens_per_s": rows * 1000.0 / graph_ms,
                "eager_tokens_per_s": rows * 1000.0 / eager_ms}
        results["decode"].append(case)
        log(f"decode rows {rows:>2}: graph {graph_ms:8.3f} ms/step ({case['graph_tokens_per_s']:9.1f} tok/s), "
            f"eager {eager_ms:8.3f} ms/step ({case['eager_tokens_per_s']:9.1f} tok/s)")
        del state
        torch.cuda.empty_cache()
    if prefill_rows > 0:
        state = model.new_state(1, fill + prefill_rows)
        state.randomize(seed)
        tokens = torch.randint(0, vocab, (prefill_rows,), generator=generator, device=model.device)
        ms, _, _ = _median_ms(lambda: model.prefill(state, 0, fill, tokens), max(3, iters // 20), 1)
        results["prefill"] = {"rows": prefill_rows, "eager_ms": ms, "tokens_per_s": prefill_rows * 1000.0 / ms}
        log(f"prefill {prefill_rows} rows: eager {ms:9.3f} ms ({prefill_rows * 1000.0 / ms:9.1f} tok/s)")
    return results
