#!/bin/sh
# The HDF5 metrics log (src/io/log.h) through tests/test_log: written, read back (HDF5 API, h5dump,
# h5ls) and resumed on 1 and 2 ranks, then resumed on the other rank count; files that are not Surge
# logs refused with exit 2 naming the path; and a writer that h5dump reads while it writes and
# after it is killed with SIGKILL, which leaves exactly the rows of its last flush, and a log that
# resumes from there.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"

prog="$top_build/tests/test_log"
command -v h5dump >/dev/null 2>&1 || tap_skip_all "h5dump not installed (Debian: hdf5-tools)"

tap_pass_through "write np=1" 1 "$prog" write "$tap_tmp"
tap_pass_through "write np=2" 2 "$prog" write "$tap_tmp"
tap_pass_through "1 rank resumed on 2" 2 "$prog" rerank "$tap_tmp/log-1.h5" 1
tap_pass_through "2 ranks resumed on 1" 1 "$prog" rerank "$tap_tmp/log-2.h5" 2

# ---- files that are not Surge logs: exit 2, one message naming the file, the file untouched.
# One-rank failures run without mpiexec, as surge-train on one rank does (mpiexec spends 2 s on
# reporting a non-zero exit).
printf 'step,loss\n1,2.3\n' >"$tap_tmp/text.h5"
timeout 60 "$prog" make-foreign "$tap_tmp"
for name in text.h5 norun.h5 other.h5; do
  f="$tap_tmp/$name"
  before=$(cksum <"$f")
  timeout 60 "$prog" resume "$f" 5 >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
  rc=$?
  msg=$(grep '^surge: error:' "$tap_tmp/err.txt" | head -n 1)
  [ "$rc" = 2 ] && case $msg in *"$f: not a Surge log"*) true ;; *) false ;; esac &&
    [ "$(cksum <"$f")" = "$before" ] && [ ! -s "$tap_tmp/out.txt" ]
  tap_ok $? "resuming into $name: exit $rc, file unchanged, $msg"
done

# a series of 4-byte integers recorded with 993 bits of precision (HDF5 would convert past its own
# locals): resuming into it is refused naming the series
cp "$tap_tmp/log-1.h5" "$tap_tmp/bits.h5" && "$top_build/tests/h5_hostile" "$tap_tmp/bits.h5" /metrics/loss bits=993
timeout 60 "$prog" resume "$tap_tmp/bits.h5" 5 >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
rc=$?
msg=$(grep '^surge: error:' "$tap_tmp/err.txt" | head -n 1)
[ "$rc" = 2 ] && case $msg in *"bits.h5: damaged Surge log: /metrics/loss holds numbers of a type whose recorded layout is impossible"*) true ;; *) false ;; esac
tap_ok $? "resuming into a log whose /metrics/loss claims 993 bits in 4 bytes: exit $rc, $msg"

missing="$tap_tmp/no/such/dir/log.h5"
timeout 60 "$prog" create "$missing" >/dev/null 2>"$tap_tmp/err.txt"
rc=$?
msg=$(grep '^surge: error:' "$tap_tmp/err.txt" | head -n 1)
[ "$rc" = 1 ] && case $msg in *"$missing.tmp: cannot create"*) true ;; *) false ;; esac
tap_ok $? "a log in a missing directory: exit $rc, $msg"

# ---- readable while written and after SIGKILL
# step_rows FILE: the values of /metrics/step as h5dump prints them ("1, 2, 3"); status of h5dump.
step_rows() {
  h5dump -d /metrics/step -w 0 -y "$1" >"$tap_tmp/dump.txt" 2>&1 || return 1
  sed -n '/^   DATA {/{n;p;q;}' "$tap_tmp/dump.txt" | sed 's/^ *//; s/ *$//'
}
# wait_for FILE: until it is not empty, up to 30 s.
wait_for() { tap_wait_until 30 test -s "$1"; }

live="$tap_tmp/live.h5"
mkdir "$tap_tmp/marks"
timeout 60 "$mpiexec" -n 1 "$prog" until-killed "$live" "$tap_tmp/marks" >"$tap_tmp/live.out" 2>"$tap_tmp/live.err" &
launcher=$!
wait_for "$tap_tmp/marks/writing"
tap_ok $? "the writer flushed 20 steps and keeps writing"
# A read may meet a flush in progress (the file is not SWMR): up to three tries.
tries=0
rows=
while [ $tries -lt 3 ] && [ -z "$rows" ]; do
  rows=$(step_rows "$live")
  tries=$((tries + 1))
done
case $rows in "$(seq -s ', ' 1 20)"*) true ;; *) false ;; esac
tap_ok $? "h5dump reads the log while the writer writes ($tries tries): steps 1..${rows##*, }"
touch "$tap_tmp/marks/stop"
wait_for "$tap_tmp/marks/idle"
read -r pid last <"$tap_tmp/marks/idle"
kill -9 "$pid"
wait "$launcher"
flushed=$((last - last % 5))
rows=$(step_rows "$live")
[ -n "$rows" ] && [ "$rows" = "$(seq -s ', ' 1 "$flushed")" ]
tap_ok $? "after SIGKILL (last step $last) h5dump reads exactly the flushed steps 1..$flushed (got 1..${rows##*, })"
h5dump -d /events/text "$live" 2>/dev/null | grep -q '"checkpoint written"'
tap_ok $? "after SIGKILL h5dump reads /events/text"
tap_pass_through "resume after kill" 1 "$prog" resume "$live" 20

tap_done
