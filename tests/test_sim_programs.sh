#!/bin/sh
# surge-sim end to end: VGG-16's A100 profile at G = 8 and 64 (burst plans with a background against
# data parallelism), the example GPT graph's 3D iteration with and without compression (and with
# --recompute block, longer), the HDF5
# file's layout (h5dump), surge-report's summary and SVG figures of it, and bad input (exit 2, one
# line).
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
command -v h5dump >/dev/null 2>&1 || tap_skip_all "h5dump is not installed"
sim="$top_build/surge-sim"
report="$top_build/surge-report"
vgg="--deeppool $top_src/tests/data/deeppool/A100_vgg.prof --network a100"

"$sim" $vgg --ranks 8,64 --batch 32,256 --eval 16 -o "$tap_tmp/vgg.h5" >"$tap_tmp/vgg.txt" 2>&1
tap_ok $? "surge-sim: VGG-16 at G = 8 and 64"
grep -q '^G = 8, global batch 32: 63 frontier plans' "$tap_tmp/vgg.txt" && grep -q '^G = 64, global batch 256:' "$tap_tmp/vgg.txt" &&
  grep -Eq '^  dp +13912\.0 .* 1\.000x +8$' "$tap_tmp/vgg.txt"
tap_ok $? "one block per rank count: data parallel 13912.0 us at G = 8 (the plan table's)"
best=$(awk '/^G = 64/ { on = 1 } on && $1 == "best" { print $(NF - 1); exit }' "$tap_tmp/vgg.txt" | tr -d x)
awk -v b="$best" 'BEGIN { exit !(b > 1) }'
tap_ok $? "G = 64: the best burst plan with a background beats data parallelism alone (${best}x)"
h5dump -H "$tap_tmp/vgg.h5" >"$tap_tmp/h5.txt" 2>&1 &&
  for d in ranks global_batch dp_iter_us fastest_total_samples_per_s best_over_dp G8/frontier_iter_us G64/eval_bg_samples_per_s; do
    grep -q "DATASET \"$(basename $d)\"" "$tap_tmp/h5.txt" || exit 1
  done
tap_ok $? "the HDF5 file has /sim/burst's table and a frontier group per rank count"
[ "$(h5dump -d /sim/burst/ranks -y -w 0 "$tap_tmp/vgg.h5" | sed -n 's/^ *\([0-9][0-9, ]*\)$/\1/p' | tr -d ' ')" = "8,64" ]
tap_ok $? "/sim/burst/ranks holds 8, 64"

"$report" --plot "$tap_tmp/fig" "$tap_tmp/vgg.h5" >"$tap_tmp/rep.txt" 2>&1 &&
  grep -q '^Burst plans with a background against data parallelism alone' "$tap_tmp/rep.txt" &&
  [ -s "$tap_tmp/fig/frontier.svg" ] && [ -s "$tap_tmp/fig/throughput.svg" ] &&
  grep -q '<path' "$tap_tmp/fig/frontier.svg" && ! grep -qi 'nan' "$tap_tmp/fig/throughput.svg"
tap_ok $? "surge-report summarises the file and draws frontier.svg and throughput.svg"

"$sim" --graph "$top_src/inputs/gpt-2.5b.graph" --tp 8 --pp 4 --dp 4 --micro-batches 16 --micro-batch 8 \
  --tp-link 5:300000 --cb-ratio 41.7 --epilogue-only --dp-ratio 4.09 --dp-stages 3 -o "$tap_tmp/gpt.h5" >"$tap_tmp/gpt.txt" 2>&1
tap_ok $? "surge-sim: a 3D iteration of the example GPT graph (tp 8, pp 4, dp 4, 16 micro-batches)"
plain=$(sed -n 's/^  without compression *\([0-9.]*\) .*/\1/p' "$tap_tmp/gpt.txt")
comp=$(sed -n 's/^  with compression *\([0-9.]*\) .*/\1/p' "$tap_tmp/gpt.txt")
awk -v a="$plain" -v b="$comp" 'BEGIN { exit !(a > 0 && b > 0 && b < a) }'
tap_ok $? "compression shortens the iteration ($plain -> $comp us)"
# [train] recompute = block: every stage's backward re-runs its blocks' forwards, so the iteration grows
"$sim" --graph "$top_src/inputs/gpt-2.5b.graph" --tp 8 --pp 4 --dp 4 --micro-batches 16 --micro-batch 8 \
  --tp-link 5:300000 --recompute block -o "$tap_tmp/gpt-re.h5" >"$tap_tmp/gpt-re.txt" 2>&1
re=$(sed -n 's/^  without compression *\([0-9.]*\) .*/\1/p' "$tap_tmp/gpt-re.txt")
[ "$(h5dump -a /sim/pipeline/recompute "$tap_tmp/gpt-re.h5" 2>/dev/null | grep -c '"block"')" = 1 ] &&
  h5dump -d /sim/pipeline/plain_rerun_us -y -w 0 "$tap_tmp/gpt-re.h5" >/dev/null 2>&1 &&
  grep -q '^  recompute = block: each backward first re-runs a forward of' "$tap_tmp/gpt-re.txt" &&
  awk -v a="$plain" -v b="$re" 'BEGIN { exit !(b > 1.2 * a && b < 1.5 * a) }'
tap_ok $? "--recompute block: each stage's backward re-runs its forward ($plain -> $re us; /sim/pipeline/recompute)"
"$sim" --graph "$top_src/inputs/gpt-2.5b.graph" --pp 4 --micro-batches 4 --micro-batch 1 --recompute layers \
  >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && grep -q -- '--recompute layers: expected none, block or attention' "$tap_tmp/err.txt"
tap_ok $? "bad input: an unknown --recompute mode exits 2"
"$sim" --graph "$top_src/inputs/gpt-2.5b.graph" --ranks 8 --batch 16 --recompute block >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && grep -q -- '--recompute applies to 3D runs' "$tap_tmp/err.txt"
tap_ok $? "bad input: --recompute without a 3D layout exits 2 (a burst graph says what it recomputes)"
"$report" --plot "$tap_tmp/fig" "$tap_tmp/gpt.h5" >"$tap_tmp/rep3.txt" 2>&1 && grep -q '^3D iteration:' "$tap_tmp/rep3.txt" &&
  [ "$(grep -c '<rect' "$tap_tmp/fig/pipeline.svg")" -gt 128 ] && [ -s "$tap_tmp/fig/pipeline-compressed.svg" ]
tap_ok $? "surge-report draws the 1F1B timelines (a bar for each of 4 x 2 x 16 operations)"

"$sim" $vgg --ranks 8,64 --batch 32,64,128 >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && [ "$(wc -l <"$tap_tmp/err.txt")" = 1 ] && grep -q -- '--batch has 3 values for 2 rank counts' "$tap_tmp/err.txt"
tap_ok $? "bad input: a batch list that does not match the rank counts exits 2 with one line"
"$sim" --graph "$top_src/inputs/gpt-2.5b.graph" --pp 600 --micro-batches 4 --micro-batch 1 >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && grep -q -- '--pp 600: at most 64 stages' "$tap_tmp/err.txt"
tap_ok $? "bad input: more pipeline stages than the simulator holds exits 2"
# the shipped graph's header and its first block only: 5 places to cut
{ head -n 23 "$top_src/inputs/gpt-2.5b.graph"; echo end; } >"$tap_tmp/one-block.graph"
"$sim" --graph "$tap_tmp/one-block.graph" --pp 8 --micro-batches 4 --micro-batch 1 >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && grep -q -- '--pp 8: the graph .* has only 5 places to cut' "$tap_tmp/err.txt"
tap_ok $? "bad input: more pipeline stages than the graph can be cut into exits 2"
"$sim" $vgg --ranks 8 --batch 32 --fg-slowdown 0.5 >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && grep -q -- '--fg-slowdown 0.5: expected a number >= 1' "$tap_tmp/err.txt"
tap_ok $? "bad input: a foreground slowdown below 1 exits 2"
# 3D mode is linear in the graph's length (issue 36): a chain of 100,000 nodes took 35 to 80 s (the
# stage partition was O(pp U^2)); now well within the timeout
awk 'BEGIN { print "surge-graph 1"; print "batches 1 2 4 8"; print "p2p_alpha_us 10"; print "p2p_bytes_per_us 10000"
  print "ar_alpha_us 10"; print "ar_bytes_per_us 10000"; print "input input - 4096 0"; prev = "input"
  for (i = 1; i <= 100000; i++) {
    printf "n%d %s %s 4096 %d %d %d %d %d\n", i, i % 2 ? "linear" : "relu", prev, (i % 2) * 65536, 3 + i % 7, 5 + i % 7,
      9 + i % 7, 17 + i % 7
    prev = "n" i
  }
  print "end" }' >"$tap_tmp/chain.graph"
timeout 20 "$sim" --graph "$tap_tmp/chain.graph" --tp 2 --pp 8 --dp 2 --micro-batches 16 --micro-batch 4 >"$tap_tmp/chain.txt" 2>&1
rc=$?
[ $rc = 0 ] && grep -q '^  with compression' "$tap_tmp/chain.txt"
tap_ok $? "3D on a chain of 100,000 nodes within 20 s (exit $rc)"

# flags of the other kind of run, and sizes beyond the bounds: exit 2 naming them (a 3D run given
# --bg-graph freed a background it never loaded: exit 134; --dp 2^30 made 0 ranks; 2^31 micro-batches
# asked for 2^64 bytes; a latency of 1e308 printed inf and wrote a file surge-report refuses)
g25="$top_src/inputs/gpt-2.5b.graph"
d3="--tp 2 --pp 2 --dp 2 --micro-batches 4 --micro-batch 1"
for c in "--bg-graph $g25|$d3|--bg-graph applies to burst plans" \
  "--cb-ratio 2|--ranks 8 --batch 8|--cb-ratio applies to 3D runs" \
  "--dp 1073741824|--tp 2 --pp 2 --micro-batches 1 --micro-batch 1|at most 16777216 ranks" \
  "--micro-batches 2147483647|--pp 2 --micro-batch 1|at most 2097152 forward passes" \
  "--tp-link 1e308:1|$d3|--tp-link 1e+308:1: the latency must lie in \[0, 1e+09\]" \
  "--dp-stages 5|$d3|--dp-stages 5: the pipeline has 2 stages" \
  "--bg-structure x|--ranks 8 --batch 8|--bg-structure goes with --bg-deeppool" \
  "--bg-batch 3|--ranks 8 --batch 8|--bg-batch 3: the background's profile .* has no time for node 1"; do
  bad=${c%%|*} rest=${c#*|}
  # shellcheck disable=SC2086
  "$sim" --graph "$g25" ${rest%%|*} $bad >/dev/null 2>"$tap_tmp/err.txt"
  rc=$?
  [ $rc = 2 ] && [ "$(wc -l <"$tap_tmp/err.txt")" = 1 ] && grep -q -- "${rest#*|}" "$tap_tmp/err.txt"
  tap_ok $? "surge-sim $bad: exit $rc, one line: $(cat "$tap_tmp/err.txt")"
done

# a background whose step is far below the foreground's idle gaps (1e-20 us against 300 us): the
# simulator looped for ever (its step counts overflowed, and a piece below a gap's rounding never ran
# it out); refused now, naming the step and the gap
net='p2p_alpha_us 0\np2p_bytes_per_us 1e9\nar_alpha_us 0\nar_bytes_per_us 1e9\n'
printf "surge-graph 1\nmodel fg\nbatches 1 2\n${net}input input - 4 0\na relu input 4 0 100 200\nb linear a 4 1e12 300 300\nend\n" \
  >"$tap_tmp/fg.graph"
printf "surge-graph 1\nmodel bgt\nbatches 1 2 8\n${net}input input - 4 0\nx relu input 4 0 1e-20 1e-20 1e-20\nend\n" \
  >"$tap_tmp/bgtiny.graph"
timeout 20 "$sim" --graph "$tap_tmp/fg.graph" --ranks 2 --batch 2 --bg-graph "$tap_tmp/bgtiny.graph" --bg-batch 8 \
  >/dev/null 2>"$tap_tmp/err.txt"
rc=$?
[ $rc = 2 ] && grep -q "background bgt: a step of 1e-20 us in an idle gap of .* us: more than 1e+12 steps a gap" \
  "$tap_tmp/err.txt"
tap_ok $? "a background of 1e-20 us: exit $rc within 20 s: $(cat "$tap_tmp/err.txt")"

# a plan file that splits what the graph's rules keep on one rank set is refused at its line (the
# recomputed segment a .. c; the planner's own plan runs)
seg="$top_src/tests/data/graphs/seg.graph"
"$top_build/surge-plan" --graph "$seg" --ranks 2 --batch 2 -o "$tap_tmp/seg.plan" >/dev/null 2>&1 &&
  "$sim" --graph "$seg" --ranks 2 --batch 2 --bg-batch 1 --plan "$tap_tmp/seg.plan" >/dev/null 2>&1 &&
  sed 's/^2 b .*/2 b 1 1 2/' "$tap_tmp/seg.plan" >"$tap_tmp/split.plan"
"$sim" --graph "$seg" --ranks 2 --batch 2 --bg-batch 1 --plan "$tap_tmp/split.plan" >/dev/null \
  2>"$tap_tmp/err.txt"
rc=$?
[ $rc = 2 ] && grep -q "split.plan:15: node 2 'b' is in the recomputed segment 'a' .. 'c', which runs on one rank set" \
  "$tap_tmp/err.txt"
tap_ok $? "--plan splitting a recomputed segment: exit 2 at the plan's line: $(cat "$tap_tmp/err.txt")"
# a plan for another rank count is refused before that rank count's results are printed (a script
# reading them got numbers of a run that was refused)
vgg="--deeppool $top_src/tests/data/deeppool/A100_vgg.prof --network a100 --batch 16"
# shellcheck disable=SC2086
"$top_build/surge-plan" $vgg --ranks 2 --amp none -o "$tap_tmp/vgg2.plan" >/dev/null 2>&1
# shellcheck disable=SC2086
"$sim" $vgg --ranks 4 --plan "$tap_tmp/vgg2.plan" >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
rc=$?
[ $rc = 2 ] && grep -q "vgg2.plan:.*plan is for 2 ranks, the job has 4 ranks" "$tap_tmp/err.txt" &&
  ! grep -q "G = 4\|burst plans" "$tap_tmp/out.txt"
tap_ok $? "--plan for 2 ranks at --ranks 4: exit $rc, no results printed: $(cat "$tap_tmp/err.txt")"
# a disk that fills while the file is written: exit 1, one line, nothing left under the name or the
# temporary one (surge-sim crashed, 139, leaving a damaged file under its final name)
full="$tap_tmp/full"
mkdir -p "$full"
if [ "$(id -u)" = 0 ] && [ "${SURGE_TEST_NO_MOUNT:-0}" != 1 ] && mount -t tmpfs -o size=8k surge-sim-test "$full" 2>/dev/null; then
  "$sim" --graph "$top_src/inputs/gpt-2.5b.graph" --tp 2 --pp 2 --dp 2 --micro-batches 4 --micro-batch 2 \
    -o "$full/s.h5" >/dev/null 2>"$tap_tmp/err.txt"
  rc=$?
  left=$(ls -A "$full" | tr '\n' ' ')
  umount "$full"
  [ $rc = 1 ] && [ "$(grep -c '^surge: error:' "$tap_tmp/err.txt")" = 1 ] && [ -z "$left" ] &&
    grep -q "^surge: error: surge-sim: writing $full/s.h5: .*No space left on device (nothing was written)" "$tap_tmp/err.txt"
  tap_ok $? "-o on a full disk: exit $rc, nothing left [$left]: $(cat "$tap_tmp/err.txt")"
else
  tap_skip "-o on a full disk: no permission to mount a tmpfs"
fi
tap_done
