#!/usr/bin/env bash
# tools/regen_goldens.sh — the only writer of fixtures/golden/: call-list fingerprints of the release
# header-only pack at worlds 1-4 (every rank), the kernel variants each rank needs
# (aot-needs-release-w{1..4}.json, target h200), and the readable call lists of the tiny fixture at
# world 2 (calls-tiny-w2.txt). Run it when an emitter or kernel-signature change is intended, and
# review the diff: every changed line is a phase, a call or a variant key that changed.
# (The tokenizer goldens, fixtures/golden/tokenizer-*.jsonl, come from HF tokenizers through
# tools/tokenizer/make_tokenizers.js, which needs node and the npm registry: see docs/text.md.)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DSV41_BUILD_DIR:-build}
dsv41c="$build/compiler/dsv41c"
[ -x "$dsv41c" ] || { echo "regen_goldens: $dsv41c missing; run tools/setup.sh first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$dsv41c" synth-pack --config fixtures/dsv41-release/config.json --out "$work/pack" --headers-only \
  --format release --shards 8 >/dev/null 2>&1
out=fixtures/golden/fingerprints-release.txt
{
  echo "# Call-list fingerprints of the release config (header-only release-format pack, 8 shards),"
  echo "# default settings, target none. Written by tools/regen_goldens.sh; do not edit by hand."
  echo "# Engram is emitted (engram_hash, engram_lookback, engram_gather, linear, engram_gate); the pack has"
  echo "# no tokenizer.json, so the hash calls carry an empty token map (docs/model.md §8)."
  echo "# Line: w<world> rank<rank> <phase> <hash>"
  for world in 1 2 3 4; do
    "$dsv41c" plan "$work/pack" --world "$world" --rank all --out "$work/w$world" --quiet
    for ((rank = 0; rank < world; rank++)); do
      "$dsv41c" fingerprints "$work/w$world/rank$rank.fb" | sed "s/^/w$world rank$rank /"
    done
  done
} > "$out"
echo "wrote $out ($(grep -vc '^#' "$out") phases)"
for world in 1 2 3 4; do
  {
    echo "# Kernel variants each rank of world $world needs: dsv41c aot-needs of the release config"
    echo "# (header-only release-format pack, 8 shards), default settings, --target h200 --json."
    echo "# Engram is emitted: its kernels (engram_*) are among the variants."
    echo "# Written by tools/regen_goldens.sh; do not edit by hand. The JSON follows these lines."
    "$dsv41c" aot-needs "$work/pack" --world "$world" --target h200 --json
  } > "fixtures/golden/aot-needs-release-w$world.json"
done
echo "wrote fixtures/golden/aot-needs-release-w{1..4}.json"

# The readable golden: every call of the tiny fixture at world 2, both ranks. The settings keep it
# short (one decode bucket, one prefill size); tests/golden/call_list_golden_test.cpp plans the same.
"$dsv41c" synth-pack --config fixtures/dsv41-tiny/config.json --out "$work/tiny" --headers-only \
  --format release --shards 2 >/dev/null 2>&1
"$dsv41c" plan "$work/tiny" --world 2 --rank all --decode-rows 1 --prefill-rows 16 --out "$work/tiny-w2" --quiet
out=fixtures/golden/calls-tiny-w2.txt
{
  echo "# Call lists of the tiny config (header-only release-format pack, 2 shards) at world 2, settings"
  echo "# --decode-rows 1 --prefill-rows 16, the rest default (context: the model's 4096), target none."
  echo "# Written by tools/regen_goldens.sh (dsv41c fingerprints --calls); do not edit by hand."
  echo "# Line: per phase 'phase NAME rows= arena= calls=', then per call its index, op, constants,"
  echo "# '|', arguments by role (buffer:dtype[shape]@offset, state:..., weights by name[local shape]),"
  echo "# '| launch' grid, block and dynamic shared memory."
  for rank in 0 1; do
    echo "rank $rank"
    "$dsv41c" fingerprints --calls "$work/tiny-w2/rank$rank.fb"
  done
} > "$out"
echo "wrote $out ($(grep -c '^  ' "$out") calls)"
