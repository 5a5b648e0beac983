#!/bin/sh
# The distributed optimizer ([parallel] shard_optimizer, src/sync/shard.h) on the 3d layout's dp axis
# and on a burst plan (tests/test_shard_optimizer.sh has dp): 10 AdamW steps with clipping (the norm is
# above clip_norm at every step, checked) reproduce 1 rank within 1e-5
#  - 3d, tp 2 x pp 2 x dp 2 (8 ranks): each stage's dp group shards its slab, the tied word embedding
#    is reduce-scattered over the fused embedding group (first and last stage) in place of the
#    embedding sum, layer norms are never cut;
#  - a burst plan whose nodes change rank set at every layer (all ranks, one rank, half of them):
#    each rank set shards its own tensors;
# each rank's printed optimizer-state bytes are its shard's two moments and the shards tile the model
# (3d: with a layer norm's moments on one rank of each tensor-parallel index, as its parameters are);
# a sharded checkpoint resumes on 1 rank unsharded (both layouts) and an unsharded one resumes on the
# sharded burst plan, ending within 1e-5 of the straight 1-rank run; 3d with PowerSGD on stage 0
# ([compress] sc_stages = 1) sharded reproduces the unsharded PowerSGD run (the compressed stage's
# buckets summed whole by PowerSGD, each rank updating its shard; the other stage and the word
# embedding reduce-scattered), its state bytes its shard's, and its checkpoint resumes on its layout.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
. "$top_src/tests/same_params.sh" # same NAME REF WHAT
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
[ -d /usr/share/games/fortunes ] || tap_skip_all "the fortunes text (Debian package fortunes) is not installed"
compare="$top_build/tests/h5_compare"

# a constant learning rate: a run of 5 steps resumed to 10 takes the 10-step run's steps
common="-D run.print_every=10 -D train.global_batch=20 -D data.test_samples=40 -D run.overwrite=true
  -D train.optimizer=adamw -D train.lr=0.001 -D train.clip_norm=0.5 -D train.schedule=constant"
shard="-D parallel.shard_optimizer=true -D parallel.node_shared=false -D parallel.bucket_mb=0.02"
gpt="-D model.gpt_layers=2 -D model.gpt_width=32 -D model.gpt_heads=2 -D model.gpt_context=16 -D data.test_samples=8"
mlp="-D model.mlp_hidden=64,32 -D data.train_samples=400"
key_bias="--key-bias-bound 0.006" # the attention key bias: its true gradient is 0 (tests/zoo_models.sh)
run() { # run NAME NP DECK ARGS...: train into $tap_tmp/NAME, its exit status in NAME.rc
  name=$1; np=$2; deck=$3; shift 3
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$top_src/inputs/$deck" $common -D "run.out_dir=$tap_tmp/$name" "$@" \
    >"$tap_tmp/$name.txt" 2>&1
  echo $? >"$tap_tmp/$name.rc"
}
clipped() { # clipped NAME WHAT: every step's gradient norm is above clip_norm
  low=$(h5vals "$tap_tmp/$1/log.h5" /metrics/grad_norm | awk '$1 <= 0.5 { n++ } END { print (NR ? n + 0 : "no log") }')
  [ "$low" = 0 ]
  tap_ok $? "$2: the gradient norm is above clip_norm at every step (clipping acts; $low steps below)"
}
resume() { # resume NAME FROM NP DECK ARGS...: copy FROM's output to NAME, resume it to 10 steps
  name=$1; from=$2; shift 2
  rm -rf "${tap_tmp:?}/$name"; cp -r "$tap_tmp/$from" "$tap_tmp/$name"
  run "$name" "$@" -D run.steps=10 --resume
  grep -q "resumed from .*ckpt-00000005.h5 at step 5" "$tap_tmp/$name.txt"
}
# states NAME: the run's per-rank optimizer-state bytes and slab floats as "B F" lines
states() {
  grep '^optimizer state per rank: bytes' "$tap_tmp/$1.txt" | awk '{ n = 0; m = 0
    for (i = 1; i <= NF; i++) { if ($i == "bytes") mode = 1; else if ($i == "floats") mode = 2; else if ($i == "for" || $i == "of") mode = 0
      else if (mode == 1) b[n++] = $i; else if (mode == 2) f[m++] = $i }
    for (r = 0; r < n; r++) print b[r], f[r] }'
}
# tiles NAME NP FLOATS: NP ranks each hold 2 moments x 4 bytes of their shard, the shards FLOATS in all
tiles() { states "$1" | awk -v np="$2" -v want="$3" '$1 == 8 * $2 { s += $2; n++ } END { exit !(n == np && s == want) }'; }
# model_floats NAME: the parameters of a 1-rank run (its whole slab)
model_floats() { grep '^optimizer state per rank: bytes' "$tap_tmp/$1.txt" | awk '{ print $NF }'; }

# ---- 3d: tp 2 x pp 2 x dp 2
# shellcheck disable=SC2086
run gpt-1 1 gpt-fortunes.deck $gpt -D run.steps=10
tap_ok "$(cat "$tap_tmp/gpt-1.rc")" "gpt: 1 rank, 10 AdamW steps with clip_norm 0.5"
clipped gpt-1 "gpt, 1 rank"
grid="-D parallel.mode=3d -D parallel.tp=2 -D parallel.pp=2 -D parallel.dp=2"
# shellcheck disable=SC2086
run gpt-3d 8 gpt-3d.deck $gpt $grid $shard -D run.steps=10
grep -q "3d: sharded optimizer" "$tap_tmp/gpt-3d.txt"
tap_ok $? "3d: the banner says the optimizer is sharded (exit $(cat "$tap_tmp/gpt-3d.rc"))"
# shellcheck disable=SC2086
same gpt-3d gpt-1 "3d tp 2 x pp 2 x dp 2 sharded = 1 rank" $key_bias
clipped gpt-3d "3d sharded"
# the shards: every parameter's moments once, but a layer norm's (weight and bias of 2 per block and
# the final one, width 32) once per tensor-parallel index (tp = 2), as every tp rank holds it
total=$(model_floats gpt-1)
total3d=$total
ln=$((2 * 32 * (2 * 2 + 1)))
echo "# 1 rank: $total floats; 3d sharded (bytes floats per rank): $(states gpt-3d | tr '\n' ' ')"
tiles gpt-3d 8 $((total + ln))
tap_ok $? "3d: each rank's optimizer-state bytes are its shard's 2 moments; the shards hold $total + $ln floats"
states gpt-3d | awk -v t="$total" '$2 > t / 4 { bad++ } END { exit bad > 0 }'
tap_ok $? "3d: each rank's shard is at most a quarter of the model (an unsharded 3d rank holds its stage's tensor-parallel slab)"
# a sharded 3d checkpoint resumes on 1 rank, unsharded
# shellcheck disable=SC2086
run gpt-3d-half 8 gpt-3d.deck $gpt $grid $shard -D run.steps=5
tap_ok "$(cat "$tap_tmp/gpt-3d-half.rc")" "3d: 5 steps sharded (checkpoint of step 5)"
# shellcheck disable=SC2086
resume gpt-3d-back gpt-3d-half 1 gpt-3d.deck $gpt -D parallel.mode=dp
tap_ok $? "the sharded 3d checkpoint resumes on 1 rank"
# shellcheck disable=SC2086
same gpt-3d-back gpt-1 "sharded 3d -> 1 rank = 1 rank" $key_bias
# shellcheck disable=SC2086
"$compare" "$tap_tmp/gpt-3d-half/model.h5" "$tap_tmp/gpt-1/model.h5" 1e-5 $key_bias >/dev/null 2>&1
[ $? = 1 ]
tap_ok $? "5 steps and 10 steps differ beyond the tolerance (the comparisons can fail)"

# ---- a burst plan: mlp on 4 ranks, every layer on another rank set
B=20
. "$top_src/tests/hand_plan.sh" # hand_plan NP PLANNER_PLAN
"$top_build/tests/make_plan" "$top_src/inputs/mlp-fmnist.deck" 4 "$tap_tmp/mlp-4.plan" train.global_batch=$B \
  data.train_samples=400 model.mlp_hidden=64,32 >"$tap_tmp/mlp-4.plan.txt" 2>&1
hand_plan 4 "$tap_tmp/mlp-4.plan" >"$tap_tmp/mlp-4-hand.plan"
burst="-D parallel.mode=burst -D parallel.plan=$tap_tmp/mlp-4-hand.plan"
# shellcheck disable=SC2086
run mlp-1 1 mlp-fmnist.deck $mlp -D run.steps=10
tap_ok "$(cat "$tap_tmp/mlp-1.rc")" "mlp: 1 rank, 10 AdamW steps with clip_norm 0.5"
clipped mlp-1 "mlp, 1 rank"
# shellcheck disable=SC2086
run mlp-burst 4 mlp-fmnist.deck $mlp $burst $shard -D run.steps=10
grep -q "burst: sharded optimizer" "$tap_tmp/mlp-burst.txt"
tap_ok $? "burst: the banner says the optimizer is sharded (exit $(cat "$tap_tmp/mlp-burst.rc"))"
same mlp-burst mlp-1 "burst plan on 4 ranks sharded = 1 rank"
total=$(model_floats mlp-1)
echo "# 1 rank: $total floats; burst sharded (bytes floats per rank): $(states mlp-burst | tr '\n' ' ')"
tiles mlp-burst 4 "$total"
tap_ok $? "burst: each rank's optimizer-state bytes are its shard's 2 moments, the shards tile the model's $total floats"
# fc1 (50,240 floats) on ranks 0 and 1, fc2 (2,080) on rank 0 alone, fc3 (330) on all 4: ranks 2 and 3
# hold a quarter of fc3's alone
states mlp-burst | awk 'NR >= 3 && $2 > 100 { bad++ } END { exit bad > 0 || NR != 4 }'
tap_ok $? "burst: a rank in only the last layer's set holds only its shard of that layer"
# shellcheck disable=SC2086
run mlp-burst-half 4 mlp-fmnist.deck $mlp $burst $shard -D run.steps=5
# shellcheck disable=SC2086
resume mlp-burst-back mlp-burst-half 1 mlp-fmnist.deck $mlp
tap_ok $? "the sharded burst checkpoint resumes on 1 rank"
same mlp-burst-back mlp-1 "sharded burst -> 1 rank = 1 rank"
# shellcheck disable=SC2086
run mlp-half 1 mlp-fmnist.deck $mlp -D run.steps=5
# shellcheck disable=SC2086
resume mlp-fwd mlp-half 4 mlp-fmnist.deck $mlp $burst $shard
tap_ok $? "the unsharded 1-rank checkpoint resumes on the sharded burst plan"
same mlp-fwd mlp-1 "unsharded 1 rank -> sharded burst = 1 rank"

# ---- 3d with PowerSGD on stage 0 ([compress] sc_stages = 1; fe: the word embedding summed exactly over
# the fused group, as the sharded optimizer sums it): the sharded run reproduces the unsharded one
psgd="-D compress.sc_stages=1 -D compress.dp_rank=2 -D compress.fe=true -D parallel.bucket_mb=0.02"
# shellcheck disable=SC2086
run psgd-3d 8 gpt-3d.deck $gpt $grid $psgd -D run.steps=10
tap_ok "$(cat "$tap_tmp/psgd-3d.rc")" "3d PowerSGD on stage 0, unsharded: 10 steps"
# shellcheck disable=SC2086
run psgd-3d-shard 8 gpt-3d.deck $gpt $grid $shard $psgd -D run.steps=10
grep -q "3d: sharded optimizer" "$tap_tmp/psgd-3d-shard.txt"
tap_ok $? "3d PowerSGD sharded: the banner says the optimizer is sharded (exit $(cat "$tap_tmp/psgd-3d-shard.rc"))"
# shellcheck disable=SC2086
same psgd-3d-shard psgd-3d "3d PowerSGD sharded = unsharded" $key_bias
clipped psgd-3d-shard "3d PowerSGD sharded"
tiles psgd-3d-shard 8 $((total3d + ln))
tap_ok $? "3d PowerSGD: each rank's optimizer-state bytes are its shard's 2 moments, the shards $total3d + $ln floats"
# shellcheck disable=SC2086
"$compare" "$tap_tmp/psgd-3d-shard/model.h5" "$tap_tmp/gpt-3d/model.h5" 1e-5 $key_bias >/dev/null 2>&1
[ $? = 1 ]
tap_ok $? "3d PowerSGD sharded differs beyond the tolerance from the exact sharded run (the compression acts)"
# a sharded PowerSGD checkpoint (moments of the shards, PowerSGD's per-rank errors and factors) resumes
# on the same layout, ending where the straight run does
# shellcheck disable=SC2086
run psgd-3d-half 8 gpt-3d.deck $gpt $grid $shard $psgd -D run.steps=5
# shellcheck disable=SC2086
resume psgd-3d-again psgd-3d-half 8 gpt-3d.deck $gpt $grid $shard $psgd
tap_ok $? "the sharded PowerSGD 3d checkpoint resumes on its layout"
# shellcheck disable=SC2086
same psgd-3d-again psgd-3d-shard "sharded PowerSGD 3d, 5 + 5 steps = 10 steps" $key_bias
# with nothing to shard over (3d with dp = 1, 1 rank of dp) the key is said to do nothing, not silent
# shellcheck disable=SC2086
run noshard-3d 2 gpt-3d.deck $gpt -D parallel.tp=1 -D parallel.pp=2 -D parallel.dp=1 $shard -D run.steps=1
# shellcheck disable=SC2086
run noshard-dp 1 mlp-fmnist.deck -D data.train_samples=500 -D data.test_samples=50 $shard -D run.steps=1
grep -q "3d: \[parallel\] shard_optimizer has nothing to shard with dp = 1" "$tap_tmp/noshard-3d.txt" &&
  grep -q "dp: \[parallel\] shard_optimizer has nothing to shard on 1 rank" "$tap_tmp/noshard-dp.txt"
tap_ok $? "shard_optimizer with nothing to shard over (3d dp = 1; dp on 1 rank) says so (exit $(cat "$tap_tmp/noshard-3d.rc") $(cat "$tap_tmp/noshard-dp.rc"))"

tap_done
