#!/usr/bin/env bash
# tools/bench_replan.sh — cold against warm kernel cache: times `dsv41c plan --target h200` of one rank
# with an empty cache (every variant compiled by NVRTC), then the same plan again (every cubin from
# the cache), and the same plan with --target none (no kernels: the planning floor). Prints each
# median of 3 and the ratios. Used for docs/perf.md.
#
#   tools/bench_replan.sh            the tiny fixture (world 2, rank 0) and the release (world 4, rank 0)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DSV41_BUILD_DIR:-build}
dsv41c="$build/compiler/dsv41c"
[ -x "$dsv41c" ] || { echo "bench_replan: $dsv41c missing; run tools/setup.sh first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

bench() {  # NAME PACK WORLD PLAN_FLAGS...
  local name=$1 pack=$2 world=$3
  shift 3
  local plan=("$dsv41c" plan "$pack" --world "$world" --rank 0 --out "$work/out" --quiet "$@")
  local cold=() warm=() none=()
  for i in 1 2 3; do
    rm -rf "$work/cache"
    cold+=("$(seconds "${plan[@]}" --target h200 --cache "$work/cache")")
    warm+=("$(seconds "${plan[@]}" --target h200 --cache "$work/cache")")
    none+=("$(seconds "${plan[@]}" --target none)")
  done
  local c w n
  c=$(median3 "${cold[@]}"); w=$(median3 "${warm[@]}"); n=$(median3 "${none[@]}")
  printf '%-28s cold %6.3f s  warm %6.3f s  (%5.1fx)  target none %6.3f s  kernel step cold %6.3f s, warm %6.3f s\n' \
    "$name" "$c" "$w" "$(echo "$c / $w" | bc -l)" "$n" "$(echo "$c - $n" | bc -l)" "$(echo "$w - $n" | bc -l)"
  "$dsv41c" inspect "$work/out/rank0.fb" | grep kernels
}

"$dsv41c" synth-pack --config fixtures/dsv41-tiny/config.json --out "$work/tiny" --headers-only --format bf16 >/dev/null 2>&1
"$dsv41c" synth-pack --config fixtures/dsv41-release/config.json --out "$work/release" --headers-only --format release \
  --shards 8 >/dev/null 2>&1
echo "nvrtc jobs: $(nproc) hardware threads; $(date -u +%F)"
bench "tiny, world 2, rank 0" "$work/tiny" 2 --context 4096
bench "release, world 4, rank 0" "$work/release" 4
