#!/bin/sh
# Data parallelism at many ranks: vgg-mini as shipped (widths 32,64, global batch 128) trained on 1,
# 8 and 16 ranks ends with the same parameters, per tensor ||w_n - w_1|| / ||w_1|| <= 1e-5. Each
# rank's share (16 or 8 samples) and the 1-rank batch of 128 sum their gradients in different
# orders; with sums whose rounding does not grow with the batch the difference stays near 1e-7.
# 6 steps instead of 10 keep the 16-rank run short on 2 cores.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
compare="$top_build/tests/h5_compare"

common="-D run.steps=6 -D run.print_every=6 -D data.train_samples=1280 -D data.test_samples=16 -D run.eval_every=0 -D run.overwrite=true"
run() { # run NP: train into $tap_tmp/vgg-NP
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" -n "$1" "$SURGE_TRAIN" "$top_src/inputs/vgg-mini-fmnist.deck" $common \
    -D "run.out_dir=$tap_tmp/vgg-$1" >"$tap_tmp/vgg-$1.txt" 2>&1
}

run 1
tap_ok $? "vgg-mini on 1 rank"
for np in 8 16; do
  run "$np"
  rc=$?
  if [ $rc = 0 ]; then
    res=$("$compare" "$tap_tmp/vgg-$np/model.h5" "$tap_tmp/vgg-1/model.h5" 1e-5 2>&1)
    rc=$?
  else
    res="training failed (exit $rc): $(tail -n 3 "$tap_tmp/vgg-$np.txt")"
  fi
  tap_ok $rc "vgg-mini at global batch 128 on $np ranks = 1 rank: $res"
done

tap_done
