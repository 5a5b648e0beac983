#!/bin/sh
# Data-parallel throughput of each zoo model on 1 and 2 ranks (this machine has 2 cores), synthetic
# data, one BLAS thread per rank; the 2-rank speed-up is measured against the 1-rank run of the same
# invocation. Called by bench/run-bench.sh with SURGE_TRAIN and MPIEXEC set.
set -eu
train=${SURGE_TRAIN:-./surge-train}
mpiexec=${MPIEXEC:-mpiexec}
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rate() { # rate NP DECK STEPS ARGS... -> samples/s of the run (from its summary line)
  np=$1; deck=$2; steps=$3; shift 3
  "$mpiexec" -n "$np" "$train" "$src/inputs/$deck" -D data.source=synthetic -D run.steps="$steps" \
    -D run.print_every=1000 -D run.eval_every=0 -D data.test_samples=16 -D "run.out_dir=$tmp/$deck-$np" \
    -D run.overwrite=true "$@" 2>&1 | sed -n 's/^done: .*, \([0-9.]*\) samples\/s)$/\1/p'
}

printf '%-12s %6s %12s %12s %9s %10s\n' model batch "1 rank" "2 ranks" speed-up efficiency
printf '%-12s %6s %12s %12s %9s %10s\n' "" "" samples/s samples/s "" ""
for m in mlp vgg-mini resnet-mini gpt; do
  case $m in
    mlp) deck=mlp-fmnist.deck; steps=200; batch=128 ;;
    vgg-mini) deck=vgg-mini-fmnist.deck; steps=20; batch=128 ;;
    resnet-mini) deck=resnet-mini-fmnist.deck; steps=20; batch=64 ;;
    gpt) deck=gpt-fortunes.deck; steps=8; batch=16 ;;
  esac
  r1=$(rate 1 $deck $steps)
  r2=$(rate 2 $deck $steps)
  awk -v m=$m -v b=$batch -v a="$r1" -v c="$r2" \
    'BEGIN{printf "%-12s %6d %12.1f %12.1f %8.2fx %9.0f%%\n", m, b, a, c, c/a, 50*c/a}'
done
echo "# rates include the first steps (warm-up) and the per-step log and metric reductions"
