# The multiplexing tests' pair (sourced after tap.sh; test_multiplex.sh, test_mux_thread.sh): a
# foreground vgg-mini burst job on 2 ranks whose plan leaves rank 1 idle for the second half of the
# network, $FG (give it -D run.steps=N), and an mlp background deck, $BG (its keys in $MLP); same A B:
# bitwise equal parameters (h5_compare's words in $tap_tmp/cmp.txt).
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
export OMPI_MCA_rmaps_base_oversubscribe=1
h5_compare="$top_build/tests/h5_compare"
vgg="model.vgg_channels=4,8 model.vgg_fc=32"
"$top_build/tests/make_plan" "$top_src/inputs/vgg-mini-fmnist.deck" 2 "$tap_tmp/p.plan" train.global_batch=32 $vgg \
  >/dev/null 2>&1
awk '/^[0-9]+ / && $1 >= 6 { print $1, $2, 1, 0, 32; next } { print }' "$tap_tmp/p.plan" >"$tap_tmp/idle.plan"
FG="$SURGE_TRAIN $top_src/inputs/vgg-mini-fmnist.deck -D model.vgg_channels=4,8 -D model.vgg_fc=32
  -D train.global_batch=32 -D data.train_samples=2000 -D data.test_samples=100 -D run.print_every=100
  -D parallel.mode=burst -D parallel.plan=$tap_tmp/idle.plan"
MLP="-D model.mlp_hidden=64 -D data.train_samples=5000 -D data.test_samples=100 -D run.eval_every=0
  -D run.print_every=1000 -D train.lr=0.1"
BG="$SURGE_TRAIN $top_src/inputs/mlp-fmnist.deck $MLP"
same() { "$h5_compare" "$1" "$2" 0 >"$tap_tmp/cmp.txt" 2>&1; }
