#!/bin/sh
# make bench BENCH=simd: the cpu backend's kernel widths against the fallback without them, in one
# invocation: per model (BENCH_SIMD_MODELS, default vgg-mini resnet-mini mlp), BENCH_SIMD_ROUNDS
# (default 5) rounds of alternating bench_models --rate runs on 1 rank at simd = none (convolutions
# lowered to im2col + OpenBLAS GEMMs, the general loops), avx2 and, where the CPU has it, avx512;
# the median samples/s of each and the speed-up over none.
# Called by bench/run-bench.sh from the build directory with MPIEXEC set.
set -eu
mpiexec=${MPIEXEC:-mpiexec}
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
models=${BENCH_SIMD_MODELS:-vgg-mini resnet-mini mlp}
rounds=${BENCH_SIMD_ROUNDS:-5}
case $rounds in '' | *[!0-9]* | 0) echo "bench_simd.sh: BENCH_SIMD_ROUNDS=$rounds: expected a positive count" >&2; exit 2 ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/bench/lib.sh"
widths="none"
grep -q '\bavx2\b' /proc/cpuinfo && grep -q '\bfma\b' /proc/cpuinfo && widths="$widths avx2"
grep -q '\bavx512f\b' /proc/cpuinfo && widths="$widths avx512"
echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores; widths measured: $widths"
echo "# 1 rank, 1 BLAS thread, synthetic data; medians of $rounds alternating rounds, samples/s"
printf '%-12s' model; for w in $widths; do printf ' %10s' "$w"; done
for w in $widths; do [ "$w" = none ] || printf ' %12s' "$w/none"; done; echo
for m in $models; do
  for w in $widths; do : >"$tmp/$w"; done
  i=0
  while [ $i -lt "$rounds" ]; do
    for w in $widths; do BENCH_SIMD=$w "$mpiexec" -n 1 ./bench/bench_models --rate "$m" >>"$tmp/$w"; done
    i=$((i + 1))
  done
  printf '%-12s' "$m"
  for w in $widths; do median <"$tmp/$w" >"$tmp/$w.med"; printf ' %10.1f' "$(cat "$tmp/$w.med")"; done
  for w in $widths; do
    [ "$w" = none ] || awk -v a="$(cat "$tmp/$w.med")" -v b="$(cat "$tmp/none.med")" 'BEGIN { printf " %11.2fx", a / b }'
  done
  echo
done
