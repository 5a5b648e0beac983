#!/bin/sh
# The comm layer on 1, 2, 3, 4 and 8 ranks: tests/test_comm's TAP lines (printed by rank 0),
# renumbered into one stream and prefixed with the rank count; a run that crashes, hangs or loses
# lines fails. Then the order-sensitive sum must be bit-identical across two runs on 3 ranks, and
# MPI errors must end the job with exit 1 and one "surge: error:" line naming the call.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"

prog="$top_build/tests/test_comm"

for np in 1 2 3 4 8; do
  tap_pass_through "np=$np" "$np" "$prog"
  [ "$np" = 3 ] && first=$(grep '^# digest' "$tap_tmp/pass_through.txt")
done

timeout 60 "$mpiexec" -n 3 "$prog" >"$tap_tmp/again.txt" 2>/dev/null
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
# a rank that cannot map node-shared memory (its address space limited): Open MPI returned a broken
# window there, and querying it jumped into the heap (exit 139)
expect_failure 2 shm-address-space 'rank 1: node-shared memory of 269484096 bytes .* does not fit in this rank.s address space'

tap_done
