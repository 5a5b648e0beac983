#!/bin/sh
# A multi-rank in-process background ([multiplex] background_ranks, doc/multiplexing.md "In-process
# backgrounds"): the vgg-mini burst foreground on 2 ranks (mux_pair.sh) with one 2-rank data-parallel
# mlp background job in the second threads of both ranks' processes (background_ranks = 0: all):
#  - the foreground's parameters are bitwise those of the same run alone, the background's
#    (on_foreground_end = continue, 25 steps) bitwise those of its deck run alone as a 2-rank job,
#    and it writes what that job writes: one log of 2 ranks, its checkpoints and model.h5, in
#    out_dir/bg0; with a checkpoint every step the two jobs' collective io does not deadlock on the
#    processes' HDF5 locks;
#  - stopped by its foreground's end (its threads at nice 19, not SCHED_IDLE), its checkpoint resumes as a separate 2-rank background process,
#    and a separate 2-rank background process's checkpoint resumes in-process, both ending bitwise
#    where a straight 2-rank run of the deck ends;
#  - under a 4-rank foreground, background_ranks = 2 makes two such jobs, each bitwise the deck alone;
#  - an error in a multi-rank background ends the processes (no hang), and a background_ranks the
#    foreground's ranks cannot host exits 2 naming the key.
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/mux_pair.sh"
FG="$FG -D run.steps=30"
# job OUT ARGS...: the foreground on 2 ranks with one 2-rank in-process background job
job() {
  job_out=$1
  shift
  in_process "$job_out" -D multiplex.background_ranks=0 "$@"
}

# ---- the foreground alone, the background deck alone on 2 ranks, and the two in one job
timeout 300 "$mpiexec" -n 2 $FG -D "run.out_dir=$tap_tmp/solo" >"$tap_tmp/solo.txt" 2>&1
timeout 300 "$mpiexec" -n 2 $BG -D run.steps=25 -D "run.out_dir=$tap_tmp/bgsolo" >"$tap_tmp/bgsolo.txt" 2>&1
# (normal OS priority for the bitwise check, as in test_mux_thread.sh; priority = idle is used below)
# (a background checkpoint every step: collective io of both jobs, each holding its process's HDF5
# lock, which deadlocked before the background's ranks took their locks together, io/h5serial.h)
job "$tap_tmp/cont.txt" -D "run.out_dir=$tap_tmp/fg" -D bg:run.steps=25 -D bg:multiplex.on_foreground_end=continue \
  -D bg:multiplex.priority=none -D bg:checkpoint.every=1 -D "bg:run.out_dir=$tap_tmp/bg"
exited_ok $? "$tap_tmp/cont.txt" "foreground on 2 ranks + one 2-rank in-process background"
same "$tap_tmp/fg/model.h5" "$tap_tmp/solo/model.h5"
tap_ok $? "the foreground's parameters = the same run alone ($(cat "$tap_tmp/cmp.txt"))"
same "$tap_tmp/bg/bg0/model.h5" "$tap_tmp/bgsolo/model.h5"
tap_ok $? "the background (out_dir/bg0), 25 steps = its deck alone on 2 ranks ($(cat "$tap_tmp/cmp.txt"))"
[ "$(h5vals "$tap_tmp/bg/bg0/log.h5" /ranks/rank | wc -l)" = 2 ] && [ ! -e "$tap_tmp/bg/bg1" ] &&
  [ "$(h5attr "$tap_tmp/bg/bg0/checkpoints/ckpt-00000025.h5" /ranks)" = 2 ] &&
  grep -aq "^\[foreground\] in-process backgrounds (jobs of 2 ranks): exit status 0\$" "$tap_tmp/cont.txt" &&
  grep -aq "^\[background of ranks 0-1\] multiplex: background on channel in-process (2 ranks" "$tap_tmp/cont.txt"
tap_ok $? "one job's files: a log of 2 ranks and a 2-rank checkpoint in out_dir/bg0 (no bg1), one exit status"

# ---- stopped by the foreground's end (priority = idle: nice 19 for a multi-rank job's threads,
# which at SCHED_IDLE could hold MPI's progress while their foreground spins), resumed as a separate
# background process
job "$tap_tmp/stop.txt" -D "run.out_dir=$tap_tmp/fgs" -D bg:run.steps=100000 -D "bg:run.out_dir=$tap_tmp/bgs"
rc=$?
h5vals "$tap_tmp/bgs/bg0/log.h5" /events/text | grep -q "stopped: the foreground ended" &&
  ls "$tap_tmp/bgs/bg0/checkpoints/"ckpt-*.h5 >/dev/null 2>&1 &&
  [ "$(h5attr "$tap_tmp/bgs/bg0/log.h5" /multiplex/priority)" = "nice 19" ] &&
  grep -aq "^\[foreground\] multiplex: the 2-rank in-process background runs at nice 19, not SCHED_IDLE" "$tap_tmp/stop.txt" &&
  grep -aq "resume with: [^ ]*surge-train .*mlp-fmnist.deck .*run.out_dir=$tap_tmp/bgs/bg0 --resume" "$tap_tmp/stop.txt"
tap_ok $? "on_foreground_end = stop: the 2-rank background stops at nice 19 (said so) with a checkpoint and prints its resume command (exit $rc)"
# an MPMD pair with a 2-rank background process stopped by its foreground's end
timeout 300 "$mpiexec" -n 2 $FG -D run.steps=10 -D "run.out_dir=$tap_tmp/fgp" \
  : -n 2 $BG --background -D run.steps=100000 -D "run.out_dir=$tap_tmp/bgp/bg0" >"$tap_tmp/mpmd.txt" 2>&1
rc=$?
K=$(($(newest_of "$tap_tmp/bgs/bg0" "$tap_tmp/bgp/bg0") + 5))
timeout 300 "$mpiexec" -n 2 $BG -D run.steps=$K -D "run.out_dir=$tap_tmp/straight" >"$tap_tmp/straight.txt" 2>&1
tap_diag "stopped at steps $(last_step "$tap_tmp/bgs/bg0/log.h5") (in-process), $(last_step "$tap_tmp/bgp/bg0/log.h5") (process, exit $rc); both resumed to $K"
# in-process -> process: the thread job's checkpoint resumed by a 2-rank background process
resume_beside "$tap_tmp/resume1.txt" 2 "$tap_tmp/bgs/bg0" $K
rc=$?
same "$tap_tmp/bgs/bg0/model.h5" "$tap_tmp/straight/model.h5" &&
  grep -aq "\[background\] resumed from .*bgs/bg0/checkpoints" "$tap_tmp/resume1.txt"
tap_ok $? "a 2-rank in-process background's checkpoint resumes as a 2-rank background process: step $K = a straight run (exit $rc; $(cat "$tap_tmp/cmp.txt"))"
# process -> in-process: the MPMD background's checkpoint resumed by the threads (out_dir/bg0 is its directory)
resume_in_process "$tap_tmp/resume2.txt" "$tap_tmp/bgp" $K -D multiplex.background_ranks=0
rc=$?
same "$tap_tmp/bgp/bg0/model.h5" "$tap_tmp/straight/model.h5" &&
  grep -aq "\[background of ranks 0-1\] resumed from .*bgp/bg0/checkpoints" "$tap_tmp/resume2.txt"
tap_ok $? "a 2-rank background process's checkpoint resumes in-process: step $K = a straight run (exit $rc; $(cat "$tap_tmp/cmp.txt"))"

# ---- background_ranks = 2 under a 4-rank dp foreground: two 2-rank jobs, ranks 0-1 (bg0) and 2-3 (bg1)
# shellcheck disable=SC2086
timeout 300 "$mpiexec" -n 4 $FG -D parallel.mode=dp -D multiplex.placement=thread -D multiplex.background_ranks=2 $IN \
  -D "run.out_dir=$tap_tmp/fg4" -D bg:run.steps=25 -D bg:multiplex.on_foreground_end=continue \
  -D bg:multiplex.priority=none -D "bg:run.out_dir=$tap_tmp/bg4" >"$tap_tmp/four.txt" 2>&1
rc=$?
[ $rc = 0 ] || tap_diag "$(shown "$tap_tmp/four.txt" | tail -15)"
[ $rc = 0 ] && same "$tap_tmp/bg4/bg0/model.h5" "$tap_tmp/bgsolo/model.h5" && cp "$tap_tmp/cmp.txt" "$tap_tmp/cmp0.txt" &&
  same "$tap_tmp/bg4/bg1/model.h5" "$tap_tmp/bgsolo/model.h5" &&
  grep -aq "^\[foreground\] in-process backgrounds (jobs of 2 ranks): exit status 0 0\$" "$tap_tmp/four.txt" &&
  grep -aq "^\[background of ranks 2-3\] " "$tap_tmp/four.txt"
tap_ok $? "background_ranks = 2 on 4 foreground ranks: two 2-rank jobs, each = the deck alone on 2 ranks (exit $rc; $(cat "$tap_tmp/cmp0.txt" 2>/dev/null); $(cat "$tap_tmp/cmp.txt"))"

# ---- an error in a multi-rank background ends the processes: its other rank may wait for the
# failed one in a collective, holding its process's HDF5 lock. The error may land inside a stdout
# line (mpiexec reads a rank's stdout and stderr apart: test_mux_thread.sh), so it is matched anywhere
job "$tap_tmp/err.txt" -D "run.out_dir=$tap_tmp/fgerr" -D bg:run.out_dir=/dev/null/bg
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && grep -aq "surge: error: background of ranks 0-1 rank [01]: " "$tap_tmp/err.txt"
tap_ok $? "an error in the 2-rank background ends the job, labelled with its rank: exit $rc, no hang"

# ---- background_ranks that the foreground cannot host
# to OUT NP ARGS...: mpiexec -n NP ARGS, its output in OUT
to() {
  to_out=$1 to_np=$2
  shift 2
  timeout 60 "$mpiexec" -n "$to_np" "$@" >"$to_out" 2>&1
}
tap_refused "background_ranks = 3 on 2 foreground ranks" \
  "\[multiplex\] background_ranks = 3: the foreground's 2 ranks cannot host in-process background jobs of 3 ranks" \
  "$tap_tmp/r1.txt" to "$tap_tmp/r1.txt" 2 $FG -D multiplex.placement=thread $IN -D multiplex.background_ranks=3 \
  -D "run.out_dir=$tap_tmp/r1"
tap_refused "background_ranks = 2 on 3 foreground ranks (not a divisor)" \
  "\[multiplex\] background_ranks = 2: the foreground's 3 ranks cannot host" "$tap_tmp/r2.txt" \
  to "$tap_tmp/r2.txt" 3 $FG -D parallel.mode=dp -D multiplex.placement=thread $IN -D multiplex.background_ranks=2 \
  -D "run.out_dir=$tap_tmp/r2"
tap_done
