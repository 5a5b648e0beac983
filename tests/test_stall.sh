#!/bin/sh
# A rank that waits for ever (core/watchdog.h, [run] stall_timeout_s): in a 2-rank job one rank is
# stopped (SIGSTOP, as a peer behind a link that died silently looks to the other); with a timeout of
# 2 s the job ends with exit 1 and a line naming the timeout, the step and what the rank was doing,
# well before the test's own limit (it waited for ever before); its checkpoints are intact and the run
# resumes from the newest. A run that makes progress is not ended (timeout 60 s), nor one suspended
# for 5 s and resumed (SIGSTOP, SIGCONT: the suspension is not the trainer's). A foreground whose
# in-process backgrounds have finished is still watched (a background's end stopped its foreground's
# watchdog).
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"

# stop_one_rank PATTERN: SIGSTOP the newest process matching PATTERN (a rank of the job $job), then
# wait for the job to end, at most 60 s (then everything matching is killed); sets rank, waited, rc
stop_one_rank() {
  rank=$(pgrep -f "$1" | tail -n 1)
  [ -n "$rank" ] && kill -STOP "$rank"
  start=$(date +%s)
  waited=0
  while kill -0 $job 2>/dev/null && [ $waited -lt 60 ]; do
    sleep 0.5
    waited=$(($(date +%s) - start))
  done
  if kill -0 $job 2>/dev/null; then
    pkill -KILL -f "$1"
    kill -KILL $job
  fi
  wait $job
  rc=$?
}
deck="$tap_tmp/mlp.deck"
cat >"$deck" <<DECK
[run]
name = stall
steps = 1000000
print_every = 1000000
out_dir = $tap_tmp/run
[model]
zoo = mlp
mlp_hidden = 16
[data]
source = synthetic
synthetic_samples = 256
test_samples = 16
[train]
global_batch = 16
[checkpoint]
every = 20
compression = none
DECK

"$mpiexec" -n 2 "$SURGE_TRAIN" "$deck" -D run.stall_timeout_s=2 >"$tap_tmp/stall.txt" 2>&1 &
job=$!
tries=0 # the first checkpoints, then one rank stops
while ! ls "$tap_tmp/run/checkpoints" 2>/dev/null | grep -q '^ckpt-.*\.h5$' && [ $tries -lt 600 ]; do
  sleep 0.1
  tries=$((tries + 1))
done
stop_one_rank "surge-train $deck"
line=$(grep -m 1 "surge: error: rank [01]: no progress for" "$tap_tmp/stall.txt")
[ -n "$rank" ] && [ $rc != 0 ] && [ $waited -lt 30 ] &&
  printf '%s\n' "$line" | grep -q "no progress for [0-9]* s on .*, in .* (step [0-9]*): a rank or a link it waits on may be down (ending this process; \[run\] stall_timeout_s = 2; earlier checkpoints are intact)"
tap_ok $? "one rank of 2 stopped: the job ended in $waited s with exit $rc: $line"
pkill -KILL -f "surge-train $deck" 2>/dev/null
newest=$(ls "$tap_tmp/run/checkpoints" | grep '^ckpt-' | tail -n 1)
n=$(echo "$newest" | sed 's/ckpt-0*\([0-9]*\)\.h5/\1/')
timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$deck" --resume -D "run.steps=$((n + 5))" >"$tap_tmp/resume.txt" 2>&1 &&
  grep -q "resum.*step $n" "$tap_tmp/resume.txt"
tap_ok $? "the newest checkpoint ($newest) is intact: the run resumes from it to step $((n + 5))"

rm -rf "$tap_tmp/run"
timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$deck" -D run.steps=60 -D run.stall_timeout_s=60 >"$tap_tmp/ok.txt" 2>&1
tap_ok $? "a run that makes progress with stall_timeout_s = 60 finishes"
# suspended for 5 s and resumed, on 1 rank: it goes on (it was ended on resuming)
rm -rf "$tap_tmp/run"
"$SURGE_TRAIN" "$deck" -D run.steps=100000000 -D run.stall_timeout_s=2 >"$tap_tmp/susp.txt" 2>&1 &
job=$!
sleep 1
kill -STOP $job
sleep 5
kill -CONT $job
sleep 3
alive=0
kill -0 $job 2>/dev/null && alive=1
kill -TERM $job 2>/dev/null # a stop signal: a checkpoint, then exit 0
wait $job
rc=$?
[ $alive = 1 ] && ! grep -q "no progress" "$tap_tmp/susp.txt"
tap_ok $? "a run suspended 5 s at stall_timeout_s = 2 goes on when resumed (alive 3 s later: $alive; exit $rc on SIGTERM)"

# a foreground whose in-process backgrounds (3 steps each) have finished, then a rank stopped: the
# job still ends (the backgrounds' end stopped the watchdog, and the job waited for ever)
if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  . "$top_src/tests/mux_pair.sh"
  timeout 300 "$mpiexec" -n 2 $FG -D run.steps=100000000 -D run.stall_timeout_s=3 -D multiplex.placement=thread $IN \
    -D bg:run.steps=3 -D bg:multiplex.on_foreground_end=continue -D bg:multiplex.priority=none \
    -D "run.out_dir=$tap_tmp/fgw" -D "bg:run.out_dir=$tap_tmp/bgw" >"$tap_tmp/inproc.txt" 2>&1 &
  job=$!
  tries=0
  while [ "$(grep -ac '^\[background of rank [01]\] done:' "$tap_tmp/inproc.txt")" != 2 ] && [ $tries -lt 1200 ]; do
    sleep 0.1
    tries=$((tries + 1))
  done
  stop_one_rank "surge-train $top_src/inputs/vgg-mini-fmnist.deck.*fgw"
  [ -n "$rank" ] && [ $rc != 0 ] && [ $waited -lt 30 ] && grep -aq "no progress for" "$tap_tmp/inproc.txt"
  tap_ok $? "in-process backgrounds done, then a foreground rank stopped: the job ended in $waited s (exit $rc)"
else
  tap_skip "dataset-fashion-mnist is not installed (the in-process pair's foreground reads it)"
fi

"$SURGE_TRAIN" "$deck" -D run.stall_timeout_s=-1 >/dev/null 2>"$tap_tmp/err.txt"
rc=$?
[ $rc = 2 ] && grep -q "stall_timeout_s" "$tap_tmp/err.txt"
tap_ok $? "a negative stall_timeout_s: exit $rc: $(cat "$tap_tmp/err.txt")"
tap_done
