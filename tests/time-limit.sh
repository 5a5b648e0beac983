#!/bin/sh
# The harness's runner of every test (Makefile.am: LOG_COMPILER, SH_LOG_COMPILER): the test under a
# wall-clock limit, so that one which hangs fails (exit 124, which the TAP driver reports) instead of
# holding make check, and CI, until CI's own limit. SURGE_TEST_LIMIT_S sets the limit in seconds
# (default 600; tools/sanitize.sh raises it: its programs run 2 to 5 times slower). timeout stops
# the test's whole process group (its mpiexec and ranks too). The test's wall time ends its log.
limit=${SURGE_TEST_LIMIT_S:-600}
start=$(date +%s)
timeout -k 10 "$limit" "$@"
rc=$?
[ $rc = 124 ] && echo "time-limit: stopped after $limit s (SURGE_TEST_LIMIT_S): $*" >&2
echo "time-limit: $(($(date +%s) - start)) s" >&2
exit $rc
