#!/bin/sh
# Checkpoints and restarts through surge-train: a run killed (SIGKILL) or stopped (SIGUSR1) and
# resumed ends bit for bit where an uninterrupted run ends, on 1 and 4 ranks; 4-rank state resumes
# on 2 ranks; a damaged newest checkpoint is refused; a NaN stops the run and keeps the last
# checkpoint; a rank killed mid-run brings the whole job down quickly; a stop signal in the last
# step finishes the run.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
compare="$top_build/tests/h5_compare"
deck="$top_src/inputs/vgg-mini-fmnist.deck"
# a vgg-mini small enough to be quick, slow enough (tens of ms a step) to be killed mid-run
base="-D run.steps=20 -D run.print_every=1 -D model.vgg_channels=8,16 -D model.vgg_fc=32 -D train.global_batch=32
      -D data.train_samples=2000 -D data.test_samples=100 -D checkpoint.every=5"

train() { # train NP OUT ARGS...
  np=$1; out=$2; shift 2
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$deck" $base -D "run.out_dir=$out" "$@" >>"$out.txt" 2>&1
}

# wait_for FILE: up to 60 s
wait_for() { tap_wait_until 60 test -e "$1"; }

# long_steps OUT: the steps a resumed run and its straight twin take: 1000, or 100 past the newest
# checkpoint in OUT when the interrupted run got further than that (a slow poll)
long_steps() {
  newest=$(ls "$1/checkpoints" 2>/dev/null | sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.h5$/\1/p' | sort -n | tail -n 1)
  echo $(( ${newest:-0} + 100 > 1000 ? ${newest:-0} + 100 : 1000 ))
}

# straight_as NP ARGS...: the out_dir of an uninterrupted run with ARGS, run once per NP and ARGS
straight_as() {
  np=$1; shift
  dir="$tap_tmp/straight-$np-$(echo "$*" | tr -c 'A-Za-z0-9.\n' '_')"
  [ -e "$dir/model.h5" ] || train "$np" "$dir" "$@"
  echo "$dir"
}

for np in 1 4; do
  train $np "$tap_tmp/straight$np"
  tap_ok $? "20 steps straight on $np rank(s)"

  # crash: SIGKILL once the step-10 checkpoint exists, then resume to a step past the newest
  # checkpoint and compare with a straight run as long. The killed run is asked for a million steps,
  # so the kill lands before its end however fast the steps are (the deck's learning rate is
  # constant: the step count changes no arithmetic before the end). It keeps every checkpoint: at
  # a millisecond a step, the default keep = 3 removes ckpt-00000010.h5 before a poll can see it
  endless="-D run.steps=1000000 -D checkpoint.every=10 -D checkpoint.keep=1000000"
  out="$tap_tmp/killed$np"
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" -n $np "$SURGE_TRAIN" "$deck" $base $endless -D "run.out_dir=$out" >"$out.txt" 2>&1 &
  pid=$!
  wait_for "$out/checkpoints/ckpt-00000010.h5"
  pkill -9 -f "^$SURGE_TRAIN .*run.out_dir=$out( |$)" 2>/dev/null # a crash: every rank dies at once
  wait $pid 2>/dev/null
  [ ! -e "$out/model.h5" ]
  tap_ok $? "$np rank(s): killed with SIGKILL after the step-10 checkpoint, before the end"
  long="-D run.steps=$(long_steps "$out") -D checkpoint.every=10"
  # shellcheck disable=SC2086
  straight=$(straight_as $np $long)
  # shellcheck disable=SC2086
  train $np "$out" $long --resume
  tap_ok $? "$np rank(s): resumed after the kill"
  grep -q "resumed from .*ckpt-[0-9]\{8\}.h5" "$out.txt"
  tap_ok $? "$np rank(s): the resume says which checkpoint it took"
  h5diff "$out/model.h5" "$straight/model.h5" /params /params >/dev/null 2>&1
  tap_ok $? "$np rank(s): kill + resume ends with bitwise the parameters of the straight run"

  # clean stop: SIGUSR1 (Slurm's --signal) to the ranks: finish the step, checkpoint, exit 0 (the
  # status --stopped-exit gives; the job scripts use 75 to requeue)
  out="$tap_tmp/signalled$np"
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" -n $np "$SURGE_TRAIN" "$deck" $base $endless -D "run.out_dir=$out" >"$out.txt" 2>&1 &
  pid=$!
  wait_for "$out/checkpoints/ckpt-00000010.h5"
  pkill -USR1 -f "^$SURGE_TRAIN .*run.out_dir=$out( |$)" 2>/dev/null
  wait $pid
  rc=$?
  grep -q "stopped by a signal after step .*resume with: [^ ]*surge-train .* --resume" "$out.txt"
  tap_ok $(( rc + $? )) "$np rank(s): SIGUSR1 stops with exit $rc and says how to resume"
  long="-D run.steps=$(long_steps "$out") -D checkpoint.every=10"
  # shellcheck disable=SC2086
  straight=$(straight_as $np $long)
  # shellcheck disable=SC2086
  train $np "$out" $long --resume
  h5diff "$out/model.h5" "$straight/model.h5" /params /params >/dev/null 2>&1
  tap_ok $? "$np rank(s): signal + resume ends with bitwise the parameters of the straight run"
done

# a stop while the run starts (MPI, the deck, the data, a checkpoint read): the signal is caught from
# the program's first line (before, SIGUSR1 then killed it: exit 138, no message, no requeue status);
# sent once /proc shows SIGUSR1 caught, it lands during start-up, and the run stops before its first
# step with --stopped-exit's status
out="$tap_tmp/early"
# (no timeout in front: the signal goes to the program itself; its 20 steps end it anyway)
# shellcheck disable=SC2086
"$SURGE_TRAIN" "$deck" $base -D "run.out_dir=$out" --stopped-exit 75 >"$out.txt" 2>&1 &
pid=$!
i=0
until usr1_caught $pid || [ $i -ge 30000 ]; do i=$((i + 1)); done # (no sleep: the start-up takes a fraction of a second)
kill -USR1 $pid
wait $pid
rc=$?
[ $rc = 75 ] && grep -q "stopped by a signal before step 1 of 20; resume with: .*--resume" "$out.txt"
tap_ok $? "SIGUSR1 during start-up stops before the first step: exit $rc, $(grep -o 'stopped by a signal.*' "$out.txt" | head -c 100)"

# a stop signal the last step takes (sent once step 19 is printed: its checkpoint is being written,
# and step 20 reads the signal): the run has reached its steps and finishes, exit 0 with its model
# file and a line saying so (it ended as stopped, 75, without the model file, for a requeue that would
# only have written it)
out="$tap_tmp/last"
# shellcheck disable=SC2086
"$SURGE_TRAIN" "$deck" $base -D checkpoint.every=1 -D model.vgg_fc=256 -D "run.out_dir=$out" --stopped-exit 75 \
  >"$out.txt" 2>&1 &
pid=$!
i=0
until grep -q "step 19/20" "$out.txt" 2>/dev/null || [ $i -ge 100000 ]; do i=$((i + 1)); done
kill -USR1 $pid
wait $pid
rc=$?
[ $rc = 0 ] && [ -e "$out/model.h5" ] && grep -q "a stop signal in the last step: the run finishes" "$out.txt"
tap_ok $? "SIGUSR1 taken by the last step: the run finishes: exit $rc, model file $([ -e "$out/model.h5" ] && echo written || echo missing)"

# 4-rank state continued on 2 ranks: equal to the straight 4-rank run within float tolerance
out="$tap_tmp/four-to-two"
train 4 "$out" -D run.steps=10
train 2 "$out" --resume
tap_ok $? "4-rank checkpoint of step 10 resumes on 2 ranks"
res=$("$compare" "$out/model.h5" "$tap_tmp/straight4/model.h5" 1e-5 2>&1)
tap_ok $? "4 ranks to step 10, then 2 ranks to 20 = 4 ranks straight: $res"

# a damaged newest checkpoint is refused, naming the file (never loaded silently)
out="$tap_tmp/damaged"
train 1 "$out" -D run.steps=10
ck="$out/checkpoints/ckpt-00000010.h5"
size=$(stat -c %s "$ck")
head -c $((size / 2)) "$ck" >"$ck.cut" && mv "$ck.cut" "$ck"
train 1 "$out" --resume
rc=$?
grep -q "ckpt-00000010.h5" "$out.txt"
tap_ok $(( (rc != 2) + $? )) "a truncated newest checkpoint is refused with exit $rc, naming it: $(grep 'error' "$out.txt" | head -n 1)"

# NaN: a huge learning rate makes the loss blow up (an mlp reaches Inf within 10 steps): exit 1, a
# clear message, checkpoints intact
out="$tap_tmp/nan"
timeout 300 "$mpiexec" -n 1 "$SURGE_TRAIN" "$top_src/inputs/mlp-fmnist.deck" -D train.lr=10 -D train.momentum=0.99 \
  -D run.steps=200 -D data.train_samples=2000 -D checkpoint.every=1 -D checkpoint.keep=2 -D "run.out_dir=$out" \
  >"$out.txt" 2>&1
rc=$?
grep -q "not finite" "$out.txt"
tap_ok $(( (rc != 1) + $? )) "a non-finite loss stops the run (exit $rc): $(grep 'not finite' "$out.txt" | head -n 1 | cut -c1-160)"
last=$(ls "$out/checkpoints" | grep -E '^ckpt-[0-9]{8}\.h5$' | tail -n 1)
[ -n "$last" ] && h5dump -H "$out/checkpoints/$last" >/dev/null 2>&1
tap_ok $? "the last checkpoint before the NaN ($last) is intact"

# one rank killed mid-run: the whole job exits non-zero within 30 s, nothing hangs
out="$tap_tmp/rankdeath"
# shellcheck disable=SC2086
timeout 120 "$mpiexec" -n 4 "$SURGE_TRAIN" "$deck" $base -D run.steps=100000 -D checkpoint.keep=1000000 \
  -D "run.out_dir=$out" >"$out.txt" 2>&1 &
pid=$!
wait_for "$out/checkpoints/ckpt-00000005.h5"
victim=$(pgrep -f "^$SURGE_TRAIN .*run.out_dir=$out( |$)" | tail -n 1)
kill -9 "$victim"
start=$(date +%s)
wait $pid
rc=$?
took=$(( $(date +%s) - start ))
[ $rc != 0 ] && [ $rc != 124 ] && [ $took -le 30 ]
tap_ok $? "a rank killed mid-run ends the 4-rank job with exit $rc after ${took}s"

tap_done
