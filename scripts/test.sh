#!/usr/bin/env bash
# The whole test suite from a fresh checkout: install packages, configure, build, run CTest.
# Usage: scripts/test.sh [extra cmake args]   (BUILD_DIR=build by default; MOH_CUDA=AUTO compiles the
# CUDA backend when nvcc is present; CUDA tests skip themselves on machines without a GPU.)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir" -j "$jobs"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 300
