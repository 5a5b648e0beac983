#!/bin/sh
# Short convergence checks on real data, and bit-for-bit repeatability of a run.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"

# mlp on the first 10k Fashion-MNIST training images, evaluated on the 10k test images: > 75%.
out="$tap_tmp/mlp.txt"
"$SURGE_TRAIN" "$top_src/inputs/mlp-fmnist.deck" -D run.steps=160 -D data.train_samples=10000 \
  -D run.eval_every=0 -D "run.out_dir=$tap_tmp/mlp" >"$out" 2>&1
tap_ok $? "mlp trains on 10k Fashion-MNIST samples"
acc=$(sed -n 's/^final test accuracy \([0-9.]*\)%.*/\1/p' "$out")
awk -v a="${acc:-0}" 'BEGIN{exit !(a > 75)}'
tap_ok $? "mlp test accuracy ${acc:-?}% > 75% after 160 steps of 128"

# gpt (small: 2 layers, width 128, context 64, AdamW lr 2e-3 cosine) on the fortunes text: training loss < 3.0 within 100 steps.
out="$tap_tmp/gpt.txt"
"$SURGE_TRAIN" "$top_src/inputs/gpt-fortunes.deck" -D run.steps=100 -D run.print_every=10 -D run.eval_every=0 \
  -D model.gpt_layers=2 -D model.gpt_width=128 -D model.gpt_context=64 -D data.test_samples=64 \
  -D train.lr=2e-3 -D train.min_lr=2e-4 -D train.warmup_steps=10 \
  -D "run.out_dir=$tap_tmp/gpt" >"$out" 2>&1
tap_ok $? "gpt trains on fortunes"
best=$(sed -n 's/^step *[0-9]*\/[0-9]* | loss \([0-9.]*\) .*/\1/p' "$out" | sort -g | head -n 1)
awk -v l="${best:-99}" 'BEGIN{exit !(l < 3.0)}'
tap_ok $? "gpt training loss ${best:-?} < 3.0 nats/byte within 100 steps"

# same seed, same run: bitwise equal parameters (h5diff without tolerance compares exactly).
for i in 1 2; do
  "$SURGE_TRAIN" "$top_src/inputs/resnet-mini-fmnist.deck" -D run.steps=5 -D data.train_samples=512 \
    -D data.test_samples=64 -D train.global_batch=32 -D "run.out_dir=$tap_tmp/rep$i" >/dev/null 2>&1
done
h5diff "$tap_tmp/rep1/model.h5" "$tap_tmp/rep2/model.h5" /params /params >"$tap_tmp/diff.txt" 2>&1
tap_ok $? "two runs with the same seed end with bitwise equal parameters"
"$SURGE_TRAIN" "$top_src/inputs/resnet-mini-fmnist.deck" -D run.steps=5 -D data.train_samples=512 \
  -D data.test_samples=64 -D train.global_batch=32 -D run.seed=2 -D "run.out_dir=$tap_tmp/rep3" >/dev/null 2>&1
h5diff -q "$tap_tmp/rep1/model.h5" "$tap_tmp/rep3/model.h5" /params /params >/dev/null 2>&1
[ $? = 1 ]
tap_ok $? "a different seed gives different parameters (the comparison can fail)"

tap_done
