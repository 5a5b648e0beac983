#!/bin/sh
# Profile, plan, run: surge-profile measures a small mlp (synthetic data, global batch 8) on 1 and 2
# ranks; the HDF5 file holds every node at every per-rank batch the planner may choose (8 on 1 rank;
# 8 and 4 for G = 2; 8, 4 and 2 for G = 4 via --ranks) with positive times (the input node: 0), and
# on 2 ranks the measured network (positive bandwidths, the fitted points); on 1 rank the network is
# marked not measured. surge-plan plans from it for G = 2 and 4; surge-train runs the G = 2 plan on 2
# ranks. Bad input exits 2 with one line: a profile of another model (name or sizes), a profile
# lacking a per-rank batch, a G = 4 plan run on 2 ranks. A profile measured in another precision than
# the deck's, or with another optimizer, plans with a note saying so.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
command -v h5dump >/dev/null 2>&1 || tap_skip_all "h5dump is not installed"
profile="$top_build/surge-profile"
plan="$top_build/surge-plan"
deck="$tap_tmp/mlp.deck"
cat >"$deck" <<DECK
[run]
name = mlp-profile
out_dir = $tap_tmp/run
[model]
zoo = mlp
mlp_hidden = 32,16
[data]
source = synthetic
synthetic_samples = 64
test_samples = 8
[train]
global_batch = 8
DECK
NODES=7 # input, flatten, fc1, relu1, fc2, relu2, fc3

# check_layout FILE BATCHES...: node names, the batch list, median and spread tables of NODES rows
check_layout() {
  f=$1; shift
  want=$(printf '%s\n' "$@")
  [ "$(h5vals "$f" /profile/batch)" = "$want" ] || { echo "batches $(h5vals "$f" /profile/batch | tr '\n' ' ')"; return 1; }
  [ "$(h5vals "$f" /profile/node_name | tr -d '"' | tr '\n' ' ')" = "input flatten fc1 relu1 fc2 relu2 fc3 " ] ||
    { echo "node names"; return 1; }
  for t in median_us spread_us; do
    [ "$(h5vals "$f" /profile/$t | wc -l)" = $((NODES * $#)) ] || { echo "$t size"; return 1; }
  done
  # medians: the input row 0, every other node positive
  h5vals "$f" /profile/median_us | awk -v nb=$# 'NR <= nb { if ($1 != 0) bad = 1; next } { if (!($1 > 0)) bad = 1 }
    END { exit bad }' || { echo "median_us values"; return 1; }
  [ "$(h5attr "$f" /profile/median_us/units)" = us ] || { echo "units"; return 1; }
}

# --- 1 rank
"$profile" "$deck" -o "$tap_tmp/p1.h5" --warmup 1 --repeats 3 >"$tap_tmp/p1.txt" 2>&1
tap_ok $? "surge-profile on 1 rank"
res=$(check_layout "$tap_tmp/p1.h5" 8)
tap_ok $? "1 rank: every node at per-rank batch 8, positive times $res"
[ "$(h5attr "$tap_tmp/p1.h5" /profile/network/measured)" = 0 ] &&
  h5attr "$tap_tmp/p1.h5" /profile/network/note | grep -q "NOT MEASURED" &&
  grep -q "NOT MEASURED" "$tap_tmp/p1.txt" &&
  [ "$(h5vals "$tap_tmp/p1.h5" /profile/network/p2p_beta)" = 10000 ] &&
  ! h5vals "$tap_tmp/p1.h5" /profile/network/p2p_us >/dev/null
tap_ok $? "1 rank: network defaults marked not measured (file and table)"
[ "$(h5attr "$tap_tmp/p1.h5" /profile/model)" = mlp ] && [ "$(h5attr "$tap_tmp/p1.h5" /profile/ranks)" = 1 ] &&
  [ "$(h5attr "$tap_tmp/p1.h5" /profile/global_batch)" = 8 ]
tap_ok $? "1 rank: model, G and global batch recorded"

# --- 2 ranks, G = 2 and (--ranks) G = 4
timeout 120 "$mpiexec" -n 2 "$profile" "$deck" -o "$tap_tmp/p2.h5" --warmup 1 --repeats 3 >"$tap_tmp/p2.txt" 2>&1
tap_ok $? "surge-profile on 2 ranks"
res=$(check_layout "$tap_tmp/p2.h5" 8 4)
tap_ok $? "2 ranks: every node at per-rank batches 8 and 4 $res"
net_ok=0
[ "$(h5attr "$tap_tmp/p2.h5" /profile/network/measured)" = 1 ] || net_ok=1
for d in p2p_beta allreduce_beta; do
  v=$(h5vals "$tap_tmp/p2.h5" /profile/network/$d)
  awk -v v="$v" 'BEGIN { exit !(v > 0) }' || net_ok=1
  [ "$(h5attr "$tap_tmp/p2.h5" /profile/network/$d/units)" = bytes/us ] || net_ok=1
done
for d in p2p_alpha allreduce_alpha; do
  v=$(h5vals "$tap_tmp/p2.h5" /profile/network/$d)
  awk -v v="$v" 'BEGIN { exit !(v >= 0) }' || net_ok=1
  [ "$(h5attr "$tap_tmp/p2.h5" /profile/network/$d/units)" = us ] || net_ok=1
done
for d in p2p_us allreduce_us; do
  h5vals "$tap_tmp/p2.h5" /profile/network/$d | awk '{ n++; if (!($1 > 0)) bad = 1 } END { exit bad || n != 7 }' || net_ok=1
done
tap_ok $net_ok "2 ranks: network measured: alpha >= 0 us, beta > 0 bytes/us, 7 positive sizes each"
timeout 120 "$mpiexec" -n 2 "$profile" "$deck" -o "$tap_tmp/p4.h5" --ranks 4 --warmup 1 --repeats 3 >"$tap_tmp/p4.txt" 2>&1
tap_ok $? "surge-profile on 2 ranks for G = 4 (--ranks 4)"
res=$(check_layout "$tap_tmp/p4.h5" 8 4 2)
tap_ok $? "G = 4: every node at per-rank batches 8, 4 and 2 $res"

# --- plans
"$plan" "$deck" --profile "$tap_tmp/p2.h5" -o "$tap_tmp/plan2.txt" --frontier >"$tap_tmp/plan2.out" 2>&1 &&
  grep -q '^ranks 2$' "$tap_tmp/plan2.txt" && grep -q '^amplification 2$' "$tap_tmp/plan2.txt" &&
  grep -q "^data parallel:" "$tap_tmp/plan2.out" && grep -q "predicted iteration time" "$tap_tmp/plan2.out"
tap_ok $? "surge-plan G = 2 (the profile's G, A from the deck): table, frontier, plan file"
"$plan" "$deck" --profile "$tap_tmp/p4.h5" --ranks 4 --amp none -o "$tap_tmp/plan4.txt" >"$tap_tmp/plan4.out" 2>&1 &&
  grep -q '^ranks 4$' "$tap_tmp/plan4.txt" && grep -q '^amplification none$' "$tap_tmp/plan4.txt" &&
  [ "$(grep -c '^[0-9]' "$tap_tmp/plan4.txt")" = $NODES ]
tap_ok $? "surge-plan G = 4 (--ranks 4 --amp none): a line per node"
"$plan" "$deck" --profile "$tap_tmp/p4.h5" --ranks 2 -o "$tap_tmp/plan2b.txt" >/dev/null 2>&1
tap_ok $? "surge-plan G = 2 from the G = 4 profile (its batches cover G = 2)"
# more ranks than the deck's global batch of 8: surge-train refuses every such job, so the profile and
# the plan are refused first, at the deck's line (both were made, and no run could use them)
"$top_build/surge-profile" "$deck" --ranks 16 -o "$tap_tmp/p16.h5" >/dev/null 2>"$tap_tmp/err16.txt"
rc=$?
[ $rc = 2 ] && grep -q "mlp.deck:[0-9]*: \[train\] global_batch: 8 is smaller than the 16 ranks profiled for" "$tap_tmp/err16.txt" &&
  [ ! -e "$tap_tmp/p16.h5" ]
tap_ok $? "surge-profile --ranks 16 for a global batch of 8: exit $rc: $(head -c 200 "$tap_tmp/err16.txt")"
"$plan" "$deck" --profile "$tap_tmp/p4.h5" --ranks 16 -o "$tap_tmp/plan16.txt" >/dev/null 2>"$tap_tmp/err16.txt"
rc=$?
[ $rc = 2 ] && grep -q "mlp.deck:[0-9]*: \[train\] global_batch: 8 is smaller than the 16 ranks planned for" "$tap_tmp/err16.txt" &&
  [ ! -e "$tap_tmp/plan16.txt" ]
tap_ok $? "surge-plan --ranks 16 for a global batch of 8: exit $rc: $(head -c 200 "$tap_tmp/err16.txt")"
"$plan" "$deck" --profile "$tap_tmp/p4.h5" --ranks 16 --batch 8 -o "$tap_tmp/plan16.txt" >/dev/null 2>"$tap_tmp/err16.txt"
rc=$?
[ $rc = 2 ] && grep -q "surge-plan: --batch 8 is smaller than the 16 ranks planned for" "$tap_tmp/err16.txt" &&
  [ ! -e "$tap_tmp/plan16.txt" ]
tap_ok $? "surge-plan --ranks 16 --batch 8: exit $rc: $(head -c 200 "$tap_tmp/err16.txt")"
# --policy any on 4 ranks needs 3 ranks' batch (ceil(8/3) = 3), which the divisors' profile lacks: the
# refusal says how to measure it, and surge-profile --policy any does
"$plan" "$deck" --profile "$tap_tmp/p4.h5" --ranks 4 --policy any >"$tap_tmp/any.txt" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "no per-rank batch 3 (a set of 3 ranks, global batch 8), .*policy any .*hint: surge-profile --ranks 4 --policy any on this deck" \
  "$tap_tmp/any.txt"
tap_ok $? "a profile without the batches of --policy any: exit $rc, the command that measures them named"
timeout 120 "$mpiexec" -n 2 "$profile" "$deck" -o "$tap_tmp/p4any.h5" --ranks 4 --policy any --warmup 1 --repeats 3 \
  >"$tap_tmp/p4any.txt" 2>&1 && res=$(check_layout "$tap_tmp/p4any.h5" 8 4 3 2) &&
  "$plan" "$deck" --profile "$tap_tmp/p4any.h5" --ranks 4 --policy any >/dev/null 2>&1
tap_ok $? "surge-profile --policy any measures per-rank batches 8, 4, 3, 2, and surge-plan --policy any plans from them $res"
for p in plan2 plan2b; do
  timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$deck" -D parallel.mode=burst -D "parallel.plan=$tap_tmp/$p.txt" \
    -D run.steps=3 -D run.overwrite=true >"$tap_tmp/train-$p.txt" 2>&1
  rc=$?
  tap_ok $rc "surge-train runs the $p plan on 2 ranks (exit $rc)"
  [ $rc = 0 ] || tap_diag "$(tail -n 3 "$tap_tmp/train-$p.txt")"
done

# --- surge-train plans at start-up from parallel.profile alone, and evaluates a plan file with it
timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$deck" -D parallel.mode=burst -D "parallel.profile=$tap_tmp/p2.h5" \
  -D run.steps=3 -D run.overwrite=true >"$tap_tmp/train-prof.txt" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "predicted iteration time" "$tap_tmp/train-prof.txt" &&
  [ "$(h5vals "$tap_tmp/run/log.h5" /plan/ranks | wc -l)" = $NODES ] &&
  h5attr "$tap_tmp/run/log.h5" /plan/predicted_iteration_us | awk '{ exit !($1 > 0) }' &&
  h5dump -d /plan/text "$tap_tmp/run/log.h5" 2>/dev/null | grep -q "surge-burst-plan"
tap_ok $? "surge-train with only parallel.profile on 2 ranks: exit $rc, plan table printed, /plan in the log"
timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$deck" -D parallel.mode=burst -D "parallel.plan=$tap_tmp/plan2.txt" \
  -D "parallel.profile=$tap_tmp/p2.h5" -D run.steps=3 -D run.overwrite=true >"$tap_tmp/train-both.txt" 2>&1 &&
  h5vals "$tap_tmp/run/log.h5" /plan/compute_us | awk 'NR > 1 { n++; if (!($1 > 0)) bad = 1 } END { exit bad || n != 6 }'
tap_ok $? "surge-train with a plan file and a profile: per-node predicted compute times in /plan"

# --- a profile of another precision (backend, optimizer) plans, with a note that its times are not the run's
[ "$(h5attr "$tap_tmp/p2.h5" /profile/precision)" = fp32 ] && [ "$(h5attr "$tap_tmp/p2.h5" /profile/backend)" = cpu ] &&
  [ "$(h5attr "$tap_tmp/p2.h5" /profile/optimizer)" = sgd ] &&
  "$plan" "$deck" --profile "$tap_tmp/p2.h5" >/dev/null 2>"$tap_tmp/same.err" && ! grep -q "note: profile" "$tap_tmp/same.err"
tap_ok $? "the profile records backend cpu, precision fp32 and optimizer sgd; planning the same deck says nothing of them"
"$plan" "$deck" --profile "$tap_tmp/p2.h5" -D backend.precision=bf16 >/dev/null 2>"$tap_tmp/other.err" &&
  grep -q "note: profile .*p2.h5 was measured on backend cpu in fp32 with sgd, this run's is cpu in bf16 with sgd" \
    "$tap_tmp/other.err"
tap_ok $? "surge-plan of a bf16 deck from an fp32 profile: $(cat "$tap_tmp/other.err")"
timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$deck" -D parallel.mode=burst -D "parallel.profile=$tap_tmp/p2.h5" \
  -D backend.precision=bf16 -D run.steps=1 -D run.overwrite=true >"$tap_tmp/train-bf16.txt" 2>&1 &&
  grep -q "note: profile .*in fp32 with sgd, this run's is cpu in bf16 with sgd" "$tap_tmp/train-bf16.txt"
tap_ok $? "surge-train planning a bf16 run from an fp32 profile says so"
"$plan" "$deck" --profile "$tap_tmp/p2.h5" -D train.optimizer=adamw >/dev/null 2>"$tap_tmp/other.err" &&
  grep -q "note: profile .*p2.h5 was measured on backend cpu in fp32 with sgd, this run's is cpu in fp32 with adamw" \
    "$tap_tmp/other.err"
tap_ok $? "surge-plan of an adamw deck from an sgd profile (its update is in the step's time): $(cat "$tap_tmp/other.err")"

# --- bad input: exit 2, one line naming the file
bad() { # bad DESCRIPTION PATTERN COMMAND...: exit 2 and one line matching PATTERN
  d=$1; pat=$2; shift 2
  "$@" >"$tap_tmp/bad.out" 2>"$tap_tmp/bad.err"
  rc=$?
  [ $rc = 2 ] && [ "$(wc -l <"$tap_tmp/bad.err")" = 1 ] && grep -q -e "$pat" "$tap_tmp/bad.err"
  tap_ok $? "$d: exit $rc: $(cat "$tap_tmp/bad.err")"
}
bad "profile of another model (name)" "p2.h5.*model = 'mlp'" \
  "$plan" "$deck" -D model.zoo=vgg-mini -D model.vgg_channels=4 -D model.vgg_fc=8 --profile "$tap_tmp/p2.h5"
bad "profile of another model (sizes)" "p2.h5.*fingerprint" "$plan" "$deck" -D model.mlp_hidden=32 --profile "$tap_tmp/p2.h5"
bad "profile lacking a per-rank batch (made for 1 rank, planned for 2)" "p1.h5: dataset /profile/batch has no per-rank batch 4" \
  "$plan" "$deck" --profile "$tap_tmp/p1.h5" --ranks 2
bad "a profile that is not one" "cannot open" "$plan" "$deck" --profile "$deck"
# the rest of a step (format version 2): data and loss per sample, optimizer and metrics per step
steps_ok=0
for a in data_us_per_sample loss_us_per_sample step_us; do
  h5attr "$tap_tmp/p2.h5" "/profile/$a" | awk '{ exit !($1 > 0 && $1 < 1e6) }' || steps_ok=1
done
[ "$(h5attr "$tap_tmp/p2.h5" /profile/version)" = 2 ] && [ $steps_ok = 0 ] && grep -q "^rest of a step: data" "$tap_tmp/p2.txt"
tap_ok $? "the profile holds the rest of a step: data $(h5attr "$tap_tmp/p2.h5" /profile/data_us_per_sample) us/sample, step $(h5attr "$tap_tmp/p2.h5" /profile/step_us) us"
"$top_build/tests/profile_damage" "$tap_tmp/p2.h5" "$tap_tmp/v1.h5" version1 &&
  "$plan" "$deck" --profile "$tap_tmp/v1.h5" >"$tap_tmp/v1.txt" 2>&1 && "$plan" "$deck" --profile "$tap_tmp/p2.h5" >"$tap_tmp/v2.txt" 2>&1
v1=$(sed -n 's/^predicted iteration time: \([0-9.]*\) us.*/\1/p' "$tap_tmp/v1.txt")
v2=$(sed -n 's/^predicted iteration time: \([0-9.]*\) us.*/\1/p' "$tap_tmp/v2.txt")
awk -v a="$v1" -v b="$v2" 'BEGIN { exit !(a > 0 && b > a) }'
tap_ok $? "a version 1 profile (no step costs) still plans; the step costs lengthen the predicted iteration ($v1 -> $v2 us)"
# hostile profiles: refused before they cost memory or reach the planner's arithmetic
damage="$top_build/tests/profile_damage"
"$damage" "$tap_tmp/p2.h5" "$tap_tmp/v0.h5" version0 &&
  bad "a profile of format version 0" "v0.h5: /profile format version 0; this program reads version 1 to 2" \
    "$plan" "$deck" --profile "$tap_tmp/v0.h5"
"$damage" "$tap_tmp/p2.h5" "$tap_tmp/huge.h5" huge &&
  bad "a small file declaring 2^30 per-rank batches ($(wc -c <"$tap_tmp/huge.h5") bytes)" \
    "huge.h5: dataset /profile/batch has 1073741824 entries along dimension 0, at most" \
    "$plan" "$deck" --profile "$tap_tmp/huge.h5"
"$damage" "$tap_tmp/p2.h5" "$tap_tmp/t1e308.h5" time1e308 &&
  bad "a layer time of 1e308 us" "t1e308.h5: node .* time 1e+308 us is not a number in \[0, 1e+12\]" \
    "$plan" "$deck" --profile "$tap_tmp/t1e308.h5"
if ! cp "$tap_tmp/p2.h5" "$tap_tmp/bits.h5" || ! "$top_build/tests/h5_hostile" "$tap_tmp/bits.h5" /profile/median_us bits=993; then
  tap_ok 1 "a layer-time dataset of 4-byte integers claiming 993 bits: the edit failed"
else
  bad "a layer-time dataset of 4-byte integers claiming 993 bits (HDF5 would convert past its locals)" \
    "bits.h5: dataset /profile/median_us holds values that are not numbers of a possible layout" \
    "$plan" "$deck" --profile "$tap_tmp/bits.h5"
fi
bad "--amp below 1" "--amp 0.5" "$plan" "$deck" --profile "$tap_tmp/p2.h5" --amp 0.5
# found by fuzz_profile: a dataset whose storage is smaller than its shape made HDF5 copy the rest
# from beyond its buffer (a heap overflow under AddressSanitizer); a profile of mlp_hidden = 8
bad "a dataset storing less than its shape (fuzz_profile)" \
  "median-stores-less-than-its-shape.h5: dataset /profile/median_us stores 14 bytes where its shape needs 80" \
  "$plan" "$deck" -D model.mlp_hidden=8 --profile "$top_src/fuzz/regressions/profile/median-stores-less-than-its-shape.h5"
timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$deck" -D parallel.mode=burst -D "parallel.plan=$tap_tmp/plan4.txt" \
  -D run.steps=3 -D run.overwrite=true >"$tap_tmp/bad4.txt" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "plan4.txt" "$tap_tmp/bad4.txt"
tap_ok $? "a G = 4 plan run on 2 ranks: exit $rc"
tap_diag "the G = 4 plan:" "$(cat "$tap_tmp/plan4.out")"
tap_done
