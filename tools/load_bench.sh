#!/usr/bin/env bash
# tools/load_bench.sh — the CUDA backend's weight load against the storage's own sequential read (dd) of
# the same shards, in the same run, cold (page cache dropped) and warm.
#
# Usage: tools/load_bench.sh PACK_DIR PROGRAM_DIR [DSV41_RT]
#   PACK_DIR     a model folder; a headers-only pack (`dsv41c synth-pack --headers-only`) is first
#                filled to its full size with zeros (real writes, no holes, so reads reach storage)
#   PROGRAM_DIR  rank0.fb of world 1 planned from PACK_DIR for this GPU
#   DSV41_RT     the runtime (default build/runtime/dsv41-rt)
# Needs root for /proc/sys/vm/drop_caches (without it the "cold" rows are warm and say so).
set -euo pipefail
pack=${1:?PACK_DIR}; programs=${2:?PROGRAM_DIR}; rt=${3:-build/runtime/dsv41-rt}

# A shard's full size: 8-byte header length + header + the largest data_offsets end.
python3 - "$pack" <<'PY'
import json, os, struct, sys
pack = sys.argv[1]
for name in sorted(os.listdir(pack)):
    if not name.endswith(".safetensors"):
        continue
    path = os.path.join(pack, name)
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
    want, have = 8 + n + end, os.path.getsize(path)
    if have < want:
        zeros = bytes(16 << 20)
        with open(path, "ab") as f:
            left = want - have
            while left:
                left -= f.write(zeros[:min(left, len(zeros))])
        print(f"{name}: filled {have} -> {want} bytes")
PY
sync
shards=("$pack"/*.safetensors)
bytes=$(du -cb "${shards[@]}" | tail -1 | cut -f1)

drop() { if echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then echo cold; else echo "warm (could not drop the page cache)"; fi; }
dd_all() {
  local t0 t1; t0=$(date +%s.%N)
  for s in "${shards[@]}"; do dd if="$s" of=/dev/null bs=16M status=none; done
  t1=$(date +%s.%N)
  python3 -c "print(f'{$bytes/1e9:.2f} GB in {$t1-$t0:.2f} s, {$bytes/1e9/($t1-$t0):.2f} GB/s')"
}
load() {
  local log
  log=$("$rt" generate "$programs" --model "$pack" --backend cuda --prompt-ids 5 --max-tokens 1 2>&1 >/dev/null) || true
  grep -oE "weights read [0-9.]+ GB in [0-9.]+ s \([0-9.]+ GB/s\)" <<<"$log" | head -1 || echo "failed: $(tail -1 <<<"$log")"
}
echo "shards: ${#shards[@]}, $(python3 -c "print(f'{$bytes/1e9:.2f}')") GB"
state=$(drop); echo "dd, $state: $(dd_all)"
state=$(drop); echo "dsv41-rt load, $state: $(load)"
echo "dd, warm: $(dd_all)"
echo "dsv41-rt load, warm: $(load)"
