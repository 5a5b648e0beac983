#!/bin/sh
# The burst plan in the metrics log: a 2-rank burst training of a small mlp under a plan (the
# planner's, from tests/make_plan, with two nodes moved to other rank sets) stores /plan (a row per
# node with its name, ranks, first rank and per-rank batch as the plan file says; the file's text),
# and surge-report prints the plan table. The planner's predictions were for other rank sets: the
# run notes that and logs none; the planner's plan as written logs them as attributes, and
# surge-report prints them against the measured iteration time. A data-parallel run has no /plan
# and no plan section.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"

report="$top_build/surge-report"
make_plan="$top_build/tests/make_plan"
command -v h5dump >/dev/null 2>&1 || tap_skip_all "h5dump not installed (Debian: hdf5-tools)"

deck="$top_src/inputs/mlp-fmnist.deck"
B=20
model="data.source=synthetic data.synthetic_samples=200 model.mlp_hidden=16,8 train.global_batch=$B"
dashD() { for a in "$@"; do printf -- '-D %s ' "$a"; done; }
train() { # train NAME NP ARGS...: a 6-step training into $tap_tmp/NAME
  name=$1; np=$2; shift 2
  # shellcheck disable=SC2046,SC2086
  timeout 120 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$deck" $(dashD $model) -D run.steps=6 -D run.print_every=100 \
    -D data.test_samples=20 -D "run.out_dir=$tap_tmp/$name" "$@" >"$tap_tmp/$name.txt" 2>&1
}
# plan_column FILE K: column K of the plan file's node lines
plan_column() { awk -v k="$2" '/^[0-9]+ / && NF == 5 { print $k }' "$1"; }

# shellcheck disable=SC2086
"$make_plan" "$deck" 2 "$tap_tmp/planner.plan" $model >"$tap_tmp/planner.txt" 2>&1
tap_ok $? "make_plan wrote the planner's plan for 2 ranks"
# fc1 on both ranks, relu1 on rank 1 alone: the log must show the rank sets the file gives
sed 's/^2 fc1 .*/2 fc1 2 0 10/; s/^3 relu1 .*/3 relu1 1 1 20/' "$tap_tmp/planner.plan" >"$tap_tmp/burst.plan"
train burst 2 -D parallel.mode=burst -D "parallel.plan=$tap_tmp/burst.plan"
tap_ok $? "2-rank burst training under the plan"
log="$tap_tmp/burst/log.h5"

nodes=$(plan_column "$tap_tmp/burst.plan" 1 | wc -l)
[ "$nodes" -gt 3 ] && [ "$(h5vals "$log" /plan/node | wc -l)" = "$nodes" ]
tap_ok $? "/plan has a row per node of the plan ($nodes)"
for col in "2 name" "3 ranks" "4 first_rank" "5 per_rank_batch"; do
  set -- $col
  want=$(plan_column "$tap_tmp/burst.plan" "$1" | tr '\n' ' ')
  got=$(h5vals "$log" "/plan/$2" | tr -d '"' | tr '\n' ' ')
  [ "$got" = "$want" ]
  tap_ok $? "/plan/$2 is the plan file's column $1: $got"
done
h5vals "$log" /plan/kind | tr -d '"' | grep -qx linear
tap_ok $? "/plan/kind names the layer kinds"
[ "$(h5attr "$log" /plan/job_ranks)" = 2 ] && [ "$(h5attr "$log" /plan/global_batch)" = $B ] &&
  [ "$(h5attr "$log" /plan/amplification_limit)" = inf ]
tap_ok $? "/plan attributes: 2 ranks, global batch $B, no amplification limit"
grep -q "^note: .*burst.plan:11: the node lines are not those the plan's predictions were made for" \
  "$tap_tmp/burst.txt" && [ "$(h5attr "$log" /plan/predicted_iteration_us)" = nan ]
tap_ok $? "predictions made for other rank sets: a note names the plan's predicted_for line, /plan has none"
h5dump -d /plan/text "$log" | grep -q 'relu1 1 1 20' && h5dump -d /plan/text "$log" | grep -q 'surge-burst-plan 2'
tap_ok $? "/plan/text holds the plan file"

"$report" "$log" >"$tap_tmp/burst.report" 2>&1
tap_ok $? "surge-report reads the burst log"
grep -q '^Burst plan' "$tap_tmp/burst.report" &&
  grep -Eq '^ +3 +relu1 +1 +1 +20$' "$tap_tmp/burst.report" && grep -Eq '^ +2 +fc1 +2 +0 +10$' "$tap_tmp/burst.report" &&
  grep -q '^  iteration   predicted: none (the plan file records none for its rank sets); measured' \
    "$tap_tmp/burst.report"
tap_ok $? "the summary has the plan table (node, name, ranks, first, batch/rank) and no prediction"

train planner 2 -D parallel.mode=burst -D "parallel.plan=$tap_tmp/planner.plan"
tap_ok $? "2-rank burst training under the planner's plan as written"
log="$tap_tmp/planner/log.h5"
predicted=$(sed -n 's/^predicted_iteration_us //p' "$tap_tmp/planner.plan")
got=$(h5attr "$log" /plan/predicted_iteration_us)
awk -v a="$got" -v b="$predicted" 'BEGIN { exit !(b > 0 && a == b) }' && ! grep -q '^note: ' "$tap_tmp/planner.txt"
tap_ok $? "/plan@predicted_iteration_us is the plan's prediction ($got = $predicted us)"
"$report" "$log" >"$tap_tmp/planner.report" 2>&1
line=$(grep 'iteration   predicted' "$tap_tmp/planner.report")
median_ms=$(sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' "$tap_tmp/planner.report")
echo "$line" | awk -v p="$predicted" -v m="$median_ms" '{
  if (match($0, /predicted [0-9.]+ us, measured [0-9.]+ us \(median step\), measured\/predicted [0-9.]+$/) == 0) exit 1
  n = split($0, w, /[ ,]+/); pu = w[4]; mu = w[7]; r = w[n]
  # the report prints us to 0.1, the throughput median to 0.01 ms (5 us of rounding), the ratio to
  # 0.001; the ratio recomputed from the rounded us values may differ by their rounding (0.05 us of pu)
  exit !((pu - p) ^ 2 <= 0.0025 && (mu - 1000 * m) ^ 2 <= 36 && m > 0 && (r - mu / pu) ^ 2 <= (0.001 + 0.1 * r / pu) ^ 2) }'
tap_ok $? "predicted vs measured: $line"
[ -n "$line" ] || tap_diag "$(cat "$tap_tmp/planner.report")"

train dp 2
tap_ok $? "2-rank data-parallel training"
h5dump -n "$tap_tmp/dp/log.h5" | grep -q '/plan'
[ $? = 1 ]
tap_ok $? "a data-parallel log has no /plan"
"$report" "$tap_tmp/dp/log.h5" >"$tap_tmp/dp.report" 2>&1 && ! grep -q 'Burst plan\|predicted' "$tap_tmp/dp.report"
tap_ok $? "its summary has no plan section"

tap_done
