#!/usr/bin/env bash
# tools/setup.sh — installs the Debian packages dsv41 needs (only the missing ones), then configures and builds.
#
#   tools/setup.sh              packages, then a RelWithDebInfo Ninja build in build/
#   tools/setup.sh --sanitize   packages, then a lean AddressSanitizer+UBSan build in build-asan/ (no model or GPU suites)
#   tools/setup.sh --no-build   packages only
#
# Safe to run again: installed packages are skipped and the build is incremental.
# Environment: DSV41_BUILD_DIR (default build), DSV41_ASAN_BUILD_DIR (default ${DSV41_BUILD_DIR}-asan),
#              DSV41_BUILD_TYPE (default RelWithDebInfo), DSV41_JOBS (default nproc).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PACKAGES=(
  g++ cmake ninja-build ccache
  libflatbuffers-dev flatbuffers-compiler
  libcli11-dev nlohmann-json3-dev libcpp-httplib-dev
  libxxhash-dev libspdlog-dev libfmt-dev
  libgtest-dev libclang-dev libpcre2-dev clang-format
  libicu-dev nodejs curl
)

sanitize=0
build=1
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=1 ;;
    --no-build) build=0 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown option $arg (known: --sanitize, --no-build, --help)" >&2; exit 2 ;;
  esac
done

say() { echo "==> setup: $*"; }

missing=()
for package in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done

if ((${#missing[@]} == 0)); then
  say "packages: all ${#PACKAGES[@]} present"
else
  say "packages: installing ${missing[*]}"
  sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || { echo "setup: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
  say "packages: installed ${#missing[@]}"
fi

# The openai npm client the serving test runs (tests/serve/openai_client): installed from its lock
# file, only when node_modules is missing or older than the lock.
client_dir=tests/serve/openai_client
if [[ ! -d "$client_dir/node_modules" || "$client_dir/package-lock.json" -nt "$client_dir/node_modules" ]]; then
  if command -v npm >/dev/null; then
    say "npm ci in $client_dir"
    (cd "$client_dir" && npm ci --no-audit --no-fund --loglevel=error) && touch "$client_dir/node_modules"
  else
    say "npm is missing: the openai client test (serve_openai_npm_client) will fail until it is installed"
  fi
fi

((build)) || exit 0

# NVRTC and the CUDA headers come from NVIDIA's CUDA Toolkit, not from Debian: it must be installed.
cuda_root=${CUDAToolkit_ROOT:-/usr/local/cuda}
if [[ ! -f "$cuda_root/include/nvrtc.h" ]]; then
  echo "setup: the CUDA Toolkit is not at $cuda_root (no include/nvrtc.h); install it or set CUDAToolkit_ROOT" >&2
  exit 1
fi

build_dir=${DSV41_BUILD_DIR:-build}
sanitize_flag=OFF
long_tests=ON
if ((sanitize)); then
  build_dir=${DSV41_ASAN_BUILD_DIR:-${build_dir}-asan}
  sanitize_flag=ON
  long_tests=OFF  # the sanitizer tree is lean: unit and short end-to-end suites (CMakeLists.txt)
fi
build_type=${DSV41_BUILD_TYPE:-RelWithDebInfo}
jobs=${DSV41_JOBS:-$(nproc)}

# A folder configured with another generator cannot be switched to Ninja in place.
if [[ -f "$build_dir/CMakeCache.txt" ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$build_dir/CMakeCache.txt"; then
  echo "setup: $build_dir was configured with another generator than Ninja; remove it and run again" >&2
  exit 1
fi

say "configure $build_dir ($build_type, sanitizers $sanitize_flag)"
# ccache keys on paths relative to the checkout, so another clone of the same commit hits the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DDSV41_SANITIZE="$sanitize_flag" \
  -DDSV41_LONG_TESTS="$long_tests" >/dev/null
say "build $build_dir with $jobs jobs"
start=$SECONDS
cmake --build "$build_dir" -j "$jobs"
say "built $build_dir in $((SECONDS - start)) s"
