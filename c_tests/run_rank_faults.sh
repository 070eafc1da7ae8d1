#!/usr/bin/env bash
# Runs test_rank_faults MODE under mpirun -n 3 with a hard time limit, so a hang fails the test
# instead of blocking CI, and checks the outcome every rank must see (issue 18):
#   run_rank_faults.sh MPIEXEC PROGRAM MODE
set -u
mpiexec=$1 program=$2 mode=$3
limit=60
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s%N)
timeout --kill-after=5 "$limit" "$mpiexec" --allow-run-as-root --oversubscribe -n 3 \
  -x CELERITY_DEVICES=host:1 -x CELERITY_CHECK_SPMD=on "$program" "$mode" >"$log" 2>&1
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$log"
echo "run_rank_faults: mode $mode: exit status $rc after ${elapsed_ms} ms"
fail() { echo "run_rank_faults: FAILED: $*"; exit 1; }
# 124/137 are also what a killed job returns, so the elapsed time tells a timeout.
if [ "$elapsed_ms" -ge $((limit * 1000)) ]; then fail "the job did not end within ${limit}s"; fi
case "$mode" in
  task_failure)
    [ "$rc" -eq 0 ] || fail "expected every rank to shut down and exit 0"
    passed=$(grep -c "fault checks passed" "$log")
    [ "$passed" -eq 3 ] || fail "$passed of 3 ranks passed their checks"
    ;;
  exit)
    [ "$rc" -ne 0 ] || fail "a rank exited without shutdown, yet the job exited 0"
    grep -Eq "lost rank 1|rank 1: .*exited without calling celerity_runtime_shutdown" "$log" \
      || fail "no message names the lost rank 1"
    if grep -Eq "CHECK\(|does not contain|, expected CELERITY_" "$log"; then fail "a rank's checks failed"; fi
    ;;
  die)
    [ "$rc" -ne 0 ] || fail "a rank was killed, yet the job exited 0"
    grep -Eq "rank 1|signal 9|Killed" "$log" || fail "no message names the killed rank 1"
    ;;
  spmd_*)
    reported=$(grep -c "divergence reported: .*SPMD divergence" "$log")
    [ "$reported" -eq 3 ] || fail "$reported of 3 ranks reported the SPMD divergence"
    grep -q "task T[0-9]* is .*divergent" "$log" || fail "no rank named the first divergent task"
    if grep -Eq "CHECK\(|does not contain|, expected CELERITY_" "$log"; then fail "a rank's checks failed"; fi
    ;;
  *) fail "unknown mode $mode" ;;
esac
echo "run_rank_faults: mode $mode passed"
