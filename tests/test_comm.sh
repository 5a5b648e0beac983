#!/bin/sh
# The comm layer on 1, 2, 3, 4 and 8 ranks: tests/test_comm's TAP lines (printed by rank 0),
# renumbered into one stream and prefixed with the rank count; a run that crashes, hangs or loses
# lines fails. Then the order-sensitive sum must be bit-identical across two runs on 3 ranks, and
# MPI errors must end the job with exit 1 and one "surge: error:" line naming the call.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"

mpiexec=${MPIEXEC:-mpiexec}
prog="$top_build/tests/test_comm"

# run_checks NP: run the checks on NP ranks and pass their results through as ours.
run_checks() {
  np=$1
  timeout 60 "$mpiexec" -n "$np" "$prog" >"$tap_tmp/np$np.txt" 2>"$tap_tmp/np$np.err"
  rc=$?
  results=0
  while IFS= read -r line; do
    case $line in
      "ok "*) tap_ok 0 "np=$np: ${line#ok * - }"; results=$((results + 1)) ;;
      "not ok "*) tap_ok 1 "np=$np: ${line#not ok * - }"; results=$((results + 1)) ;;
      "#"*) echo "# np=$np: ${line#\# }" ;;
    esac
  done <"$tap_tmp/np$np.txt"
  plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$tap_tmp/np$np.txt")
  [ "$rc" = 0 ] && [ -n "$plan" ] && [ "$plan" = "$results" ]
  tap_ok $? "np=$np: exit $rc, plan ${plan:-missing}, $results results"
  [ "$rc" = 0 ] || tap_diag "$(head -c 2000 "$tap_tmp/np$np.err")"
}

for np in 1 2 3 4 8; do
  run_checks "$np"
done

timeout 60 "$mpiexec" -n 3 "$prog" >"$tap_tmp/again.txt" 2>/dev/null
first=$(grep '^# digest' "$tap_tmp/np3.txt")
second=$(grep '^# digest' "$tap_tmp/again.txt")
[ -n "$first" ] && [ "$first" = "$second" ]
tap_ok $? "np=3: order-sensitive allreduce gives the same bits in two runs (${first#\# } / ${second#\# })"

# expect_failure NP MODE PATTERN: exit 1 and exactly one "surge: error:" line matching PATTERN.
expect_failure() {
  np=$1; mode=$2; pattern=$3
  timeout 60 "$mpiexec" -n "$np" "$prog" --fail "$mode" >/dev/null 2>"$tap_tmp/fail.err"
  rc=$?
  grep '^surge: error:' "$tap_tmp/fail.err" | head -n 1 >"$tap_tmp/fail.line"
  grep -q -E -e "$pattern" "$tap_tmp/fail.line"
  found=$?
  [ "$rc" = 1 ] && [ "$found" = 0 ]
  tap_ok $? "np=$np: $mode: exit $rc, $(cat "$tap_tmp/fail.line")"
  [ "$rc" = 1 ] && [ "$found" = 0 ] || tap_diag "expected /$pattern/" "$(head -c 2000 "$tap_tmp/fail.err")"
}

expect_failure 1 bad-root 'MPI_Bcast failed in comm_bcast: .*root'
expect_failure 2 bad-root 'rank [01]: MPI_Bcast failed in comm_bcast: .*root'
expect_failure 2 zero-bucket 'comm_allreduce_sum: bucket_bytes is 2, less than one float'
expect_failure 2 empty-group 'comm_allreduce_sum on an empty group'

tap_done
