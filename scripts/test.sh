#!/usr/bin/env bash
# The whole test suite from a fresh checkout: install packages, configure, build, run CTest; then the CPU
# suite again under ASan + UBSan and the fuzz smoke (scripts/test_sanitized.sh, its own build folder).
# Usage: scripts/test.sh [extra cmake args]   (BUILD_DIR=build by default; MOH_CUDA=AUTO compiles the
# CUDA backend when nvcc is present; CUDA tests skip themselves on machines without a GPU.
# MOH_SANITIZED=0 skips the sanitizer pass.)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir" -j "$jobs"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 300
if [[ ${MOH_SANITIZED:-1} != 0 ]]; then
  BUILD_DIR=${SANITIZED_BUILD_DIR:-build-asan} scripts/test_sanitized.sh
fi
