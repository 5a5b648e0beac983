#!/bin/sh
# Quick start, part 2: install dependencies, build, run the whole test suite (make check), and
# print "N passed, N failed, N skipped" as the last line. Exit status 0 only if nothing failed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tools/install-deps.sh" || exit 1
"$top/tools/build.sh" || exit 1
build=${SURGE_BUILD:-$top/_build}
cd "$build" || exit 1
make -j"$(nproc)" check >make-check.out 2>&1
rc=$?
grep -E '^(PASS|FAIL|XFAIL|XPASS|SKIP|ERROR):' make-check.out | sed 's/^/  /'
if [ $rc != 0 ]; then
  echo "--- failing test logs ---"
  for log in $(find . -name '*.log' ! -name test-suite.log ! -name config.log); do
    grep -q -E '^(not ok|ERROR|FAIL)|^# (FAIL|ERROR)' "$log" 2>/dev/null && { echo "== $log"; tail -n 40 "$log"; }
  done
  tail -n 30 make-check.out
fi
awk '/^# PASS:/{p=$3} /^# FAIL:/{f=$3} /^# XPASS:/{f+=$3} /^# ERROR:/{e=$3} /^# SKIP:/{s=$3}
     END{printf "%d passed, %d failed, %d skipped\n", p, f+e, s}' test-suite.log 2>/dev/null ||
  echo "0 passed, 1 failed, 0 skipped"
exit $rc
