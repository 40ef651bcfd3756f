#!/usr/bin/env bash
# tools/regen_goldens.sh — the only writer of fixtures/golden/: call-list fingerprints of the release
# header-only pack at worlds 1-4 (every rank), and the kernel variants each rank needs
# (aot-needs-release-w{1..4}.json, target h200). Run it when an emitter or kernel-signature change is
# intended, and review the diff: every changed line is a phase whose calls, or a variant whose key, changed.
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
  "$dsv41c" aot-needs "$work/pack" --world "$world" --target h200 --json > "fixtures/golden/aot-needs-release-w$world.json"
done
echo "wrote fixtures/golden/aot-needs-release-w{1..4}.json"
