# Sourced by the GPU tests (tests/gpu/*.gpu): the TAP helpers of tests/tap.sh, the GPU's name in a
# comment, or "1..0 # SKIP no GPU: <why>" and exit 77 where the cuda backend cannot open one.
SURGE_TOP_SRCDIR=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SURGE_TOP_SRCDIR/tests/tap.sh"
gpu_line=$("$top_build/tests/gpu/gpu_probe") || { echo "1..0 # SKIP $gpu_line"; exit 77; }
tap_diag "GPU: ${gpu_line#* }"
# The zoo models at test sizes (as tests/test_dp.sh): gpu_model NAME sets deck, args and the
# h5_compare options for the model (the attention key bias, whose true gradient is zero, is bounded
# apart: AdamW turns its rounding noise into steps of up to lr).
gpu_model() {
  case $1 in
    mlp) deck=mlp-fmnist.deck; args="-D model.mlp_hidden=64,32 -D data.train_samples=400"; extra="" ;;
    vgg) deck=vgg-mini-fmnist.deck; args="-D model.vgg_channels=4,8 -D model.vgg_fc=32 -D data.train_samples=400"; extra="" ;;
    resnet) deck=resnet-mini-fmnist.deck; args="-D model.resnet_width=4 -D model.resnet_blocks=1 -D data.train_samples=400"; extra="" ;;
    gpt) deck=gpt-fortunes.deck
         args="-D model.gpt_layers=2 -D model.gpt_width=32 -D model.gpt_heads=2 -D model.gpt_context=16 -D data.test_samples=8 -D train.warmup_steps=2"
         extra="--key-bias-bound 0.012" ;;
  esac
}
# gpu_need_fmnist: skip (as the cpu tests do) where the Fashion-MNIST dataset is not installed.
gpu_need_fmnist() {
  [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
}
