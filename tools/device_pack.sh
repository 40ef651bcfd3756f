#!/usr/bin/env bash
# tools/device_pack.sh — packs what a GPU benchmark run of docs/perf.md needs into one folder that travels to
# a GPU machine without the build: stripped binaries, the shared libraries they need that a plain
# Ubuntu + CUDA machine lacks, and the two bench programs planned with this tree's compiler and kernels.
#
#   tools/device_pack.sh OUT            binaries from $DSV41_BUILD_DIR (default build), programs planned with them
#   SLIM=1 tools/device_pack.sh OUT     dsv41-rt and the programs only (a baseline beside a full pack)
#
# OUT gets: bin/ (dsv41-rt; with SLIM unset also gpu_op_tests, cuda_backend_tests), lib/ (shared libraries
# outside glibc, libstdc++ and CUDA), bench-w1/rank0.fb.gz (fixtures/dsv41-bench, release formats, world 1,
# 16 slots), rel-w4/rank0.fb.gz (the release config with engram_layer_ids emptied, world 4 rank 0: the CUDA
# backend refuses Engram), both --target h200, and env.sh (source it there: PATH, LD_LIBRARY_PATH, DSV41_RT_BINARY for
# the tests that spawn dsv41-rt, and the programs unzipped beside their .gz).
# Keep OUT inside the checkout under a git-excluded name (e.g. .dev-*) and name it in the device call's carry.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=${1:?usage: tools/device_pack.sh OUT (see the comment atop this script)}
build=${DSV41_BUILD_DIR:-build}
dsv41c=$build/compiler/dsv41c
bins=("$build/runtime/dsv41-rt")
[[ -n ${SLIM:-} ]] || bins+=("$build/tests/gpu_op_tests" "$build/tests/cuda_backend_tests")
for b in "$dsv41c" "${bins[@]}"; do
  [[ -x $b ]] || { echo "device_pack: $b missing; build it first (ninja -C $build dsv41c dsv41-rt gpu_op_tests cuda_backend_tests)" >&2; exit 1; }
done

say() { echo "==> device_pack: $*"; }
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for b in "${bins[@]}"; do strip -o "$out/bin/$(basename "$b")" "$b"; done
# Libraries a bare GPU machine lacks: everything ldd resolves outside glibc's and the CUDA driver's own.
ldd "${bins[@]}" | awk '/=> \//{print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libgcc_s|libstdc\+\+|libcuda|libnvrtc[^/]*|libcudart[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done

say "planning the bench fixture (release formats, world 1) and the release share (world 4 rank 0)"
"$dsv41c" synth-pack --config fixtures/dsv41-bench/config.json --out "$work/bench" --format release --headers-only >/dev/null
"$dsv41c" plan "$work/bench" --world 1 --slots 16 --target h200 --out "$out/bench-w1" --quiet
python3 - "$work/release-config.json" <<'EOF'
import json, sys
c = json.load(open("fixtures/dsv41-release/config.json"))
(c.get("text_config") or c)["engram_layer_ids"] = []
json.dump(c, open(sys.argv[1], "w"), indent=1)
EOF
"$dsv41c" synth-pack --config "$work/release-config.json" --out "$work/release" --format release --headers-only --shards 8 >/dev/null
"$dsv41c" plan "$work/release" --world 4 --rank 0 --target h200 --out "$out/rel-w4" --quiet

# The programs travel gzipped (a device call carries at most 64 MiB; the release share's is 21 MB, 2.7 gzipped).
gzip "$out/bench-w1/rank0.fb" "$out/rel-w4/rank0.fb"
cat >"$out/env.sh" <<'EOF'
# Source on the GPU machine: this pack's binaries and libraries first, its programs unzipped beside their .gz.
pack=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH=$pack/bin:$PATH LD_LIBRARY_PATH=$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export DSV41_RT_BINARY=$pack/bin/dsv41-rt  # the carried tests spawn this one, not their build's
for gz in "$pack"/*/rank0.fb.gz; do [[ -f ${gz%.gz} ]] || gunzip -k "$gz"; done
EOF
say "$(du -sh "$out" | cut -f1) in $out: $(ls "$out/bin" | tr '\n' ' ')"
