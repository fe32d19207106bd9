#!/usr/bin/env bash
# Runs a gtest program's selected tests so that one crash, hang or poisoned CUDA context does not cost
# the results of the tests after it (the first run of GPU code: scripts/gpu_check.sh uses it). The tests
# run in registration order in one process; when that process dies inside a test, stops printing for
# STALL seconds, or a test fails with an error that poisons the CUDA context for the rest of the process
# (illegal address, launch failure, device assert, ...), that test gets its verdict and a fresh process
# runs the tests after it. A test's verdict is final once it ended in a process whose context was still
# healthy, so a cascade of failures behind a poisoning test never counts against those tests.
# Usage: gtest_isolated.sh RESULTS LOG BUDGET STALL FILTER PROGRAM [ARGS...]
#   RESULTS  written: one line per selected test, "<verdict> <name>", verdict one of
#            ok failed skipped crashed hung poisoned not-run (not-run: the budget ran out first)
#   LOG      written: every process's output in turn, each headed by "=== gtest_isolated: run N"
#   BUDGET   seconds for all the runs together; STALL: seconds without output that count as a hang
#   FILTER   a --gtest_filter pattern; PROGRAM [ARGS...]: the gtest program and arguments before it
# Prints "gtest_isolated: <n> ok, <n> failed, ..." last. Exit status 0 when every test is ok or
# skipped, 1 otherwise, 2 when the program could not list its tests.
set -uo pipefail
[[ $# -ge 6 ]] || { sed -n '2,/^set /p' "$0" | sed '$d' >&2; exit 2; }
results=$1 log=$2 budget=$3 stall=$4 filter=$5
shift 5
poison='illegal memory access|illegal address|unspecified launch failure|misaligned address|device-side assert|'\
'cudaErrorLaunchFailure|cudaErrorIllegalAddress|cudaErrorAssert|CUDA_ERROR_ILLEGAL|an illegal instruction|'\
'cudaErrorLaunchTimeout|hardware stack error|uncorrectable ECC'
: > "$log"
deadline=$(($(date +%s) + budget))

# The selected tests in registration order ("Suite." headers, then indented test names; comments dropped).
mapfile -t tests < <("$@" --gtest_filter="$filter" --gtest_list_tests 2>>"$log" | awk '
  /^[^ ]/ { suite = $1; next }
  /^  [^ ]/ { print suite $1 }')
if ((${#tests[@]} == 0)); then
  echo "gtest_isolated: $* listed no tests for '$filter' (see $log)" >&2
  : > "$results"
  exit 2
fi
# Verdicts of one run's output in the order its tests ran, up to the first test that left the process
# unusable: ok/skipped/failed/poisoned lines, then "unfinished NAME" when the output ends inside a test.
verdicts() {  # part_log
  awk -v poison="$poison" '
    /^\[ RUN      \] / { name = $4; open = 1; bad = 0; next }
    open && /^\[       OK \] / { print "ok", name; open = 0; next }
    open && /^\[  SKIPPED \] / { print "skipped", name; open = 0; next }
    open && /^\[  FAILED  \] / { print (bad ? "poisoned" : "failed"), name; open = 0; if (bad) exit; next }
    open && $0 ~ poison { bad = 1 }
    END { if (open) print "unfinished", name }' "$1"
}
declare -A verdict=()
next=0  # index of the first test without a verdict
run=0
while ((next < ${#tests[@]})); do
  left=$((deadline - $(date +%s)))
  ((left > 0)) || break
  run=$((run + 1))
  part=$(mktemp)
  remaining=$(IFS=:; echo "${tests[*]:next}")
  "$@" --gtest_filter="$remaining" > "$part" 2>&1 &
  pid=$!
  stalled=0
  while kill -0 "$pid" 2> /dev/null; do
    sleep 1
    idle=$(($(date +%s) - $(stat -c %Y "$part")))
    if ((idle >= stall || $(date +%s) >= deadline)); then
      stalled=1
      kill -9 "$pid" 2> /dev/null
      break
    fi
    # A poisoned context fails every later CUDA call: end the process once that test has ended.
    if grep -Eq "$poison" "$part" && verdicts "$part" | grep -q '^poisoned'; then
      kill -9 "$pid" 2> /dev/null
      break
    fi
  done
  wait "$pid" 2> /dev/null
  rc=$?
  { echo "=== gtest_isolated: run $run (from test $((next + 1)) of ${#tests[@]}), exit status $rc$( ((stalled)) &&
      echo ", killed after ${stall} s without output or at the budget")"; cat "$part"; } >> "$log"
  cut=$(verdicts "$part")
  rm -f "$part"
  progressed=0
  while read -r v name; do
    [[ $name == "${tests[next]}" ]] || break  # gtest ran something else: stop trusting this run
    if [[ $v == unfinished ]]; then
      if ((stalled)); then v=hung; else v=crashed; fi
    fi
    verdict[$name]=$v
    next=$((next + 1))
    progressed=1
  done <<< "$cut"
  ((progressed)) || break  # the process died before its first test: running it again would do the same
done

declare -A count=()
for name in "${tests[@]}"; do
  v=${verdict[$name]:-not-run}
  count[$v]=$((${count[$v]:-0} + 1))
  echo "$v $name"
done > "$results"
summary="gtest_isolated: ${#tests[@]} tests in $run runs:"
for v in ok failed skipped crashed hung poisoned not-run; do summary+=" ${count[$v]:-0} $v,"; done
echo "${summary%,}"
for v in failed crashed hung poisoned not-run; do ((${count[$v]:-0} == 0)) || exit 1; done
exit 0
