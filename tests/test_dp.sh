#!/bin/sh
# Data-parallel equivalence: every zoo model trained 10 steps on 2, 3, 4 and 8 ranks ends with the
# parameters of the 1-rank run: per tensor ||w_n - w_1|| / ||w_1|| <= 1e-5. The global batch of 20
# does not divide evenly over 3 and 8 ranks, so uneven shares are exercised too.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
. "$top_src/tests/zoo_models.sh"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
compare="$top_build/tests/h5_compare"

common="-D run.steps=10 -D run.print_every=10 -D train.global_batch=20 -D data.test_samples=40 -D run.overwrite=true"
run() { # run NAME NP DECK ARGS...: train into $tap_tmp/NAME-NP
  name=$1; np=$2; deck=$3; shift 3
  timeout 300 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$top_src/inputs/$deck" $common -D "run.out_dir=$tap_tmp/$name-$np" "$@" \
    >"$tap_tmp/$name-$np.txt" 2>&1
}

for model in mlp vgg resnet gpt; do
  zoo_model $model 10
  # shellcheck disable=SC2086
  run "$model" 1 "$deck" $args
  tap_ok $? "$model on 1 rank"
  for np in 2 3 4 8; do
    # shellcheck disable=SC2086
    run "$model" "$np" "$deck" $args
    rc=$?
    if [ $rc = 0 ]; then
      # shellcheck disable=SC2086
      res=$("$compare" "$tap_tmp/$model-$np/model.h5" "$tap_tmp/$model-1/model.h5" 1e-5 $extra 2>&1)
      rc=$?
    else
      res="training failed (exit $rc): $(tail -n 3 "$tap_tmp/$model-$np.txt")"
    fi
    tap_ok $rc "$model on $np ranks = 1 rank: $res"
  done
done

# the runs really trained (the comparison could fail): 1-rank parameters differ from the initial ones
"$mpiexec" -n 2 "$SURGE_TRAIN" "$top_src/inputs/mlp-fmnist.deck" $common -D model.mlp_hidden=64,32 \
  -D data.train_samples=400 -D run.steps=1 -D "run.out_dir=$tap_tmp/mlp-short" >/dev/null 2>&1
"$compare" "$tap_tmp/mlp-short/model.h5" "$tap_tmp/mlp-1/model.h5" 1e-5 >/dev/null 2>&1
[ $? = 1 ]
tap_ok $? "1 step and 10 steps differ beyond the tolerance (the comparison can fail)"

# bytes_other counts what passed since the previous row was read: that row's own sum of the columns
# (so every row after the first holds more than the first) and a checkpoint after step 2 (row 3);
# the rows read the meter before their own sum, so these bytes once fell in no row
run other 2 mlp-fmnist.deck -D model.mlp_hidden=64,32 -D run.steps=4 -D checkpoint.every=2 -D run.eval_every=0 \
  -D parallel.shard_optimizer=true
set -- $(h5vals "$tap_tmp/other-2/log.h5" /metrics/bytes_other)
[ $# = 4 ] && [ "$2" -gt "$1" ] && [ "$3" -gt "$2" ] && [ "$4" = "$2" ]
tap_ok $? "bytes_other holds the previous row's sum and the checkpoint after step 2: $*"

# a global batch smaller than the rank count is refused with a clear message
timeout 60 "$mpiexec" -n 4 "$SURGE_TRAIN" "$top_src/inputs/mlp-fmnist.deck" -D train.global_batch=3 \
  -D "run.out_dir=$tap_tmp/small" >"$tap_tmp/small.txt" 2>&1
rc=$?
grep -q "global_batch = 3 is smaller than the 4 ranks" "$tap_tmp/small.txt"
found=$?
[ $rc != 0 ] && [ $found = 0 ]
tap_ok $? "global batch 3 on 4 ranks is refused (exit $rc)"

tap_done
