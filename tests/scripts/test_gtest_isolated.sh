#!/usr/bin/env bash
# scripts/gtest_isolated.sh against a stand-in gtest program whose tests pass, fail, crash (SIGSEGV),
# poison the CUDA context (an illegal-address error, after which the same process hangs in its next test),
# hang, and skip: every test gets its own verdict, the tests after a crash, hang or poisoning run in a
# fresh process and pass, a poisoned process is ended at once, and a program that lists no tests is an
# error (exit 2). CTest: scripts.gtest_isolated.
set -euo pipefail
runner=$(cd "$(dirname "$0")/../.." && pwd -P)/scripts/gtest_isolated.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "test_gtest_isolated: $*" >&2; exit 1; }

# The stand-in: tests in registration order; runs the exact names of --gtest_filter (':'-separated).
cat > "$work/fake_gtest" <<'FAKE'
#!/usr/bin/env bash
filter=* list=0
for a in "$@"; do
  case $a in
    --gtest_list_tests) list=1 ;;
    --gtest_filter=*) filter=${a#--gtest_filter=} ;;
  esac
done
if ((list)); then  # the selected tests (filter '*', 'Ops.*' or exact names), as gtest lists them
  echo "Ops."
  for t in Pass Crash Poison Fail Hang Skip AfterAll; do
    [[ $filter == '*' || $filter == 'Ops.*' || :$filter: == *:Ops.$t:* ]] || continue
    if [[ $t == AfterAll ]]; then echo "  $t  # GetParam() = 3"; else echo "  $t"; fi
  done
  exit 0
fi
poisoned=0
IFS=: read -ra names <<< "$filter"
for t in "${names[@]}"; do
  echo "[ RUN      ] $t"
  ((poisoned)) && sleep 600  # a poisoned process may hang in its next CUDA call
  case $t in
    Ops.Crash) kill -SEGV $$ ;;
    Ops.Poison) echo "matmul: an illegal memory access was encountered"; echo "[  FAILED  ] $t (1 ms)"; poisoned=1 ;;
    Ops.Fail) echo "x.cpp:3: Failure"; echo "[  FAILED  ] $t (1 ms)" ;;
    Ops.Hang) sleep 600 ;;
    Ops.Skip) echo "[  SKIPPED ] $t (0 ms)" ;;
    *) echo "[       OK ] $t (0 ms)" ;;
  esac
done
FAKE
chmod +x "$work/fake_gtest"

start=$(date +%s)
rc=0
"$runner" "$work/results" "$work/log" 60 5 'Ops.*' "$work/fake_gtest" > "$work/out" 2>&1 || rc=$?
elapsed=$(($(date +%s) - start))
[[ $rc == 1 ]] || fail "exit status $rc, expected 1 (some tests did not pass): $(cat "$work/out")"
want='ok Ops.Pass
crashed Ops.Crash
poisoned Ops.Poison
failed Ops.Fail
hung Ops.Hang
skipped Ops.Skip
ok Ops.AfterAll'
[[ $(cat "$work/results") == "$want" ]] || fail "verdicts:"$'\n'"$(cat "$work/results")"$'\n'"expected:"$'\n'"$want"
# The poisoned process (run 2, from test 3) is ended once the test has failed, not left to stall in its
# next test; only the hang's run waits out the stall.
grep -q '^=== gtest_isolated: run 2 (from test 3 of 7), exit status 137$' "$work/log" ||
  fail "the poisoned process was not ended at once: $(grep '^===' "$work/log")"
((elapsed < 30)) || fail "took $elapsed s for one 5 s stall"
[[ $(grep -c '^=== gtest_isolated: run' "$work/log") == 4 ]] || fail "expected 4 runs: $(grep '^===' "$work/log")"
grep -q '7 tests in 4 runs: 2 ok, 1 failed, 1 skipped, 1 crashed, 1 hung, 1 poisoned, 0 not-run' "$work/out" ||
  fail "summary: $(cat "$work/out")"

# Only passing and skipped tests: exit 0.
"$runner" "$work/results" "$work/log" 60 3 'Ops.Pass:Ops.Skip' "$work/fake_gtest" > "$work/out" 2>&1 ||
  fail "a passing selection exited $?: $(cat "$work/out")"
# A program that lists no tests: exit 2 and an empty results file.
printf '#!/bin/sh\nexit 0\n' > "$work/empty"
chmod +x "$work/empty"
rc=0
"$runner" "$work/results" "$work/log" 60 3 '*' "$work/empty" > "$work/out" 2>&1 || rc=$?
[[ $rc == 2 && ! -s $work/results ]] || fail "a program with no tests: exit $rc, results '$(cat "$work/results")'"
grep -q 'listed no tests' "$work/out" || fail "no message for a program without tests: $(cat "$work/out")"
echo "test_gtest_isolated: passed"
