#!/bin/sh
# make bench, models: the data-parallel rate of each zoo model on 1 and 2 ranks (bench_models --rate,
# one BLAS thread per rank, same global batch), then bench_models' one table of GFLOP/s against a
# large square SGEMM at 1 rank x 1 thread, with those rates and the 2-rank speed-up in it. The rates
# are the medians of BENCH_DP_PAIRS (default 3) runs on 1 and on 2 ranks, alternating: one run each
# let a moment of load on the shared machine decide the speed-up (mlp 1.35x once, 1.52-1.57x around).
# Called by bench/run-bench.sh from the build directory with MPIEXEC set.
set -eu
mpiexec=${MPIEXEC:-mpiexec}
models=${BENCH_MODELS:-mlp vgg-mini resnet-mini gpt}
pairs=${BENCH_DP_PAIRS:-3}
case $pairs in '' | *[!0-9]* | 0) echo "bench_models.sh: BENCH_DP_PAIRS=$pairs: expected a positive count" >&2; exit 2 ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
dp=""
for m in $models; do
  : >"$tmp/r1"
  : >"$tmp/r2"
  i=0
  while [ $i -lt "$pairs" ]; do
    "$mpiexec" -n 1 ./bench/bench_models --rate "$m" >>"$tmp/r1"
    "$mpiexec" -n 2 ./bench/bench_models --rate "$m" >>"$tmp/r2"
    i=$((i + 1))
  done
  dp="$dp --dp $m=$(median <"$tmp/r1"),$(median <"$tmp/r2")"
done
# shellcheck disable=SC2086
./bench/bench_models $dp $models
