# Sourced by the GPU tests (tests/gpu/*.gpu): the TAP helpers of tests/tap.sh, the GPU's name in a
# comment, or "1..0 # SKIP no GPU: <why>" and exit 77 where the cuda backend cannot open one.
SURGE_TOP_SRCDIR=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SURGE_TOP_SRCDIR/tests/tap.sh"
gpu_line=$("$top_build/tests/gpu/gpu_probe") || { echo "1..0 # SKIP $gpu_line"; exit 77; }
tap_diag "GPU: ${gpu_line#* }"
. "$top_src/tests/zoo_models.sh"
# gpu_need_fmnist: skip (as the cpu tests do) where the Fashion-MNIST dataset is not installed.
gpu_need_fmnist() {
  [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
}
