#!/usr/bin/env bash
# tools/test.sh — builds and runs every test without a GPU (ctest labels unit and e2e), then the lean sanitizer tree's
# (unit and short end-to-end suites; the whole-model suite runs once, here in the plain tree) under ASan+UBSan.
#
# Both passes run even when the first fails; the exit status is non-zero if any build or test failed.
# Environment: as tools/setup.sh (DSV41_BUILD_DIR, DSV41_ASAN_BUILD_DIR, DSV41_JOBS), plus
#              DSV41_TEST_JOBS (ctest parallelism, default nproc).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${DSV41_BUILD_DIR:-build}
asan_dir=${DSV41_ASAN_BUILD_DIR:-${build_dir}-asan}
test_jobs=${DSV41_TEST_JOBS:-$(nproc)}

# One NVRTC kernel cache for both passes: the plain pass compiles every variant the tests plan (the
# tiny fixture at worlds 1-4, the release at world 4, for h200); the sanitizer pass reuses the cubins.
[[ $build_dir == /* ]] && cache_root=$build_dir || cache_root=$PWD/$build_dir
export DSV41_CACHE=${DSV41_CACHE:-$cache_root/kernel-cache}

# Fail on the first sanitizer report, with a stack, so ctest shows where it happened.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

say() { echo "==> test: $*"; }

# Tests of the lean sanitizer pass that plan or run the whole release model or every world: each
# already runs in the plain pass, and under ASan each takes minutes without reaching code the rest miss.
long_under_asan='^(KernelPlan\.(Release|TinyWorldsOneToFour)|Cli\.ReleaseWorld4Shares|Worlds/ReleaseCoverage|SynthPack\.(Release|Sharded|SameSeed)|Generate\.EveryWorld)'

# Runs every test that needs no GPU in one build folder (leaving out tests matching $3); returns ctest's status.
run_tests() {
  local dir=$1 name=$2 exclude=${3:-} start=$SECONDS status=0
  local args=(--output-on-failure --no-tests=error -LE gpu -j "$test_jobs")
  [[ -n $exclude ]] && args+=(-E "$exclude")
  say "$name: ctest ${args[*]} in $dir"
  (cd "$dir" && ctest "${args[@]}") || status=$?
  say "$name: tests $([[ $status == 0 ]] && echo passed || echo FAILED) in $((SECONDS - start)) s"
  return "$status"
}

failed=()
start=$SECONDS

tools/setup.sh
run_tests "$build_dir" plain || failed+=("tests (plain build)")

if tools/setup.sh --sanitize; then
  run_tests "$asan_dir" "asan+ubsan" "$long_under_asan" || failed+=("tests (ASan+UBSan build)")
else
  failed+=("ASan+UBSan build")
fi

if ((${#failed[@]})); then
  say "FAILED: ${failed[*]} ($((SECONDS - start)) s)"
  exit 1
fi
say "all passed, plain and ASan+UBSan ($((SECONDS - start)) s)"
