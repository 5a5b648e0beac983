#!/bin/sh
# A run's data is never lost to a second run or a mistyped command, and output locations fail at the
# start (doc/security.md). Each case below was a defect found by trying the programs as a hostile user
# and a flaky cluster would (issue 17):
#  - --resume with no checkpoint does not start a finished run over (its model.h5 and log stay);
#  - the resume command printed at a stop is the whole command line, quoted: run by a shell as
#    printed, it resumes (an override it dropped would be refused as another configuration);
#  - an output directory is locked for the run's life: a second run, also one started at the same
#    moment, is refused naming the holder (host, pid, start time);
#  - a checkpoint directory holding another run's checkpoints is refused, for a new run and for a
#    resumed one whose log is another run's; [run] overwrite leaves none of the old run's checkpoints
#    for a later --resume;
#  - a resumed run refuses a log whose extent claims rows the file does not store;
#  - surge-report never writes its outputs over an HDF5 file or an input of its command line, and no
#    program writes an output over an input, another output or a device (io/outputs.h);
#  - output locations that cannot be written fail at the start with exit 2, whether they existed or
#    not (a read-only tmpfs, where this may mount one);
#  - a disk that fills while the log is flushed: one line, exit 1, no crash, the log readable up to
#    its last good flush (a small tmpfs);
#  - a run killed as its log is made resumes (the half-made log stopped every --resume);
#  - a file-size limit on one rank of two ends the job at its checkpoint write (it hung);
#  - standard output that cannot be written ends a program with exit 1 (it exited 0).
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
report="$top_build/surge-report"
deck="$tap_tmp/tiny.deck"
cat >"$deck" <<DECK
[run]
name = tiny
steps = 6
print_every = 1000
eval_every = 0
[model]
zoo = mlp
mlp_hidden = 16
[data]
source = synthetic
synthetic_samples = 512
[train]
global_batch = 8
[checkpoint]
every = 2
DECK

# train OUT ARGS...: one rank, output in OUT.txt; its exit status
train() {
  out=$1; shift
  timeout 120 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$out" "$@" >"$out.txt" 2>&1
}
# one_error FILE PATTERN: FILE has exactly one "surge: error:" line and it matches PATTERN
one_error() {
  [ "$(grep -c '^surge: error:' "$1")" = 1 ] && grep '^surge: error:' "$1" | grep -q -E -e "$2"
}
error_of() { grep -m 1 '^surge: error:' "$1" | cut -c 1-240; }
sums() { cksum "$@" 2>/dev/null; }

# ---- 1. --resume without a checkpoint never starts a finished run over
a="$tap_tmp/a"
train "$a"
tap_ok $? "a run finishes"
before=$(sums "$a/model.h5" "$a/log.h5")
train "$a" --resume -D "checkpoint.dir=$tap_tmp/nockpt"
rc=$?
one_error "$a.txt" "--resume: no checkpoint in .*nockpt, and .*a/model\.h5 is the model of a finished run" &&
  [ "$(sums "$a/model.h5" "$a/log.h5")" = "$before" ]
tap_ok $(( (rc != 2) + $? )) "--resume without a checkpoint: exit $rc, model.h5 and log.h5 untouched: $(error_of "$a.txt")"
# with its checkpoints, --resume of a finished run (a job script's requeue, a re-run array task) runs
# no step: its final evaluation is not logged twice, which left a log surge-report refused
cp -r "$a" "$tap_tmp/again"
train "$tap_tmp/again" --resume && train "$tap_tmp/again" --resume &&
  "$report" "$tap_tmp/again/log.h5" >"$tap_tmp/again-report.txt" 2>&1 &&
  [ "$(h5vals "$tap_tmp/again/log.h5" /eval/step | uniq -d)" = "" ]
tap_ok $? "--resume of a finished run, twice: the log reads, /eval/step $(h5vals "$tap_tmp/again/log.h5" /eval/step | tr '\n' ' '): $(grep -o 'error: .*' "$tap_tmp/again-report.txt" | head -c 160)"

# ---- the resume command printed at a stop is the whole command line, and a shell runs it as printed
s="$tap_tmp/stop"
"$SURGE_TRAIN" "$deck" -D "run.out_dir=$s" -D run.steps=100000 -D checkpoint.every=10 -D train.lr=0.02 \
  -D "log.file=$s/it's a log.h5" --stopped-exit 75 >"$s.txt" 2>&1 &
pid=$!
# any checkpoint: steps of 0.1 ms write and (keep = 3) remove ckpt-00000010.h5 within milliseconds
tap_wait_until 60 sh -c 'ls "$1"/ckpt-*.h5 >/dev/null 2>&1' sh "$s/checkpoints"
kill -USR1 $pid
wait $pid
rc=$?
cmd=$(sed -n 's/.*; resume with: //p' "$s.txt")
case $cmd in
  *" -D train.lr=0.02 -D 'log.file=$s/it'\\''s a log.h5' --stopped-exit 75 --resume") quoted=0 ;;
  *) quoted=1 ;;
esac
tap_ok $(( (rc != 75) + quoted )) "a stop (exit $rc) prints the command line with every override, quoted: $cmd"
# the resumed run must not run all 100000 steps: the printed command gets one more override, a
# few steps past the stop
stopped=$(sed -n 's/.*stopped by a signal after step \([0-9]*\) .*/\1/p' "$s.txt")
sh -c "$cmd -D run.steps=$((${stopped:-0} + 20))" >"$s-resumed.txt" 2>&1
rc=$?
grep -q "resumed from .*ckpt-[0-9]*\.h5 at step" "$s-resumed.txt" && [ -f "$s/model.h5" ] && [ -f "$s/it's a log.h5" ]
tap_ok $(( rc + $? )) "the printed command, run by sh, resumes (exit $rc): $(grep -m 1 'resumed from' "$s-resumed.txt")"

# ---- one run at a time in an output directory
l="$tap_tmp/locked"
"$SURGE_TRAIN" "$deck" -D "run.out_dir=$l" -D run.steps=100000000 >"$l-holder.txt" 2>&1 &
holder=$!
tap_wait_until 60 test -e "$l/log.h5"
train "$l" -D run.steps=4
rc=$?
one_error "$l.txt" "\[run\] out_dir = .*locked is in use by another run: held by surge-train pid $holder on [^ ]+ since [0-9T:-]+Z"
tap_ok $(( (rc != 2) + $? )) "a second run in a locked out_dir: exit $rc, naming the holder: $(error_of "$l.txt")"
train "$tap_tmp/other" -D "checkpoint.dir=$l/checkpoints"
rc=$?
one_error "$tap_tmp/other.txt" "\[checkpoint\] dir = .*locked/checkpoints is in use by another run: held by surge-train pid $holder"
tap_ok $(( (rc != 2) + $? )) "a run whose checkpoint.dir another run holds: exit $rc"
kill -9 $holder
wait $holder 2>/dev/null
# two runs started at the same moment: one trains, the other is refused
t="$tap_tmp/twins"
for i in 1 2; do
  "$SURGE_TRAIN" "$deck" -D "run.out_dir=$t" -D run.steps=100000000 >"$t-$i.txt" 2>&1 &
  eval "twin$i=\$!"
done
# shellcheck disable=SC2154 # twin1 and twin2 are set by the eval above
tap_wait_until 60 sh -c "grep -q 'in use by another run' '$t-1.txt' '$t-2.txt'"
refused=$(grep -l "in use by another run" "$t-1.txt" "$t-2.txt" | wc -l)
kill -9 "$twin1" "$twin2" 2>/dev/null
wait "$twin1" "$twin2" 2>/dev/null
tap_ok $(( refused != 1 )) "two runs started at once on one out_dir: exactly one refused ($refused)"

# ---- another run's checkpoints
b="$tap_tmp/b"
before=$(sums "$a"/checkpoints/ckpt-*)
train "$b" -D "checkpoint.dir=$a/checkpoints"
rc=$?
one_error "$b.txt" "\[checkpoint\] dir = .*a/checkpoints holds 3 checkpoints of another run \(the newest .*ckpt-00000006\.h5, step 6, run [0-9a-f]{16}\)" &&
  [ "$(sums "$a"/checkpoints/ckpt-*)" = "$before" ] && [ ! -e "$b/log.h5" ]
tap_ok $(( (rc != 2) + $? )) "a new run in another run's checkpoint.dir: exit $rc, nothing replaced: $(error_of "$b.txt")"
train "$b"
train "$b" --resume -D run.steps=8 -D "checkpoint.dir=$a/checkpoints"
rc=$?
one_error "$b.txt" "ckpt-00000006\.h5 belongs to run [0-9a-f]{16}, but the log .*b/log\.h5 is run [0-9a-f]{16}'s" &&
  [ "$(sums "$a"/checkpoints/ckpt-*)" = "$before" ]
tap_ok $(( (rc != 2) + $? )) "--resume from another run's checkpoints: exit $rc: $(error_of "$b.txt")"
# overwrite: a new run in place of the finished one leaves none of its checkpoints behind
train "$a" -D run.overwrite=true -D run.steps=2
ls "$a/checkpoints" | tr '\n' ' ' >"$tap_tmp/ls.txt"
[ "$(cat "$tap_tmp/ls.txt")" = "ckpt-00000002.h5 " ]
tap_ok $? "run.overwrite removes the old run's checkpoints: $(cat "$tap_tmp/ls.txt")"
train "$a" --resume -D run.steps=6
grep -q "resumed from .*a/checkpoints/ckpt-00000002\.h5 at step 2" "$a.txt"
tap_ok $? "a later --resume continues the new run, not the old one's step 6: $(grep -m 1 'resumed from' "$a.txt")"

# ---- a resumed run trusts its log no more than surge-report does: an extent claimed with nothing
# stored behind it is refused before anything is allocated for it
c="$tap_tmp/c"
train "$c" -D run.steps=4
"$top_build/tests/test_report_lib" damage "$c/log.h5" /metrics/step extent=100000000
train "$c" --resume -D run.steps=6
rc=$?
one_error "$c.txt" "c/log\.h5: damaged Surge log: /metrics/step claims 100000000 rows, but the file stores"
tap_ok $(( (rc != 2) + $? )) "--resume onto a log claiming 10^8 steps: exit $rc: $(error_of "$c.txt")"

# ---- surge-report outputs never replace an HDF5 file or an input
log="$a/log.h5"
cp "$log" "$tap_tmp/second.h5"
before=$(sums "$log" "$tap_tmp/second.h5")
for opt in --csv --json; do
  "$report" $opt "$log" "$tap_tmp/second.h5" >"$tap_tmp/r.txt" 2>&1
  rc=$?
  one_error "$tap_tmp/r.txt" "$opt .*a/log\.h5: .*(HDF5 file|input)" && [ "$(sums "$log" "$tap_tmp/second.h5")" = "$before" ]
  tap_ok $(( (rc != 2) + $? )) "surge-report $opt LOG LOG2 refuses to write over LOG (exit $rc): $(error_of "$tap_tmp/r.txt")"
done
printf 'not a log\n' >"$tap_tmp/input.txt"
"$report" "$log" --csv "$tap_tmp/same.out" --json "$tap_tmp/same.out" >"$tap_tmp/r.txt" 2>&1
rc=$?
one_error "$tap_tmp/r.txt" "same\.out.*both" && [ ! -e "$tap_tmp/same.out" ]
tap_ok $(( (rc != 2) + $? )) "--csv and --json to one file are refused before writing (exit $rc)"
mkdir -p "$tap_tmp/fig"
cp "$tap_tmp/second.h5" "$tap_tmp/fig/loss.svg"
"$report" "$tap_tmp/fig/loss.svg" --plot "$tap_tmp/fig" >"$tap_tmp/r.txt" 2>&1
rc=$?
one_error "$tap_tmp/r.txt" "fig/loss\.svg.* is an input" && cmp -s "$tap_tmp/fig/loss.svg" "$tap_tmp/second.h5"
tap_ok $(( (rc != 2) + $? )) "--plot DIR does not write a figure over an input log (exit $rc): $(error_of "$tap_tmp/r.txt")"
"$report" "$tap_tmp/second.h5" --csv "$tap_tmp/fine.csv" >/dev/null 2>&1 && [ -s "$tap_tmp/fine.csv" ]
tap_ok $? "an ordinary --csv FILE is written"

# ---- every program's outputs: never an input of its command, another output, or a device (a write
# by rename would replace the device node itself; a fifo stands in for /dev/full here)
# refused WHAT PATTERN FILE COMMAND...: exit 2, one error matching PATTERN, FILE unchanged
refused() {
  r_what=$1 r_pattern=$2 r_file=$3
  shift 3
  r_before=$(sums "$r_file")
  timeout 120 "$@" >"$tap_tmp/refused.txt" 2>&1
  r_rc=$?
  one_error "$tap_tmp/refused.txt" "$r_pattern" && [ "$(sums "$r_file")" = "$r_before" ]
  tap_ok $(( (r_rc != 2) + $? )) "$r_what: exit $r_rc, nothing written: $(error_of "$tap_tmp/refused.txt")"
}
graph="$top_src/inputs/gpt-2.5b.graph"
cp "$deck" "$tap_tmp/copy.deck"
cp "$graph" "$tap_tmp/copy.graph"
mkfifo "$tap_tmp/fifo"
refused "surge-train -D log.file=DECK" "log\.file=.*copy\.deck: \[log\] file .*copy\.deck: DECK .*copy\.deck is an input" \
  "$tap_tmp/copy.deck" "$SURGE_TRAIN" "$tap_tmp/copy.deck" -D "run.out_dir=$tap_tmp/o1" -D "log.file=$tap_tmp/copy.deck"
refused "surge-train with [model] init its own out_dir's model.h5, overwrite on" \
  "out_dir's model\.h5 .*a/model\.h5: .*\[model\] init .*a/model\.h5 is an input" "$a/model.h5" \
  "$SURGE_TRAIN" "$deck" -D "run.out_dir=$a" -D run.overwrite=true -D "model.init=$a/model.h5"
refused "surge-train with [model] init a checkpoint that overwrite removes" "init = .*ckpt-.*\\[run\\] overwrite removes" \
  "$(ls "$a"/checkpoints/ckpt-*.h5 | tail -n 1)" "$SURGE_TRAIN" "$deck" -D "run.out_dir=$a" -D run.overwrite=true \
  -D "model.init=$(ls "$a"/checkpoints/ckpt-*.h5 | tail -n 1)"
refused "surge-train -D log.file=a fifo" "\[log\] file .*fifo: it exists and is not a regular file" "$deck" \
  "$SURGE_TRAIN" "$deck" -D "run.out_dir=$tap_tmp/o2" -D "log.file=$tap_tmp/fifo"
refused "surge-convert IN IN" "OUT .*a/\./model\.h5: IN .*a/model\.h5 is an input" "$a/model.h5" \
  "$top_build/surge-convert" "$a/model.h5" "$a/./model.h5"
refused "surge-convert IN FIFO" "OUT .*fifo: it exists and is not a regular file" "$a/model.h5" \
  "$top_build/surge-convert" "$a/model.h5" "$tap_tmp/fifo" --to h5
[ -p "$tap_tmp/fifo" ]
tap_ok $? "the fifo is still a fifo"
refused "surge-plan -o GRAPH" "-o .*copy\.graph: --graph .*copy\.graph is an input" "$tap_tmp/copy.graph" \
  "$top_build/surge-plan" --graph "$tap_tmp/copy.graph" --ranks 2 --batch 2 -o "$tap_tmp/copy.graph"
refused "surge-plan -o F --write-graph F" "-o .*p\.txt and --write-graph .*p\.txt both name one file" "$tap_tmp/copy.graph" \
  "$top_build/surge-plan" --graph "$tap_tmp/copy.graph" --ranks 2 --batch 2 -o "$tap_tmp/p.txt" \
  --write-graph "$tap_tmp/p.txt"
refused "surge-sim -o GRAPH" "-o .*copy\.graph: --graph .*copy\.graph is an input" "$tap_tmp/copy.graph" \
  "$top_build/surge-sim" --graph "$tap_tmp/copy.graph" --ranks 2 --batch 2 -o "$tap_tmp/copy.graph"
refused "surge-profile -o DECK" "-o .*copy\.deck: DECK .*copy\.deck is an input" "$tap_tmp/copy.deck" \
  "$top_build/surge-profile" "$tap_tmp/copy.deck" -o "$tap_tmp/copy.deck"
refused "surge-report --csv into a missing directory, before the report" "--csv .*nodir/x\.csv: its directory .*nodir: No such file" \
  "$a/log.h5" "$report" "$a/log.h5" --csv "$tap_tmp/nodir/x.csv"
[ ! -s "$tap_tmp/refused.txt" ] || [ "$(wc -l <"$tap_tmp/refused.txt")" = 1 ]
tap_ok $? "... and printed no report before it (the output was checked first)"
: >"$tap_tmp/afile"
refused "surge-report --csv under a regular file, before the report" "--csv .*afile/x\.csv: .*afile is not a directory" \
  "$a/log.h5" "$report" "$a/log.h5" --csv "$tap_tmp/afile/x.csv"
refused "surge-sim -o into a missing directory" "-o .*nodir/s\.h5: its directory" "$tap_tmp/copy.graph" \
  "$top_build/surge-sim" --graph "$tap_tmp/copy.graph" --ranks 2 --batch 2 -o "$tap_tmp/nodir/s.h5"
# ... and what stays allowed: a text output to a device or a pipe, a [model] init in the out_dir
# that overwrite replaces but that is no checkpoint, "-" as a file name where "-" is no stream
"$report" "$a/log.h5" --csv /dev/null >"$tap_tmp/r.txt" 2>&1
tap_ok $? "surge-report --csv /dev/null still writes its table to a device: $(error_of "$tap_tmp/r.txt")"
"$top_build/surge-plan" --graph "$tap_tmp/copy.graph" --ranks 2 --batch 2 --write-graph /dev/null >"$tap_tmp/r.txt" 2>&1
tap_ok $? "surge-plan --write-graph /dev/null still writes the graph to a device: $(error_of "$tap_tmp/r.txt")"
mkdir -p "$tap_tmp/ft"
cp "$a/model.h5" "$tap_tmp/ft/pretrained.h5"
train "$tap_tmp/ft" -D "checkpoint.dir=$tap_tmp/ft" -D run.overwrite=true -D "model.init=$tap_tmp/ft/pretrained.h5"
tap_ok $? "a [model] init beside the checkpoints that overwrite leaves (not a checkpoint's name) runs"
refused "surge-profile --repeats 2^31-1" "--repeats 2147483647: expected an integer from 1 to 10000" "$tap_tmp/copy.deck" \
  "$top_build/surge-profile" "$tap_tmp/copy.deck" -o "$tap_tmp/p.h5" --repeats 2147483647

# ---- ranks that resolve the deck otherwise (a ${NAME} of the environment that differs between ranks
# or nodes) end the job naming the key: a rank with other steps hung the job in a collective
timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$tap_tmp/diff" \
  -D 'run.steps=${OMPI_COMM_WORLD_RANK}3' >"$tap_tmp/diff.txt" 2>&1
rc=$?
[ $rc = 2 ] && [ "$(grep -c 'surge: error' "$tap_tmp/diff.txt")" = 1 ] &&
  grep -q "surge: error: rank 1: the deck resolves otherwise on this rank than on rank 0: \[run\] steps = 13 here, steps = 3 on rank 0" \
    "$tap_tmp/diff.txt"
tap_ok $? "ranks with other [run] steps: exit $rc, no hang, one line: $(grep -o 'surge: error.*' "$tap_tmp/diff.txt" | cut -c 1-160)"
# bad input every rank sees: rank 0's line ends the job (the others printed it too, up to N lines)
timeout 120 "$mpiexec" -n 4 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$tap_tmp/four" -D train.global_batch=2 \
  >"$tap_tmp/four.txt" 2>&1
rc=$?
[ $rc = 2 ] && [ "$(grep -c 'surge: error' "$tap_tmp/four.txt")" = 1 ] &&
  grep -q 'surge: error: rank 0: .*global_batch = 2 is smaller than the 4 ranks' "$tap_tmp/four.txt"
tap_ok $? "4 ranks, one bad input they all see: exit $rc, $(grep -c 'surge: error' "$tap_tmp/four.txt") line(s)"

# ---- output locations checked at the start: read-only, whether they existed or not
ro="$tap_tmp/ro"
mkdir -p "$ro"
if [ "$(id -u)" = 0 ] && [ "${SURGE_TEST_NO_MOUNT:-0}" != 1 ] && mount -t tmpfs -o size=1m,ro surge-ro-test "$ro" 2>/dev/null; then
  trap 'umount "$ro" 2>/dev/null; umount "$tap_tmp/full" 2>/dev/null; rm -rf "$tap_tmp"' EXIT
  ro_ok=1
elif [ "$(id -u)" != 0 ]; then
  chmod 555 "$ro"
  ro_ok=1
else
  ro_ok=0
fi
if [ $ro_ok = 1 ]; then
  for where in "run.out_dir=$ro" "run.out_dir=$ro/new" "checkpoint.dir=$ro/ck" "log.file=$ro/log.h5"; do
    timeout 120 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$tap_tmp/rw" -D run.overwrite=true -D "$where" \
      >"$tap_tmp/ro.txt" 2>&1
    rc=$?
    one_error "$tap_tmp/ro.txt" "(not writable|cannot create).*(Read-only|Permission)" && ! grep -q -E "^step +[0-9]" "$tap_tmp/ro.txt"
    tap_ok $(( (rc != 2) + $? )) "-D $where read-only: exit $rc before training: $(error_of "$tap_tmp/ro.txt")"
  done
else
  tap_diag "read-only output locations: not checked (root without mount permission)"
fi

# ---- a model file whose tensor is an external link to a fifo: refused, not followed (the open of
# the fifo blocked the run until killed)
mkfifo "$tap_tmp/fifo-link"
"$top_build/tests/test_checkpoint" damage "$a/model.h5" "$tap_tmp/extlink.h5" "extlink:$tap_tmp/fifo-link" 2>/dev/null
timeout 60 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$tap_tmp/el" -D "model.init=$tap_tmp/extlink.h5" >"$tap_tmp/el.txt" 2>&1
rc=$?
one_error "$tap_tmp/el.txt" "extlink.h5: /params/fc1.weight is a soft or external link, which Surge never writes"
tap_ok $(( (rc != 2) + $? )) "[model] init whose tensor is an external link to a fifo: exit $rc, $(error_of "$tap_tmp/el.txt")"

# ---- what is left at a checkpoint's temporary name is removed before the write: a symbolic link
# (HDF5 wrote through it, replacing its target) and a fifo (2 ranks hung in the collective create)
st="$tap_tmp/stale"
timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$st" -D run.steps=4 >"$st.txt" 2>&1
rm -f "$st/model.h5"
echo "not a checkpoint" >"$tap_tmp/victim"
ln -s "$tap_tmp/victim" "$st/checkpoints/.ckpt-00000006.h5.tmp"
mkfifo "$st/checkpoints/.ckpt-00000008.h5.tmp"
timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$st" -D run.steps=8 --resume >>"$st.txt" 2>&1
rc=$?
[ $rc = 0 ] && [ "$(cat "$tap_tmp/victim")" = "not a checkpoint" ] && [ -f "$st/checkpoints/ckpt-00000006.h5" ] &&
  [ ! -L "$st/checkpoints/ckpt-00000006.h5" ] && [ -f "$st/checkpoints/ckpt-00000008.h5" ]
tap_ok $? "a symbolic link and a fifo at checkpoints' temporary names are replaced, their targets untouched: exit $rc"

# ---- a checkpoint directory that turns immutable during the run (as root, where chattr works): the
# next checkpoint fails naming the directory's refusal (MPI-IO's open hides it behind EBADF), says no
# file was written, and the earlier checkpoints stay
ck="$tap_tmp/imm/checkpoints"
mkdir -p "$ck"
if [ "$(id -u)" = 0 ] && chattr +i "$ck" 2>/dev/null && chattr -i "$ck"; then
  timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$tap_tmp/imm" -D run.steps=100000 \
    -D checkpoint.every=1 >"$tap_tmp/imm.txt" 2>"$tap_tmp/imm.err" &
  run=$!
  for i in $(seq 1 600); do ls "$ck"/ckpt-*.h5 >/dev/null 2>&1 && break; sleep 0.1; done
  chattr +i "$ck"
  wait $run
  rc=$?
  chattr -i "$ck"
  # (the rename fails instead when the directory turns during a write: its partial file stays, and
  # the error says so)
  one_error "$tap_tmp/imm.err" "cannot write checkpoint .*(checkpoints: Operation not permitted.*no file was written|renaming .*: Operation not permitted \(the partial file stays: Operation not permitted; remove it by hand)" &&
    ! grep -q "Bad file descriptor" "$tap_tmp/imm.err"
  ok=$?
  last=$(ls "$ck" | sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.h5$/\1/p' | tail -1)
  timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$tap_tmp/imm" -D run.steps=$((last + 1)) \
    -D checkpoint.every=1 --resume >"$tap_tmp/imm2.txt" 2>&1
  resumed=$?
  tap_ok $(( (rc != 1) + ok + (resumed != 0) )) "a checkpoint directory made immutable mid-run: exit $rc, the last checkpoint (step $last) resumes: $(error_of "$tap_tmp/imm.err")"
  [ $ok = 0 ] || tap_diag "$(cat "$tap_tmp/imm.err"; ls -A "$ck")"
  [ $resumed = 0 ] || tap_diag "$(tail -n 3 "$tap_tmp/imm2.txt")"
else
  tap_diag "a checkpoint directory made immutable mid-run: not checked (chattr +i not available here)"
fi

# ---- a run that diverges in its last steps: exit 1, one line, no model file and no checkpoint of the
# diverged state (it finished with exit 0, a NaN test loss, and its checkpoint and model.h5 written: the
# evaluation's loss was never checked; on an AMD EPYC Zen 4 it is the step-8 evaluation that fails, on
# another CPU the training step's check may come first)
o="$tap_tmp/diverged"
timeout 120 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$o" -D model.mlp_hidden=256,256,256,256,256 -D train.lr=5 \
  -D train.momentum=0.9 -D data.synthetic_samples=256 -D run.steps=8 -D run.eval_every=4 -D checkpoint.every=4 \
  >"$o.txt" 2>&1
rc=$?
[ $rc = 1 ] && [ ! -e "$o/model.h5" ] && [ ! -e "$o/checkpoints/ckpt-00000008.h5" ] &&
  one_error "$o.txt" "step [0-9]*: the .* not finite"
tap_ok $? "a run that diverges by its last step: exit $rc, no model.h5, no step-8 checkpoint: $(grep -o 'error: .*' "$o.txt" | head -c 160)"

# ---- a disk that fills while the log is flushed: room for some flushes (600 KiB filled of 1 MiB),
# or for hardly any (900 KiB), on one rank and two
full="$tap_tmp/full"
mkdir -p "$full"
if [ "$(id -u)" = 0 ] && [ "${SURGE_TEST_NO_MOUNT:-0}" != 1 ] && mount -t tmpfs -o size=1m surge-log-test "$full" 2>/dev/null; then
  trap 'umount "$ro" 2>/dev/null; umount "$full" 2>/dev/null; rm -rf "$tap_tmp"' EXIT
  for case in "1 600" "1 900" "2 900"; do
    set -- $case
    np=$1; fill=$2
    rm -f "$full"/*
    dd if=/dev/zero of="$full/filler" bs=1k count="$fill" 2>/dev/null
    o="$tap_tmp/full$np-$fill"
    timeout 120 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$deck" -D "run.out_dir=$o" -D "log.file=$full/log.h5" \
      -D run.steps=100000 -D log.flush_every=1 -D checkpoint.every=0 -D run.eval_every=50 >"$o.txt" 2>"$o.err"
    rc=$? # (stderr apart: mpiexec reads a rank's two streams apart, so an error may land inside a stdout line)
    errors=$(grep -c '^surge: error:' "$o.err")
    grep '^surge: error:' "$o.err" | grep -q "log\.h5.*[Nn]o space left on device"
    found=$?
    steps=none
    if [ -e "$full/log.h5" ]; then # as its last flush left it, which surge-report reads
      "$report" "$full/log.h5" >"$o-report.txt" 2>&1
      report_rc=$?
      steps=$(sed -n 's/^  steps       \([0-9]*\) logged.*/\1/p' "$o-report.txt")
    else # never flushed once: not left behind half made
      report_rc=0
    fi
    [ $rc = 1 ] && [ "$errors" = 1 ] && [ $found = 0 ] && [ $report_rc = 0 ] && { [ "$fill" != 600 ] || [ "${steps:-0}" -gt 0 ]; }
    tap_ok $? "np=$np, ${fill} KiB of 1 MiB taken: the log's disk fills: exit $rc, $errors error line(s), the log reads back (steps: ${steps:-0}): $(error_of "$o.err")"
  done
  # a new log that cannot be made: its temporary file removed, and an earlier run's log that
  # [run] overwrite would have replaced kept as it was (a first flush's failure removed that one)
  rm -f "$full"/*
  o="$tap_tmp/full-keep"
  timeout 120 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$o" -D "log.file=$full/log.h5" -D run.steps=2 >"$o.txt" 2>&1
  cp "$full/log.h5" "$tap_tmp/old-log.h5" # (about 300 KiB)
  dd if=/dev/zero of="$full/filler" bs=1k count=600 2>/dev/null
  timeout 120 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$o" -D "log.file=$full/log.h5" -D run.overwrite=true \
    -D run.steps=100000 -D log.flush_every=1 -D checkpoint.every=0 >>"$o.txt" 2>"$o.err"
  rc=$?
  [ $rc = 1 ] && cmp -s "$full/log.h5" "$tap_tmp/old-log.h5" && [ ! -e "$full/log.h5.tmp" ] &&
    grep -q 'log\.h5\.tmp: cannot ' "$o.err"
  tap_ok $? "a new log that cannot be made (a full disk): exit $rc, the earlier log kept, no log.h5.tmp left: $(error_of "$o.err")"
else
  tap_diag "a full disk under the log: not checked (no permission to mount a tmpfs)"
fi

# ---- a run killed (SIGKILL) the moment its log's file appears, under either name: --resume runs and
# the log reads. The log was made under its own name, and a run killed in those milliseconds left a
# file HDF5 cannot open there: every --resume failed on it, for good (8 of 8 tries of a probe).
o="$tap_tmp/killed-early"
"$SURGE_TRAIN" "$deck" -D "run.out_dir=$o" -D checkpoint.every=1 >"$o.txt" 2>&1 &
pid=$!
i=0
until [ -e "$o/log.h5" ] || [ -e "$o/log.h5.tmp" ] || [ $i -ge 200000 ]; do i=$((i + 1)); done
kill -9 $pid 2>/dev/null
wait $pid
seen=$(ls -A "$o" | tr '\n' ' ')
train "$o" --resume
rc=$?
"$report" "$o/log.h5" >/dev/null 2>&1
[ $rc = 0 ] && [ $? = 0 ] && [ ! -e "$o/log.h5.tmp" ]
tap_ok $? "killed as its log appeared [$seen]: --resume exit $rc, the log reads, no temporary file: $(error_of "$o.txt")"

# ---- a file-size limit (ulimit -f, or a quota) on one rank of two: its checkpoint write fails, and
# the job ends with exit 1 and one line naming the file, no temporary file left. It waited in HDF5's
# close of the file for ever (the limited rank ran other collectives there); and unless the shell
# ignored SIGXFSZ, the signal ended the rank first (a core-dumping signal, no message).
o="$tap_tmp/fsize"
timeout 60 "$mpiexec" -n 2 sh -c 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then ulimit -f 570; fi; exec "$0" "$@"' \
  "$SURGE_TRAIN" "$deck" -D "run.out_dir=$o" -D model.mlp_hidden=64 -D train.optimizer=adamw -D run.steps=20 \
  -D checkpoint.every=10 >"$o.txt" 2>"$o.err"
rc=$?
[ $rc = 1 ] && [ "$(grep -c '^surge: error:' "$o.err")" = 1 ] &&
  grep -q "^surge: error: rank 1: cannot write checkpoint $o/checkpoints/ckpt-00000010.h5: .*earlier checkpoints are intact" "$o.err" &&
  [ "$(ls -A "$o/checkpoints" | tr '\n' ' ')" = ".surge-lock " ]
tap_ok $? "a file-size limit on one rank of two: exit $rc, one line, no file left: $(error_of "$o.err") [$(ls -A "$o/checkpoints" 2>/dev/null | tr '\n' ' ')]"

# ---- standard output that cannot be written (a full disk): exit 1 and a line, not 0 with the output lost
"$report" --help >/dev/full 2>"$tap_tmp/full-stdout.err"
rc=$?
[ $rc = 1 ] && grep -q '^surge: error: writing standard output failed: No space left on device' "$tap_tmp/full-stdout.err"
tap_ok $? "surge-report --help >/dev/full: exit $rc: $(head -n 1 "$tap_tmp/full-stdout.err")"
# ... and a program that finds it itself (--csv -) says so once
"$report" "$tap_tmp/killed-early/log.h5" --csv - >/dev/full 2>"$tap_tmp/full-stdout.err"
rc=$?
[ $rc = 1 ] && [ "$(grep -c '^surge: error:' "$tap_tmp/full-stdout.err")" = 1 ]
tap_ok $? "surge-report --csv - >/dev/full: exit $rc, one line: $(head -n 1 "$tap_tmp/full-stdout.err")"
# ... and a status other than 0 stands: a run stopped by a signal (at start-up, caught once /proc shows
# SIGUSR1 caught) keeps --stopped-exit's 75, which job scripts requeue on
o="$tap_tmp/stopped-full"
"$SURGE_TRAIN" "$deck" -D "run.out_dir=$o" --stopped-exit 75 >/dev/full 2>"$o.err" &
pid=$!
i=0
until usr1_caught $pid || [ $i -ge 30000 ]; do i=$((i + 1)); done
kill -USR1 $pid
wait $pid
rc=$?
[ $rc = 75 ] && ! grep -q '^surge: error:' "$o.err"
tap_ok $? "a run stopped by a signal with its stdout full keeps its status: exit $rc $(head -c 160 "$o.err")"
timeout 60 "$SURGE_TRAIN" --version >/dev/full 2>"$tap_tmp/full-stdout.err"
rc=$?
[ $rc = 1 ] && grep -q '^surge: error: writing standard output failed' "$tap_tmp/full-stdout.err"
tap_ok $? "surge-train --version >/dev/full (an MPI program): exit $rc: $(head -n 1 "$tap_tmp/full-stdout.err")"

tap_done
