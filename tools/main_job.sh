#!/usr/bin/env bash
# tools/main_job.sh — sets up and builds, writes a header-only release pack, plans it at world 4 for h200.
#
# Prints each rank's share and memory. Everything it writes goes under work/ (gitignored).
# Environment: as tools/setup.sh (DSV41_BUILD_DIR, ...), plus DSV41_WORK_DIR (default work).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${DSV41_BUILD_DIR:-build}
work_dir=${DSV41_WORK_DIR:-work}
dsv41c="$build_dir/compiler/dsv41c"

say() { echo "==> main job: $*"; }

tools/setup.sh

say "synth-pack: header-only release pack in $work_dir/dsv41-release"
"$dsv41c" synth-pack --config fixtures/dsv41-release/config.json --out "$work_dir/dsv41-release" \
  --headers-only --format release --shards 8

say "plan: release model, world 4, every rank, target h200 -> $work_dir/programs-w4"
"$dsv41c" plan "$work_dir/dsv41-release" --world 4 --rank all --out "$work_dir/programs-w4" --target h200

say "done"
