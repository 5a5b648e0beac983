#!/bin/sh
# make bench, models: the data-parallel rate of each zoo model on 1 and 2 ranks (bench_models --rate,
# one BLAS thread per rank, same global batch), then bench_models' one table of GFLOP/s against a
# large square SGEMM at 1 rank x 1 thread, with those rates and the 2-rank speed-up in it.
# Called by bench/run-bench.sh from the build directory with MPIEXEC set.
set -eu
mpiexec=${MPIEXEC:-mpiexec}
models=${BENCH_MODELS:-mlp vgg-mini resnet-mini gpt}
dp=""
for m in $models; do
  r1=$("$mpiexec" -n 1 ./bench/bench_models --rate "$m")
  r2=$("$mpiexec" -n 2 ./bench/bench_models --rate "$m")
  dp="$dp --dp $m=$r1,$r2"
done
# shellcheck disable=SC2086
./bench/bench_models $dp $models
