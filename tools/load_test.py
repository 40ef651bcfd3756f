#!/usr/bin/env python3
"""tools/load_test.py — N concurrent streaming clients against a dsv41-rt server for a fixed time (stdlib only).

Each client loops: POST /v1/completions with stream=true, reads the SSE events, records the time to the
first token and the tokens received, and checks the stream ended with [DONE]. At the end it prints one
JSON object: requests done and failed, tokens, tokens/s over the whole run, time-to-first-token and
inter-token percentiles. A request that fails or ends without [DONE] counts as lost.

  python3 tools/load_test.py --url http://127.0.0.1:8000 --model dsv41-tiny --streams 64 --seconds 60
"""
import argparse
import json
import statistics
import threading
import time
import urllib.request


def one_request(url, model, prompt, max_tokens, seed):
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens, "stream": True,
                       "temperature": 0.8, "seed": seed}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    start = time.monotonic()
    first, stamps, done = None, [], False
    with urllib.request.urlopen(req, timeout=600) as resp:
        for raw in resp:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                done = True
                break
            event = json.loads(data)
            if event.get("choices") and event["choices"][0].get("text"):  # the final chunk's "" is no token
                now = time.monotonic()
                first = first if first is not None else now - start
                stamps.append(now)
    return first, stamps, done


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--model", required=True)
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--prompt", default=[5, 6, 7, 8, 9, 10, 11, 12], type=json.loads,
                    help="a JSON prompt: a string, or a list of token ids (default [5..12])")
    args = ap.parse_args()

    lock = threading.Lock()
    ttft, gaps, stats = [], [], {"done": 0, "lost": 0, "tokens": 0, "errors": []}
    deadline = time.monotonic() + args.seconds

    def client(index):
        seed = index * 1000
        while time.monotonic() < deadline:
            seed += 1
            try:
                first, stamps, done = one_request(args.url, args.model, args.prompt, args.max_tokens, seed)
            except Exception as error:  # noqa: BLE001 — every failure is counted and reported
                with lock:
                    stats["lost"] += 1
                    stats["errors"].append(repr(error)[:200])
                continue
            with lock:
                if not done:
                    stats["lost"] += 1
                    continue
                stats["done"] += 1
                stats["tokens"] += len(stamps)
                if first is not None:
                    ttft.append(first)
                gaps.extend(b - a for a, b in zip(stamps, stamps[1:]))

    begin = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - begin

    def pct(values, p):
        return round(statistics.quantiles(values, n=100)[p - 1], 4) if len(values) >= 2 else None

    print(json.dumps({
        "streams": args.streams, "seconds": round(wall, 1), "requests_done": stats["done"],
        "requests_lost": stats["lost"], "tokens": stats["tokens"], "tokens_per_s": round(stats["tokens"] / wall, 1),
        "ttft_s": {"p50": pct(ttft, 50), "p90": pct(ttft, 90), "p99": pct(ttft, 99)},
        "inter_token_s": {"p50": pct(gaps, 50), "p90": pct(gaps, 90), "p99": pct(gaps, 99)},
        "errors": stats["errors"][:5]}, indent=1))
    return 0 if stats["lost"] == 0 and stats["done"] > 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
