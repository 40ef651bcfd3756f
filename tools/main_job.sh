#!/usr/bin/env bash
# tools/main_job.sh — sets up and builds, plans the release model at world 4 for h200 (header-only pack,
# every kernel variant compiled with NVRTC),
# then plans the tiny model at world 4 and generates a few tokens with the CPU backend (ranks as threads),
# then serves it (`dsv41-rt serve`), asks one chat question with curl, and stops it with SIGTERM (a drain).
#
# Prints each rank's share and memory, the generated token ids, then the chat reply. Everything it writes goes under work/ (gitignored).
# Environment: as tools/setup.sh (DSV41_BUILD_DIR, ...), plus DSV41_WORK_DIR (default work).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${DSV41_BUILD_DIR:-build}
work_dir=${DSV41_WORK_DIR:-work}
dsv41c="$build_dir/compiler/dsv41c"
dsv41rt="$build_dir/runtime/dsv41-rt"

say() { echo "==> main job: $*"; }

tools/setup.sh

say "synth-pack: header-only release pack in $work_dir/dsv41-release"
"$dsv41c" synth-pack --config fixtures/dsv41-release/config.json --out "$work_dir/dsv41-release" \
  --headers-only --format release --shards 8

say "aot-needs: the kernel variants each rank of world 4 launches, and their union"
"$dsv41c" aot-needs "$work_dir/dsv41-release" --world 4 | grep -E '^(rank|union)'

say "plan: release model, world 4, every rank, target h200 (kernels compiled with NVRTC) -> $work_dir/programs-w4"
"$dsv41c" plan "$work_dir/dsv41-release" --world 4 --rank all --out "$work_dir/programs-w4" --target h200

say "synth-pack: tiny model with real weights in $work_dir/dsv41-tiny"
"$dsv41c" synth-pack --config fixtures/dsv41-tiny/config.json --out "$work_dir/dsv41-tiny" --format release --seed 7

say "plan: tiny model, world 4 (uneven expert and vocabulary splits) -> $work_dir/tiny-w4"
"$dsv41c" plan "$work_dir/dsv41-tiny" --world 4 --rank all --out "$work_dir/tiny-w4" --context 512 \
  --prefill-rows 64 --quiet

say "generate: 8 greedy tokens from a 24-token prompt on the CPU backend, 4 ranks as threads"
"$dsv41rt" generate "$work_dir/tiny-w4" --model "$work_dir/dsv41-tiny" --backend cpu --max-tokens 8 --ignore-eos \
  --prompt-ids 5,17,29,41,53,65,77,89,101,113,125,137,149,161,173,185,197,209,221,233,245,257,269,281

say "serve: the tiny model at world 4 (4 ranks as threads) on a free loopback port"
"$dsv41rt" serve "$work_dir/tiny-w4/rank0.fb" --model "$work_dir/dsv41-tiny" --tokenizer fixtures/dsv41-tiny/tokenizer.json \
  --served-model-name dsv41-tiny --port 0 2>"$work_dir/serve.log" &
server=$!
source tools/serve_port.sh
port=$(wait_for_serve_port "$server" "$work_dir/serve.log") || { kill "$server" 2>/dev/null; exit 1; }

say "curl: one chat request to http://127.0.0.1:$port/v1/chat/completions"
curl -sS --fail-with-body "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"model": "dsv41-tiny", "messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 16, "seed": 1}'
echo

say "SIGTERM: the server drains and stops"
kill -TERM "$server"
wait "$server"
cat "$work_dir/serve.log"

say "done"
