#!/usr/bin/env bash
# Writes Fashion-MNIST as an ImageNet-style image folder (OUT/train/<class>/*.jpg, OUT/val/<class>/*.jpg)
# with the moh_make_image_folder tool, building it first when needed (in BUILD_DIR, default build; a fresh
# build dir is configured with CUDA off). All arguments go to the tool.
# Usage: scripts/make_image_folder.sh --out DIR [--format jpeg|png|mixed] [--limit N] [--quality Q] [--source DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

for arg in "$@"; do
  if [[ "$arg" == "--help" || "$arg" == "-h" ]]; then
    sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
    echo
    break
  fi
done

build_dir=${BUILD_DIR:-build}
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOH_CUDA=OFF >/dev/null
fi
cmake --build "$build_dir" --target moh_make_image_folder -j "${JOBS:-$(nproc)}" >/dev/null
exec "$build_dir/moh_make_image_folder" "$@"
