#!/usr/bin/env bash
# tests/torch_ref/compare_test.sh — tools/torch_ref.py --check-mode --compare against `dsv41-rt generate` logits of the tiny release-format pack (CPU backend), and a perturbed copy it must refuse.
#   usage: compare_test.sh DSV41C DSV41_RT PYTHON
set -euo pipefail
dsv41c=$1 rt=$2 python=$3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 20 prompt rows pass the window (16), close ratio-2 groups, truncate the indexer's top-k (8) and let the
# candidate source's blocks (4 of 4 entries) mask the later index source; 4 decode steps follow.
prompt=5,6,7,100,200,300,400,500,600,700,800,900,1000,11,12,13,14,15,16,17
"$dsv41c" synth-pack --config "$root/fixtures/dsv41-tiny/config.json" --out "$work/tiny" --format release --seed 3 2>/dev/null
"$dsv41c" plan "$work/tiny" --world 1 --context 32 --prefill-rows 8 --activations f32 --out "$work/plan" >/dev/null 2>&1
"$rt" generate "$work/plan" --model "$work/tiny" --prompt-ids $prompt --max-tokens 5 --ignore-eos --all-logits \
  --logits-out "$work/dsv41.logits" >/dev/null
"$python" "$root/tools/torch_ref.py" "$work/tiny" --device cpu --check-mode --prompt-ids $prompt \
  --compare "$work/dsv41.logits" | tail -2
# One logit moved by 1 % of the largest must fail the check-mode bound (1e-3).
"$python" - "$work/dsv41.logits" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
values = struct.unpack(f"<{len(data) // 4}f", data)
top = max(abs(v) for v in values)
struct.pack_into("<f", data, 4 * 1300, values[1300] + 0.01 * top)
open(sys.argv[1], "wb").write(data)
PY
if "$python" "$root/tools/torch_ref.py" "$work/tiny" --device cpu --check-mode --prompt-ids $prompt \
     --compare "$work/dsv41.logits" >"$work/perturbed.txt"; then
  echo "FAIL: a logit moved by 1 % of max|logit| passed the check-mode compare" >&2
  tail -3 "$work/perturbed.txt" >&2
  exit 1
fi
echo "perturbed logits refused: $(tail -1 "$work/perturbed.txt")"
