# Sourced by tests: the zoo models at test sizes (tests/test_dp.sh, tests/gpu/*.gpu).
# zoo_run NAME DECK ARGS... trains 10 steps of batch 20 on 1 rank (zoo_ranks of them where set) into
# $tap_tmp/NAME (its output in $tap_tmp/NAME.txt) and returns the exit status (tests/test_simd_widths.sh,
# tests/test_bf16_train.sh).
# zoo_model NAME STEPS sets deck, args and extra, the h5_compare options for parameters after STEPS
# steps: the attention key bias, whose true gradient is exactly zero, is bounded apart, since AdamW
# (lr 3e-4) turns its rounding noise into steps of up to lr, differently for each summation order.
zoo_model() {
  case $1 in
    mlp) deck=mlp-fmnist.deck; args="-D model.mlp_hidden=64,32 -D data.train_samples=400"; extra="" ;;
    vgg) deck=vgg-mini-fmnist.deck; args="-D model.vgg_channels=4,8 -D model.vgg_fc=32 -D data.train_samples=400"; extra="" ;;
    resnet) deck=resnet-mini-fmnist.deck; args="-D model.resnet_width=4 -D model.resnet_blocks=1 -D data.train_samples=400"; extra="" ;;
    gpt) deck=gpt-fortunes.deck
         args="-D model.gpt_layers=2 -D model.gpt_width=32 -D model.gpt_heads=2 -D model.gpt_context=16 -D data.test_samples=8 -D train.warmup_steps=2"
         extra="--key-bias-bound $(awk -v s="$2" 'BEGIN { print 6e-4 * s }')" ;;
  esac
}

zoo_run() {
  zr_name=$1; zr_deck=$2; shift 2
  timeout 300 "$mpiexec" -n "${zoo_ranks:-1}" "$SURGE_TRAIN" "$top_src/inputs/$zr_deck" -D run.steps=10 \
    -D run.print_every=10 -D train.global_batch=20 -D data.test_samples=40 -D run.overwrite=true \
    -D "run.out_dir=$tap_tmp/$zr_name" "$@" >"$tap_tmp/$zr_name.txt" 2>&1
}
