#!/usr/bin/env bash
# The README's main command: install what is missing, build if needed, train a ViT config on the CPU
# (default configs/vit/fmnist_moh.yaml: MoH with 75% of the heads on Fashion-MNIST), evaluate the final
# checkpoint and print the test accuracy. The last line printed is the eval JSON.
# Training is data-parallel (scripts/launch.sh) over one single-threaded process per core, up to 4:
# the small ViT's ops gain little from a second OpenMP thread while processes scale, and the global
# batch (so the result) is the same for any count. PROCS=N overrides; PROCS=1 runs without mpirun.
# Usage: scripts/run.sh [CONFIG.yaml] [key=value ...]      (BUILD_DIR=build by default)
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
config=configs/vit/fmnist_moh.yaml
if [[ $# -gt 0 && "$1" != *=* ]]; then
  config=$1
  shift
fi
[[ -f "$config" ]] || { echo "run.sh: config '$config' not found" >&2; exit 2; }

scripts/setup.sh >&2
build_dir=${BUILD_DIR:-build}
if [[ ! -f "$build_dir/build.ninja" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
fi
cmake --build "$build_dir" --target moh -j "$(nproc)" >&2

procs=${PROCS:-}
if [[ -z $procs ]]; then
  procs=1
  for n in 4 2; do
    if (($(nproc) >= n)); then procs=$n; break; fi
  done
  command -v mpirun >/dev/null || procs=1
fi

start=$(date +%s)
if ((procs > 1)); then
  echo "run.sh: training on $procs processes of 1 thread (PROCS=1: one process)" >&2
  summary=$(MOH_BIN="$(realpath "$build_dir/moh")" scripts/launch.sh -n "$procs" -t 1 "$config" "$@" | tail -n 1)
else
  summary=$("$build_dir/moh" train "$config" "$@" | tail -n 1)
fi
run_dir=$(sed -n 's/.*"run_dir":"\([^"]*\)".*/\1/p' <<<"$summary")
[[ -n "$run_dir" ]] || { echo "run.sh: training did not report its run folder: $summary" >&2; exit 1; }
trained=$(($(date +%s) - start))
echo "run.sh: trained in ${trained}s; evaluating $run_dir" >&2
exec scripts/eval_vit.sh "$run_dir"
