#!/usr/bin/env bash
# Configures and builds the instrumented CPU build that scripts/test_sanitized.sh and scripts/fuzz.sh share:
# clang, AddressSanitizer + UndefinedBehaviorSanitizer (any report aborts), the libFuzzer targets of fuzz/
# (MOH_FUZZ=ON; coverage instrumentation only in the readers fuzz/readers.txt lists), CUDA off.
# Usage: scripts/sanitized_build.sh [ninja targets...]   (all targets when none are named)
# BUILD_DIR (default build-asan) and JOBS (default nproc) as in scripts/test.sh; a compiler launcher comes
# from the environment (CMAKE_CXX_COMPILER_LAUNCHER=ccache).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${BUILD_DIR:-build-asan}
jobs=${JOBS:-$(nproc)}
# -gline-tables-only: file:line in sanitizer reports at a fraction of -g's compile and link time.
mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOH_CUDA=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS=-gline-tables-only \
  -DMOH_SANITIZE=address,undefined -DMOH_FUZZ=ON >"$build_dir/configure.log" 2>&1 ||
  { cat "$build_dir/configure.log" >&2; exit 1; }
cmake --build "$build_dir" -j "$jobs" ${1:+--target "$@"}
