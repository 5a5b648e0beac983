#!/bin/sh
# Gradient accumulation ([train] micro_batches = M) in the dp and burst layouts: each step runs the
# global batch of 20 in M micro-batches, summing their gradients, and ends with the parameters of the
# 1-rank run in one batch (per tensor ||w - w_1|| / ||w_1|| <= 1e-5):
#   dp     mlp and gpt on 1, 2 and 4 ranks with M = 2, 4 (micro-batches of 5 split 2/3 and
#          1/1/1/2: uneven shares), mlp with M = 8 on 4 ranks (micro-batches of 2 or 3 samples:
#          some ranks hold none of one), resnet-mini with dropout (masks keyed by sample id), and
#          mlp and gpt on 2 ranks summed by gradsync's buckets instead of node-shared memory;
#   burst  mlp and resnet-mini with dropout under tests/test_burst.sh's hand plan on 4 ranks, which
#          changes the rank set at every layer, with M = 2, 4;
#   restart 5 steps with M = 2 on 2 ranks resumed to 10 with M = 4 on 1 rank (micro_batches is not
#          part of the checkpoint's configuration).
# The option really shrinks the buffers (the run's "activations of N samples" and its banner), the
# comparison can fail (a step on one micro-batch's samples alone is far off), and bad values are
# refused with exit 2: 0, more than global_batch, a batch-norm model with M > 1, the key set under
# both its names; its former name [parallel] micro_batches still sets it.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
. "$top_src/tests/zoo_models.sh"
compare="$top_build/tests/h5_compare"
make_plan="$top_build/tests/make_plan"

B=20
common="-D run.steps=10 -D run.print_every=10 -D train.global_batch=$B -D data.test_samples=40 -D run.overwrite=true"
train() { # train OUT NP DECK ARGS...: train into $tap_tmp/OUT, output in $tap_tmp/OUT.txt (DECK: in inputs/, or a path)
  t_out=$1; t_np=$2; t_deck=$3; shift 3
  case $t_deck in /*) ;; *) t_deck=$top_src/inputs/$t_deck ;; esac
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" -n "$t_np" "$SURGE_TRAIN" "$t_deck" $common -D "run.out_dir=$tap_tmp/$t_out" "$@" \
    >"$tap_tmp/$t_out.txt" 2>&1
}
same() { # same OUT REF DESCRIPTION EXTRA...: the training into OUT (its exit status in $rc) ended at REF's parameters
  out=$1; ref=$2; what=$3; shift 3
  if [ "$rc" = 0 ]; then
    res=$("$compare" "$tap_tmp/$out/model.h5" "$tap_tmp/$ref/model.h5" 1e-5 "$@" 2>&1)
    rc=$?
  else
    res="training failed (exit $rc): $(tail -n 3 "$tap_tmp/$out.txt")"
  fi
  tap_ok $rc "$what: $res"
}
window() { sed -n 's/.*activations of \([0-9]*\) samples.*/\1/p' "$tap_tmp/$1.txt"; }

# data parallelism: mlp and gpt
for model in mlp gpt; do
  zoo_model $model 10
  # shellcheck disable=SC2086
  train "$model-ref" 1 "$deck" $args
  tap_ok $? "$model on 1 rank in one batch"
  for np in 1 2 4; do
    for M in 2 4; do
      [ $model = gpt ] && [ "$np" = 4 ] && [ "$M" = 2 ] && continue # gpt: 4 ranks once
      # shellcheck disable=SC2086
      train "$model-$np-$M" "$np" "$deck" $args -D train.micro_batches=$M
      rc=$?
      # shellcheck disable=SC2086
      same "$model-$np-$M" "$model-ref" "$model, dp on $np rank(s), $M micro-batches = 1 rank in one batch" $extra
    done
  done
done
zoo_model mlp 10
# shellcheck disable=SC2086
train mlp-4-8 4 "$deck" $args -D train.micro_batches=8
rc=$?
same mlp-4-8 mlp-ref "mlp, dp on 4 ranks, 8 micro-batches of 2 or 3 samples (ranks idle in some) = 1 rank in one batch"

# data parallelism through gradsync's buckets (overlapped with the last micro-batch's backward, the
# loss riding in the side slots) rather than node-shared memory, the default on one node
for model in mlp gpt; do
  zoo_model $model 10
  # shellcheck disable=SC2086
  train "$model-ar" 2 "$deck" $args -D train.micro_batches=4 -D parallel.node_shared=false
  rc=$?
  # shellcheck disable=SC2086
  same "$model-ar" "$model-ref" "$model, dp by allreduce on 2 ranks, 4 micro-batches = 1 rank in one batch" $extra
done
zoo_model mlp 10

# the buffers hold one micro-batch: B/R = 10 samples per rank in one batch; 5-sample micro-batches
# split 2/3 over 2 ranks: 3
[ "$(window mlp-2-4)" = 3 ] && [ "$(window gpt-2-4)" = 3 ] &&
  grep -q "dp: 4 micro-batches per step, their gradients summed; buffers of at most 3 samples" "$tap_tmp/mlp-2-4.txt"
tap_ok $? "4 micro-batches on 2 ranks: buffers of $(window mlp-2-4) samples per rank (mlp), $(window gpt-2-4) (gpt), stated in the banner"
train mlp-2-1 2 "$deck" $args
[ "$(window mlp-2-1)" = 10 ] && [ "$(window mlp-ref)" = 20 ] && [ "$(window mlp-1-4)" = 5 ]
tap_ok $? "one batch: $(window mlp-2-1) samples per rank on 2 ranks, $(window mlp-ref) on 1; 4 micro-batches on 1 rank: $(window mlp-1-4)"

# the comparison can fail: one step's gradient from a single micro-batch's samples (global batch 5)
# does not reach the reference
# shellcheck disable=SC2086
train mlp-part 1 "$deck" $args -D train.global_batch=5
"$compare" "$tap_tmp/mlp-part/model.h5" "$tap_tmp/mlp-ref/model.h5" 1e-5 >/dev/null 2>&1
[ $? = 1 ]
tap_ok $? "steps on one micro-batch's samples alone differ beyond the tolerance (the comparison can fail)"

# resnet-mini with dropout: residual branches, and masks that must not depend on the micro-batch
resnet="resnet-mini-fmnist.deck -D model.resnet_width=4 -D model.resnet_blocks=1 -D data.train_samples=400 -D model.dropout=0.3"
# shellcheck disable=SC2086
train resnet-ref 1 $resnet
tap_ok $? "resnet-mini with dropout on 1 rank in one batch"
# shellcheck disable=SC2086
train resnet-2-4 2 $resnet -D train.micro_batches=4
rc=$?
same resnet-2-4 resnet-ref "resnet-mini with dropout, dp on 2 ranks, 4 micro-batches = 1 rank in one batch"

# burst: the hand plan of tests/test_burst.sh on 4 ranks (node i on all ranks, on one rank, or on
# half of them in turn)
. "$top_src/tests/hand_plan.sh"
plan4() { # plan4 DECK OUT MODEL_ARGS...: the 4-rank hand plan of a model
  p_deck=$1; p_out=$2; shift 2
  "$make_plan" "$top_src/inputs/$p_deck" 4 "$p_out.planner" train.global_batch=$B data.train_samples=400 "$@" \
    >"$p_out.txt" 2>&1 && hand_plan 4 "$p_out.planner" >"$p_out"
}
plan4 mlp-fmnist.deck "$tap_tmp/mlp.plan" model.mlp_hidden=64,32 &&
  plan4 resnet-mini-fmnist.deck "$tap_tmp/resnet.plan" model.resnet_width=4 model.resnet_blocks=1 model.dropout=0.3
tap_ok $? "hand plans for 4 ranks"
for M in 2 4; do
  zoo_model mlp 10
  # shellcheck disable=SC2086
  train "mlp-burst-$M" 4 "$deck" $args -D parallel.mode=burst -D "parallel.plan=$tap_tmp/mlp.plan" -D train.micro_batches=$M
  rc=$?
  same "mlp-burst-$M" mlp-ref "mlp, burst hand plan on 4 ranks, $M micro-batches = 1 rank in one batch"
  # shellcheck disable=SC2086
  train "resnet-burst-$M" 4 $resnet -D parallel.mode=burst -D "parallel.plan=$tap_tmp/resnet.plan" -D train.micro_batches=$M
  rc=$?
  same "resnet-burst-$M" resnet-ref "resnet-mini with dropout, burst hand plan on 4 ranks, $M micro-batches = 1 rank in one batch"
done

# a restart may change micro_batches (and the rank count): the same steps
zoo_model mlp 10
adamw="-D train.optimizer=adamw -D train.lr=0.001 -D train.clip_norm=0.5"
# shellcheck disable=SC2086
train adamw-ref 1 "$deck" $args $adamw
# shellcheck disable=SC2086
train adamw-mb 2 "$deck" $args $adamw -D run.steps=5 -D train.micro_batches=2 &&
  train adamw-mb 1 "$deck" $args $adamw -D train.micro_batches=4 --resume
rc=$?
same adamw-mb adamw-ref "mlp, adamw + clipping, 5 steps with 2 micro-batches on 2 ranks resumed to 10 with 4 on 1 rank = 1 rank in one batch"

# bad values: exit 2, the message names the key
bad() { # bad DESCRIPTION PATTERN NP DECK ARGS...
  what=$1; pattern=$2; shift 2
  tap_refused "$what" "$pattern" "$tap_tmp/bad.txt" train bad "$@"
}
bad "micro_batches = 0" "\[train\] micro_batches: 0 is out of range" 1 mlp-fmnist.deck -D train.micro_batches=0
bad "more micro-batches than samples" "\[train\] micro_batches = 21, but \[train\] global_batch = 20" 2 mlp-fmnist.deck \
  -D train.micro_batches=21
bad "micro-batches with batch norm" "micro_batches = 2, but model resnet-mini normalises by batch statistics" 2 \
  resnet-mini-bn-fmnist.deck -D train.micro_batches=2 -D model.resnet_width=4 -D model.resnet_blocks=1
{ cat "$top_src/inputs/mlp-fmnist.deck"; printf '[parallel]\nmicro_batches = 4\n[train]\nmicro_batches = 2\n'; } >"$tap_tmp/twice.deck"
bad "the key under both names" "twice.deck:[0-9]*: \[train\] micro_batches: set twice" 1 "$tap_tmp/twice.deck"

# the former name [parallel] micro_batches (decks stored in logs and model files before the key
# moved) still sets it: 4 micro-batches on 2 ranks, buffers of 3 samples
zoo_model mlp 10
# shellcheck disable=SC2086
train mlp-was 2 "$deck" $args -D parallel.micro_batches=4
rc=$?
[ $rc = 0 ] && [ "$(window mlp-was)" = 3 ] && grep -q "dp: 4 micro-batches per step" "$tap_tmp/mlp-was.txt"
tap_ok $? "-D parallel.micro_batches=4, the former name, sets [train] micro_batches (exit $rc, window $(window mlp-was))"

tap_done
