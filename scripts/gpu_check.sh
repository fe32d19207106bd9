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
# CUDA tests of moh_tests, every suite or test whose name says Cuda/CUDA/Gpu/GPU, with MOH_CUDA_SYNC=1 so
# an asynchronous fault names its kernel (180 s); compute-sanitizer's memcheck on each of the first two
# tests that crashed or poisoned the CUDA context, when compute-sanitizer is there (35 s each); the NCCL
# tests of moh_dist_tests (40 s); moh_bench_cuda --json (90 s); moh_bench_attention --device cuda, MHA
# against MoH's core and layer (90 s). The limits add up to 520 s, so a 15-minute device lease has room
# for a machine's start and a second check after a fix.
# The test steps run through gtest_isolated.sh: a test that crashes, hangs (45 s without output) or
# poisons the CUDA context gets that verdict, and a fresh process runs the tests after it.
# Exit status 0 only when every step passed and the CUDA tests ran on a GPU (tests that skip because
# no device is visible fail the check).
# OUT_DIR files (8, what a device run brings back): env.log, cuda_tests.log, nccl_tests.log,
# test_results.txt (a verdict per test), sanitizer.log (when memcheck ran), bench_cuda.log (its last
# line the --json object), bench_attention.log, summary.txt
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
program() {  # name: the command line that runs a program of the bundle or build, into the array cmd
  if [[ $kind == bundle ]]; then cmd=("$dir/run.sh" "$1"); else cmd=("$dir/$1"); fi
}
limited() {  # seconds program args...: a program of the bundle or build under a time limit (124: timed out)
  local limit=$1 cmd
  program "$2"
  shift 2
  timeout -k 10 "$limit" "${cmd[@]}" "$@"
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
  [[ $2 == ok || $2 == done ]] || failed=1
}

# Step: a gtest program's selected tests through gtest_isolated.sh within a time budget; the counts come
# from its verdict per test, so a crash or hang still shows how far it got and which test it was.
# Every step's verdicts are appended to test_results.txt.
gtest_step() {  # name budget log program filter
  local name=$1 budget=$2 log=$3 filter=$5 start rc result cmd results
  program "$4"
  results=$(mktemp)
  start=$(now)
  MOH_CUDA_SYNC=1 "$here/gtest_isolated.sh" "$results" "$out/$log" "$budget" 45 "$filter" "${cmd[@]}" \
    >> "$out/$log" 2>&1
  rc=$?
  result=$(verdict $rc)
  if [[ $result == ok ]] && grep -qE 'no CUDA device on this machine|CPU-only build' "$out/$log"; then
    result="NO-GPU"
  fi
  add_row "$name" "$result" "$(grep -c '^ok ' "$results")" \
    "$(grep -cE '^(failed|crashed|hung|poisoned|not-run) ' "$results")" \
    "$(grep -c '^skipped ' "$results")" "$(seconds_since "$start")"
  cat "$results" >> "$out/test_results.txt"
  rm -f "$results"
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

: > "$out/test_results.txt"
gtest_step "cuda tests" 180 cuda_tests.log moh_tests '*Cuda*:*CUDA*:*Gpu*:*GPU*'

# memcheck on the first two tests that crashed or poisoned the context: where the bad access is.
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2> /dev/null)
mapfile -t broken < <(awk '$1 == "crashed" || $1 == "poisoned" { print $2 }' "$out/test_results.txt" | head -n 2)
if [[ -n $sanitizer && ${#broken[@]} -gt 0 ]]; then
  start=$(now)
  program moh_tests
  for t in "${broken[@]}"; do
    echo "=== memcheck: $t"
    MOH_CUDA_SYNC=1 timeout -k 5 35 "$sanitizer" --tool memcheck --print-limit 12 "${cmd[@]}" --gtest_filter="$t"
  done > "$out/sanitizer.log" 2>&1
  add_row memcheck done "${#broken[@]}" - - "$(seconds_since "$start")"  # the tests' failures are counted above
fi
gtest_step "nccl tests" 40 nccl_tests.log moh_dist_tests 'Nccl*'

bench_summary="moh_bench_cuda: not built (a CPU-only build; configure with -DMOH_CUDA=ON)"
if [[ -x $bin_dir/moh_bench_cuda ]]; then
  start=$(now)
  limited 90 moh_bench_cuda --json > "$out/bench_cuda.log" 2>&1
  rc=$?
  add_row "bench cuda" "$(verdict $rc)" - - - "$(seconds_since "$start")"
  bench_summary=$(grep '^summary:' "$out/bench_cuda.log" || echo "moh_bench_cuda: no summary (see bench_cuda.log)")
  # MHA against MoH at 90/75/50% of 32 heads of 64 on the GPU: the attention core and the whole layer.
  start=$(now)
  limited 90 moh_bench_attention --device cuda --scope both --seq 256,512 --tokens 16384 --layer-tokens 16384 \
    --reps 10 --json > "$out/bench_attention.log" 2>&1
  add_row "bench attn" "$(verdict $?)" - - - "$(seconds_since "$start")"
else
  add_row "bench cuda" "NO-CUDA" - - - 0
fi

{
  grep -vE '^(ok|skipped) ' "$out/test_results.txt" | head -n 80 | sed 's/^/test: /'
  echo "gpu_check: $kind $dir; GPU: $gpu"
  printf '%-12s %-10s %7s %7s %8s %8s\n' step result passed failed skipped "wall s"
  printf '%s\n' "${rows[@]}"
  echo "bench: $bench_summary"
  echo "logs: $(cd "$out" && pwd -P)"
  ((failed)) && echo "gpu_check: FAILED" || echo "gpu_check: all steps passed"
} | tee "$out/summary.txt"
exit $failed
