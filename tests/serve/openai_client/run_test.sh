#!/usr/bin/env bash
# tests/serve/openai_client/run_test.sh — plans the tiny model at world 2, starts `dsv41-rt serve`, runs run.mjs (the openai npm client), drains with SIGTERM.
# Usage: run_test.sh DSV41C DSV41RT   (from ctest; node_modules comes from tools/setup.sh's `npm ci`)
set -euo pipefail
dsv41c=$1
dsv41rt=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
[[ -d "$here/node_modules/openai" ]] || { echo "no $here/node_modules/openai: run tools/setup.sh (it runs npm ci there)" >&2; exit 1; }
work=$(mktemp -d)
server=
cleanup() {
  [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$dsv41c" synth-pack --config "$root/fixtures/dsv41-tiny/config.json" --out "$work/tiny" --format release --seed 7 >/dev/null
"$dsv41c" plan "$work/tiny" --world 2 --rank all --out "$work/w2" --context 96 --prefill-rows 8 --quiet
"$dsv41rt" serve "$work/w2/rank0.fb" --model "$work/tiny" --tokenizer "$root/fixtures/dsv41-tiny/tokenizer.json" \
  --served-model-name tiny --port 0 2>"$work/server.log" &
server=$!
source "$root/tools/serve_port.sh"
port=$(wait_for_serve_port "$server" "$work/server.log" 300)
node "$here/run.mjs" "http://127.0.0.1:$port/v1" tiny chat
kill -TERM "$server"
wait "$server"
status=$?
server=
grep -q "stopped" "$work/server.log" || { echo "the server did not report a clean stop:" >&2; cat "$work/server.log" >&2; exit 1; }
exit $status
