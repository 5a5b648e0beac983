#!/bin/sh
# 3D parallelism (doc/3d.md) end to end:
#  - equivalence with one rank of every layout the issue names (tests/test_pipe_equiv, one 8-rank job),
#    also with a copy of the zoo whose gpt nodes have swapped names (tests/test_pipe_equiv_renamed);
#  - surge-train on tp 2 x pp 2 x dp 2: a checkpoint resumed on the same layout ends bit for bit where
#    the straight run ends, and resumed on tp 1 x pp 2 x dp 4 and on 1 rank within 1e-5 of it;
#  - the log's /pipeline/events hold the 1F1B order of each stage, surge-report prints the bubble
#    beside its theory and draws the Gantt chart;
#  - bad input: exit 2 with the deck's file:line.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
[ -d /usr/share/games/fortunes ] || tap_skip_all "the fortunes text (Debian package fortunes) is not installed"
compare="$top_build/tests/h5_compare"

tap_timeout=600 tap_pass_through "equivalence" 8 "$top_build/tests/test_pipe_equiv"
# the same with the gpt's nodes renamed and their names swapped (roles are not names)
tap_timeout=600 tap_pass_through "equivalence, renamed zoo" 8 "$top_build/tests/test_pipe_equiv_renamed"

. "$top_src/tests/gpt3d.sh"
base="$tap_tmp/base.deck"
gpt3d_deck "$base" 4
deck="$tap_tmp/gpt3d.deck"
cp "$base" "$deck"
gpt3d_grid "$deck" 2
g124="-D parallel.tp=1 -D parallel.pp=2 -D parallel.dp=4"
# the attention key bias has a zero true gradient: AdamW turns its rounding noise into steps of up to lr
# (the rule of tests/test_dp.sh)
key_bias="--key-bias-bound 0.006"
train() { # train NP OUT ARGS...
  np=$1; out=$2; shift 2
  timeout 300 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$deck" -D "run.out_dir=$out" "$@" >>"$out.txt" 2>&1
}

train 8 "$tap_tmp/straight"
tap_ok $? "tp 2 x pp 2 x dp 2 trains 8 steps"
train 8 "$tap_tmp/half" -D run.steps=4
tap_ok $? "the same to step 4, with its checkpoint"
cp -r "$tap_tmp/half" "$tap_tmp/other" && cp -r "$tap_tmp/half" "$tap_tmp/one"
train 8 "$tap_tmp/half" --resume
h5diff "$tap_tmp/half/model.h5" "$tap_tmp/straight/model.h5" /params /params >/dev/null 2>&1
tap_ok $? "resumed at step 4 on the same layout: bitwise the straight run's parameters"
# shellcheck disable=SC2086
train 8 "$tap_tmp/other" --resume $g124
# shellcheck disable=SC2086
res=$("$compare" "$tap_tmp/other/model.h5" "$tap_tmp/straight/model.h5" 1e-5 $key_bias 2>&1)
tap_ok $? "resumed on tp 1 x pp 2 x dp 4: $res"
train 1 "$tap_tmp/one" --resume -D parallel.mode=dp
# shellcheck disable=SC2086
res=$("$compare" "$tap_tmp/one/model.h5" "$tap_tmp/straight/model.h5" 1e-5 $key_bias 2>&1)
tap_ok $? "resumed on 1 rank (data parallel): $res"
grep -q "resumed from .*ckpt-00000004.h5" "$tap_tmp/one.txt"
tap_ok $? "the 1-rank run says it resumed from the step-4 checkpoint"
# a log whose pipeline timeline outgrew its first chunks resumes (its int32 columns were measured as
# int64 against the bytes stored, and a run of 60 steps was refused as a damaged log)
long="-D parallel.dp=1 -D train.global_batch=8 -D checkpoint.every=30 -D run.eval_every=0"
# shellcheck disable=SC2086
train 4 "$tap_tmp/long" $long -D run.steps=60 && train 4 "$tap_tmp/long" $long -D run.steps=62 --resume &&
  [ "$(h5vals "$tap_tmp/long/log.h5" /pipeline/events/step | sort -un | tail -n 1)" = 62 ]
tap_ok $? "a 60-step run with its pipeline timeline (rows: $(h5vals "$tap_tmp/long/log.h5" /pipeline/events/step | wc -l)) resumes: $(grep -o 'error: .*' "$tap_tmp/long.txt" | head -c 200)"
# evaluation through the pipeline (vocabulary-parallel loss and first maximum) = the 1-rank evaluation
a=$(h5vals "$tap_tmp/straight/log.h5" /eval/loss | tail -n 1) b=$(h5vals "$tap_tmp/one/log.h5" /eval/loss | tail -n 1)
c=$(h5vals "$tap_tmp/straight/log.h5" /eval/accuracy | tail -n 1) d=$(h5vals "$tap_tmp/one/log.h5" /eval/accuracy | tail -n 1)
awk -v a="$a" -v b="$b" -v c="$c" -v d="$d" 'BEGIN { exit !(a != "" && (a - b) ^ 2 < 1e-10 * b * b && c == d) }'
tap_ok $? "the 3d evaluation equals the 1-rank one: loss $a vs $b, accuracy $c vs $d"
tp_bytes=$(h5vals "$tap_tmp/straight/log.h5" /metrics/bytes_tp | awk '{ s += $1 } END { print s + 0 }')
dp_tp=$(h5vals "$tap_tmp/one/log.h5" /metrics/bytes_tp | awk 'NR > 4 { s += $1 } END { print s + 0 }')
[ "$tp_bytes" -gt 0 ] && [ "$dp_tp" = 0 ]
tap_ok $? "the log counts tensor-parallel traffic in /metrics/bytes_tp: $tp_bytes bytes over 8 steps (0 on 1 rank)"

# scatter-gather ([parallel] scatter_gather, on by default): each tp rank sends its half of an
# activation or gradient, the receivers all-gather the halves; off: every rank sends the whole tensor.
# The same parameters bit for bit, half the pipeline's bytes, and the gathers' bytes as tensor-parallel
# traffic (each receiving rank counts the half it contributes: as many bytes as the halves sent)
train 8 "$tap_tmp/whole" -D parallel.scatter_gather=false
h5diff "$tap_tmp/whole/model.h5" "$tap_tmp/straight/model.h5" /params /params >/dev/null 2>&1
tap_ok $? "scatter_gather = false: bitwise the parameters of the run with it (the default)"
total() { h5vals "$1/log.h5" "/metrics/bytes_$2" | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
act=$(total "$tap_tmp/straight" activation) grad=$(total "$tap_tmp/straight" activation_grad)
act_whole=$(total "$tap_tmp/whole" activation) grad_whole=$(total "$tap_tmp/whole" activation_grad)
tp_more=$(($(total "$tap_tmp/straight" tp) - $(total "$tap_tmp/whole" tp)))
[ "$act" -gt 0 ] && [ "$grad" -gt 0 ] && [ $((2 * act)) = "$act_whole" ] && [ $((2 * grad)) = "$grad_whole" ] &&
  [ "$tp_more" = $((act + grad)) ]
tap_ok $? "scatter-gather halves the pipeline's bytes at tp 2: activations $act (whole: $act_whole), gradients $grad ($grad_whole); the gathers add $tp_more tensor-parallel bytes"

# the timeline: step 1's passes of rank 0 (stage 0) and rank 4 (stage 1), as "kind:micro-batch"
log="$tap_tmp/straight/log.h5"
passes() { # passes RANK
  paste -d' ' "$tap_tmp/ev.step" "$tap_tmp/ev.rank" "$tap_tmp/ev.kind" "$tap_tmp/ev.mb" |
    awk -v r="$1" '$1 == 1 && $2 == r && $3 <= 1 { printf "%s%s", ($3 == 0 ? "F" : "B"), $4 } END { print "" }'
}
h5vals "$log" /pipeline/events/step >"$tap_tmp/ev.step" && h5vals "$log" /pipeline/events/rank >"$tap_tmp/ev.rank" &&
  h5vals "$log" /pipeline/events/kind >"$tap_tmp/ev.kind" && h5vals "$log" /pipeline/events/micro_batch >"$tap_tmp/ev.mb"
tap_ok $? "the log has /pipeline/events ($(wc -l <"$tap_tmp/ev.step") events)"
first=$(passes 0)
last=$(passes 4)
[ "$first" = "F0F1B0B1" ] && [ "$last" = "F0B0F1B1" ]
tap_ok $? "1F1B in the log: stage 0 ran $first (one warm-up forward), stage 1 $last"
kinds=$(h5attr "$log" /pipeline/event_kinds)
[ "$kinds" = "forward,backward,recv_activation,recv_gradient,send_wait,grad_sync,embed_sync" ]
tap_ok $? "/pipeline@event_kinds names the kinds: $kinds"

report="$top_build/surge-report"
"$report" "$log" --plot "$tap_tmp/plot" >"$tap_tmp/report.txt" 2>&1
tap_ok $? "surge-report reads the 3d log"
grep -q "^  bubble: measured 0\.[0-9]* (median of [0-9]* logged steps), theory (PP-1)/(M+PP-1) = 0.333" "$tap_tmp/report.txt"
tap_ok $? "the report prints the measured bubble beside the theory 1/3: $(grep bubble: "$tap_tmp/report.txt")"
grep -q "^  tp  *[0-9.]* [KMG]*i*B" "$tap_tmp/report.txt" && grep -q "^  embedding  *[0-9.]* [KMG]*i*B" "$tap_tmp/report.txt"
tap_ok $? "tensor-parallel and embedding traffic are counted: $(grep -E '^  (tp|embedding)  ' "$tap_tmp/report.txt" | tr -s ' ' | tr '\n' ';')"
svg="$tap_tmp/plot/pipeline.svg"
[ -s "$svg" ] && [ "$(grep -c '<rect' "$svg")" -gt 16 ] && grep -q 'id="event-forward"' "$svg" && grep -q 'id="event-backward"' "$svg"
tap_ok $? "the Gantt chart pipeline.svg has the passes of every rank ($(grep -c '<rect' "$svg") rectangles)"
# a damaged /pipeline is refused naming the dataset (issue 17): an event kind out of range (the chart
# would index its colours with it), an event column missing
unit="$top_build/tests/test_report_lib"
damaged_pipe() { # damaged_pipe WHAT PATTERN UNIT-ARGS...
  what=$1 pattern=$2; shift 2
  cp "$log" "$tap_tmp/dmg.h5" && "$unit" "$@" >/dev/null
  "$report" "$tap_tmp/dmg.h5" >/dev/null 2>"$tap_tmp/dmg.err"
  rc=$?
  grep -q "dmg.h5: damaged Surge log: $pattern" "$tap_tmp/dmg.err"
  tap_ok $(( (rc != 2) + $? )) "$what: exit $rc: $(head -c 240 "$tap_tmp/dmg.err")"
}
damaged_pipe "an event kind of 99 is refused" "/pipeline/events/kind holds 99 at row 0" \
  damage "$tap_tmp/dmg.h5" /pipeline/events/kind value=99@0
damaged_pipe "a pipeline without its event starts is refused" "/pipeline/events lacks a column" \
  drop "$tap_tmp/dmg.h5" /pipeline/events/start

# bad input: exit 2, the first line names the deck's file:line
gpt3d_bad "tp * pp * dp is not the rank count" 2 "\[parallel\] tp = 2, pp = 2, dp = 2: tp \* pp \* dp = 8, but the job has 2 ranks" \
  "" "[parallel]" "mode = 3d" "tp = 2" "pp = 2" "dp = 2"
gpt3d_bad "heads not divisible by tp" 2 "\[parallel\] tp = 2 does not divide the 3 attention heads" \
  "-D model.gpt_heads=3 -D model.gpt_width=48" "[parallel]" "mode = 3d" "tp = 2"
gpt3d_bad "vocabulary not divisible by tp" 3 "\[parallel\] tp = 3 does not divide the vocabulary of 256" \
  "-D model.gpt_heads=3 -D model.gpt_width=48" "[parallel]" "mode = 3d" "tp = 3"
gpt3d_bad "more stages than blocks" 3 "\[parallel\] pp = 3 stages, but the model has 2 transformer blocks" \
  "-D model.gpt_layers=2" "[parallel]" "mode = 3d" "pp = 3"
gpt3d_bad "a micro-batch without samples on a replica" 2 "\[train\] micro_batches = 9, but a data-parallel replica gets only 8" \
  "" "[parallel]" "mode = 3d" "dp = 2" "[train]" "micro_batches = 9"
gpt3d_bad "stages that do not sum to the blocks" 2 "\[parallel\] stages: 2 entries summing to 3" "" "[parallel]" "mode = 3d" \
  "pp = 2" "stages = 1,2"
cat >"$tap_tmp/mlp.deck" <<DECK
[model]
zoo = mlp
[data]
source = synthetic
[parallel]
mode = 3d
DECK
"$SURGE_TRAIN" "$tap_tmp/mlp.deck" -D "run.out_dir=$tap_tmp/mlp" >"$tap_tmp/bad.out" 2>"$tap_tmp/bad.err"
rc=$?
grep -q -E "mlp.deck:6: \[parallel\] mode = 3d needs the gpt, but \[model\] zoo = mlp" "$tap_tmp/bad.err"
tap_ok $(( (rc != 2) + $? )) "3d for a model other than gpt: exit $rc: $(cat "$tap_tmp/bad.err")"
tap_done
