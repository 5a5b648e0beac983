#!/bin/sh
# Burst-parallel execution ([parallel] mode = burst): mlp, vgg-mini and resnet-mini trained 10 steps
# on 2, 4 and 8 ranks under (a) a hand-written plan that changes the rank set at every layer and
# (b) the planner's plan for a synthetic profile (tests/make_plan) end with the parameters of the
# 1-rank data-parallel run: per tensor ||w - w_1|| / ||w_1|| <= 1e-5; so does a run with AdamW and
# clipping stopped and resumed from a checkpoint, also when a data-parallel run's checkpoint is resumed
# under a burst plan on another rank count. Plans for another rank count,
# naming ranks outside the job, or missing are refused with exit 2, and so is a tied output layer
# (GPT's) on another rank set than its embedding.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
compare="$top_build/tests/h5_compare"
make_plan="$top_build/tests/make_plan"

B=20
common="-D run.steps=10 -D run.print_every=10 -D train.global_batch=$B -D data.test_samples=40 -D data.train_samples=400 -D run.overwrite=true"
train() { # train OUT NP DECK ARGS...: train into $tap_tmp/OUT, output in $tap_tmp/OUT.txt
  out=$1; np=$2; deck=$3; shift 3
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$top_src/inputs/$deck" $common -D "run.out_dir=$tap_tmp/$out" "$@" \
    >"$tap_tmp/$out.txt" 2>&1
}
planner_plan() { # planner_plan NP DECK OUT MODEL_ARGS...: the planner's plan (its table in OUT.txt)
  np=$1; deck=$2; out=$3; shift 3
  "$make_plan" "$top_src/inputs/$deck" "$np" "$out" train.global_batch=$B data.train_samples=400 "$@" >"$out.txt" 2>&1
}
. "$top_src/tests/hand_plan.sh" # hand_plan NP PLANNER_PLAN
plan_args() { # the -D arguments of a model (small sizes, as tests/test_dp.sh)
  case $1 in
    mlp) echo "mlp-fmnist.deck model.mlp_hidden=64,32" ;;
    vgg) echo "vgg-mini-fmnist.deck model.vgg_channels=4,8 model.vgg_fc=32" ;;
    resnet) echo "resnet-mini-fmnist.deck model.resnet_width=4 model.resnet_blocks=1" ;;
  esac
}
dashD() { for a in "$@"; do printf -- '-D %s ' "$a"; done; }

for model in mlp vgg resnet; do
  # shellcheck disable=SC2046
  set -- $(plan_args $model)
  deck=$1; shift
  margs=$*
  # shellcheck disable=SC2046,SC2086
  train "$model-dp1" 1 "$deck" $(dashD $margs)
  tap_ok $? "$model: data parallel on 1 rank"
  for np in 2 4 8; do
    # shellcheck disable=SC2086
    planner_plan "$np" "$deck" "$tap_tmp/$model-$np-planner.plan" $margs
    hand_plan "$np" "$tap_tmp/$model-$np-planner.plan" >"$tap_tmp/$model-$np-hand.plan"
    for kind in hand planner; do
      # shellcheck disable=SC2046,SC2086
      train "$model-$np-$kind" "$np" "$deck" $(dashD $margs) -D parallel.mode=burst \
        -D "parallel.plan=$tap_tmp/$model-$np-$kind.plan"
      rc=$?
      if [ $rc = 0 ]; then
        res=$("$compare" "$tap_tmp/$model-$np-$kind/model.h5" "$tap_tmp/$model-dp1/model.h5" 1e-5 2>&1)
        rc=$?
      else
        res="training failed (exit $rc): $(tail -n 3 "$tap_tmp/$model-$np-$kind.txt")"
      fi
      tap_ok $rc "$model on $np ranks, $kind plan = 1 rank: $res"
    done
  done
done

# the gradient norm without clipping, taken by each rank's update over the tensors it is the first
# of its rank set to hold (the layout's norm plan, optim/norm.h) and summed over the ranks: every
# step's logged norm within 1e-5 of the 1-rank run's, on the hand plans that change rank sets
for np in 2 4; do
  worst=$(log_worst_rel "$tap_tmp/mlp-$np-hand/log.h5" "$tap_tmp/mlp-dp1/log.h5" /metrics/grad_norm 10)
  at_most "$worst" 1e-5
  tap_ok $? "mlp on $np ranks, hand plan: the 10 steps' gradient norms from the updates' passes = 1 rank's (worst $worst)"
done
tap_diag "the planner's resnet-mini plan on 8 ranks:" "$(cat "$tap_tmp/resnet-8-planner.plan.txt")"

# AdamW with clipping (the norm counts every node once), stopped after 5 steps and resumed to 10 on
# the hand plan (checkpoints hold the true parameters and moments), = 10 steps on 1 rank
adamw="-D model.mlp_hidden=64,32 -D train.optimizer=adamw -D train.lr=0.001 -D train.clip_norm=0.5"
# shellcheck disable=SC2086
train adamw-dp1 1 mlp-fmnist.deck $adamw
burst4="-D parallel.mode=burst -D parallel.plan=$tap_tmp/mlp-4-hand.plan"
# shellcheck disable=SC2086
train adamw-4 4 mlp-fmnist.deck $adamw $burst4 -D run.steps=5 && \
  train adamw-4 4 mlp-fmnist.deck $adamw $burst4 -D run.steps=10 --resume
rc=$?
if [ $rc = 0 ]; then
  res=$("$compare" "$tap_tmp/adamw-4/model.h5" "$tap_tmp/adamw-dp1/model.h5" 1e-5 2>&1)
  rc=$?
else
  res="training failed (exit $rc): $(tail -n 3 "$tap_tmp/adamw-4.txt")"
fi
tap_ok $rc "mlp, adamw + clipping, 5 steps then resumed to 10 on 4 ranks, hand plan = 1 rank: $res"

# a checkpoint of one layout resumed by another: 5 steps data parallel on 2 ranks, then to 10 on the
# 4-rank hand plan, = 10 steps on 1 rank
# shellcheck disable=SC2086
train cross 2 mlp-fmnist.deck $adamw -D run.steps=5 && \
  train cross 4 mlp-fmnist.deck $adamw $burst4 -D run.steps=10 --resume
rc=$?
if [ $rc = 0 ]; then
  res=$("$compare" "$tap_tmp/cross/model.h5" "$tap_tmp/adamw-dp1/model.h5" 1e-5 2>&1)
  rc=$?
else
  res="training failed (exit $rc): $(tail -n 3 "$tap_tmp/cross.txt")"
fi
tap_ok $rc "mlp, adamw + clipping, 5 steps data parallel on 2 ranks, resumed to 10 under the 4-rank burst plan = 1 rank: $res"

# bad plans: exit 2 with one line naming the problem
bad() { # bad DESCRIPTION PATTERN NP DECK ARGS...
  what=$1; pattern=$2; shift 2
  tap_refused "$what" "$pattern" "$tap_tmp/bad.txt" train bad "$@"
}
mlp="mlp-fmnist.deck -D model.mlp_hidden=64,32"
# shellcheck disable=SC2086
bad "a 4-rank plan on 2 ranks" "mlp-4-hand.plan:.*rank" 2 $mlp -D parallel.mode=burst -D "parallel.plan=$tap_tmp/mlp-4-hand.plan"
sed 's/^3 relu1 .*/3 relu1 2 3 10/' "$tap_tmp/mlp-4-planner.plan" >"$tap_tmp/outside.plan" # ranks 3..4 of 0..3
# shellcheck disable=SC2086
bad "a plan naming ranks beyond the job" "outside.plan:.*but the job has 4 ranks" 4 $mlp -D parallel.mode=burst \
  -D "parallel.plan=$tap_tmp/outside.plan"
# shellcheck disable=SC2086
bad "burst mode without a plan or profile" "needs parallel.plan or parallel.profile" 2 $mlp -D parallel.mode=burst
# shellcheck disable=SC2086
bad "a missing plan file" "nowhere.plan" 2 $mlp -D parallel.mode=burst -D "parallel.plan=$tap_tmp/nowhere.plan"
# GPT's output layer shares the embedding's weight: on another rank set it is refused
gpt="model.gpt_layers=1 model.gpt_width=32 model.gpt_heads=2 model.gpt_context=16"
# shellcheck disable=SC2086
planner_plan 2 gpt-fortunes.deck "$tap_tmp/gpt.plan" $gpt
sed 's/^0 input .*/0 input 2 0 10/; s/^1 wte .*/1 wte 1 1 20/; s/^13 lm_head .*/13 lm_head 2 0 10/' "$tap_tmp/gpt.plan" \
  >"$tap_tmp/tied.plan"
# shellcheck disable=SC2046,SC2086
bad "a tied output layer on another rank set than its embedding" "tied.plan:[0-9]*: node 13 'lm_head' shares its weight with node 1 'wte'" \
  2 gpt-fortunes.deck $(dashD $gpt) -D data.test_samples=8 -D parallel.mode=burst -D "parallel.plan=$tap_tmp/tied.plan"

tap_done
