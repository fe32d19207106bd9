#!/usr/bin/env bash
# The GPU check for a GPU host: the CUDA tests, then the GPU benchmarks, each step under a time limit
# so the whole check ends within 10 minutes; logs go to OUT_DIR and a summary table is printed (and
# written to OUT_DIR/summary.txt). Runs the programs of a bundle (scripts/bundle.sh, which copies this
# script into it) through its run.sh, or those of a build folder directly. Works with or without
# nvidia-smi.
# Usage: gpu_check.sh [BUNDLE_OR_BUILD_DIR] [OUT_DIR]
#   BUNDLE_OR_BUILD_DIR  default: the folder of this script when it is a bundle, else <repo>/build
#   OUT_DIR              default: $OUT when set, else ./gpu_check_logs
# Steps (time limit): libraries of every program found (30 s); nvidia-smi when present (20 s); the
# CUDA tests of moh_tests, every suite or test whose name says Cuda/CUDA/Gpu/GPU (270 s); the NCCL
# tests of moh_dist_tests in one process (60 s); moh_bench_cuda --json (180 s). The limits add up to
# 560 s, and a step that outlives its limit is killed at most 10 s later.
# Exit status 0 only when every step passed and the CUDA tests ran on a GPU (tests that skip because
# no device is visible fail the check).
# OUT_DIR files: env.log, cuda_tests.log, nccl_tests.log, bench_cuda.log, bench_cuda.json, summary.txt
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
if [[ -n ${1:-} ]]; then
  dir=$1
elif [[ -x $here/run.sh && -d $here/bin ]]; then
  dir=$here
else
  dir=$here/../build
fi
out=${2:-${OUT:-gpu_check_logs}}
mkdir -p "$out" || exit 2
dir=$(cd "$dir" 2>/dev/null && pwd -P) || { echo "gpu_check.sh: no folder ${1:-$here/../build}" >&2; exit 2; }

if [[ -x $dir/run.sh && -d $dir/bin ]]; then
  kind=bundle
  bin_dir=$dir/bin
elif [[ -x $dir/moh_tests ]]; then
  kind=build
  bin_dir=$dir
else
  echo "gpu_check.sh: $dir is neither a bundle (run.sh, bin/) nor a build folder (moh_tests)" >&2
  exit 2
fi
limited() {  # seconds program args...: a program of the bundle or build under a time limit (124: timed out)
  local limit=$1 p=$2
  shift 2
  if [[ $kind == bundle ]]; then
    timeout -k 10 "$limit" "$dir/run.sh" "$p" "$@"
  else
    timeout -k 10 "$limit" "$dir/$p" "$@"
  fi
}

rows=()
failed=0
now() { date +%s.%N; }
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
verdict() {  # exit status -> result word
  case $1 in
    0) echo ok ;;
    124 | 137) echo TIMEOUT ;;
    *) echo "FAILED($1)" ;;
  esac
}
add_row() {  # step result passed failed skipped seconds
  rows+=("$(printf '%-12s %-10s %7s %7s %8s %8s' "$@")")
  [[ $2 == ok ]] || failed=1
}

# Step: a gtest program under a time limit; counts the per-test result lines (so a crash or timeout
# still shows how far it got).
gtest_step() {  # name limit log program filter
  local name=$1 limit=$2 log=$3 prog=$4 filter=$5 start rc result passed failures skipped
  start=$(now)
  limited "$limit" "$prog" --gtest_filter="$filter" > "$out/$log" 2>&1
  rc=$?
  result=$(verdict $rc)
  passed=$(grep -c '^\[       OK \]' "$out/$log")
  failures=$(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$out/$log")
  skipped=$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$out/$log")
  if [[ $result == ok ]] && grep -qE 'no CUDA device on this machine|CPU-only build' "$out/$log"; then
    result="NO-GPU"
  fi
  add_row "$name" "$result" "$passed" "$failures" "$skipped" "$(seconds_since "$start")"
}

# Libraries and the device, into env.log.
start=$(now)
{
  echo "gpu_check: $kind $dir"
  [[ -f $dir/BUILD_INFO ]] && cat "$dir/BUILD_INFO"
  if [[ $kind == bundle ]]; then
    timeout 30 "$dir/run.sh" --check
  else
    missing=$(for p in "$dir"/moh*; do
      [[ -x $p && -f $p ]] && ldd "$p" | sed "s|^|${p##*/}: |"
    done | grep 'not found')
    echo "${missing:-the libraries of every program are found}"
    [[ -z $missing ]]
  fi
} > "$out/env.log" 2>&1
add_row libraries "$(verdict $?)" - - - "$(seconds_since "$start")"
gpu="nvidia-smi absent"
if command -v nvidia-smi > /dev/null; then
  start=$(now)
  {
    echo
    timeout 20 nvidia-smi
  } >> "$out/env.log" 2>&1
  add_row nvidia-smi "$(verdict $?)" - - - "$(seconds_since "$start")"
  gpu=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)
fi

gtest_step "cuda tests" 270 cuda_tests.log moh_tests '*Cuda*:*CUDA*:*Gpu*:*GPU*'
gtest_step "nccl tests" 60 nccl_tests.log moh_dist_tests 'Nccl*'

bench_summary="moh_bench_cuda: not built (a CPU-only build; configure with -DMOH_CUDA=ON)"
if [[ -x $bin_dir/moh_bench_cuda ]]; then
  start=$(now)
  limited 180 moh_bench_cuda --json > "$out/bench_cuda.log" 2>&1
  rc=$?
  tail -n 1 "$out/bench_cuda.log" | grep '^{' > "$out/bench_cuda.json"
  add_row "bench cuda" "$(verdict $rc)" - - - "$(seconds_since "$start")"
  bench_summary=$(grep '^summary:' "$out/bench_cuda.log" || echo "moh_bench_cuda: no summary (see bench_cuda.log)")
else
  add_row "bench cuda" "NO-CUDA" - - - 0
fi

{
  echo "gpu_check: $kind $dir; GPU: $gpu"
  printf '%-12s %-10s %7s %7s %8s %8s\n' step result passed failed skipped "wall s"
  printf '%s\n' "${rows[@]}"
  echo "bench: $bench_summary"
  echo "logs: $(cd "$out" && pwd -P)"
  ((failed)) && echo "gpu_check: FAILED" || echo "gpu_check: all steps passed"
} | tee "$out/summary.txt"
exit $failed
