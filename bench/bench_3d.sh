#!/bin/sh
# 3D parallelism (doc/3d.md), measured in one invocation:
#  1. the pipeline bubble measured against the theory (PP-1)/(M+PP-1), PP = 2 and 4 stages (tp = dp = 1)
#     and M = 1, 4, 8 micro-batches, 1F1B (surge-report's median over the logged steps);
#  2. activation memory per stage, 1F1B against GPipe at PP = 4, M = 8: the micro-batches a stage holds
#     and the bytes of its buffers (/pipeline/stages);
#  3. throughput of inputs/gpt-3d.deck (context and batch shrunk to fit this machine) on 2 and 4
#     ranks: each 3D layout against data parallelism on the same ranks (median step time, steps 3..).
# Bubbles and step times are medians over SURGE_BENCH_REPEAT (default 3) runs, the layouts of a
# table alternating, so that the load of other processes on the machine spreads over all of them.
# Called by bench/run-bench.sh with SURGE_TRAIN and MPIEXEC set; synthetic tokens, one BLAS thread.
# With more ranks than cores the ranks share cores: the bubble then also holds time a rank waited
# for a core, and throughput measures the layouts' total work more than their overlap.
set -eu
train=${SURGE_TRAIN:-./surge-train}
report=${SURGE_REPORT:-$(dirname "$train")/surge-report}
mpiexec=${MPIEXEC:-mpiexec}
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
repeat=${SURGE_BENCH_REPEAT:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/bench/lib.sh"

# run NP OUT DECK ARGS...: a synthetic-token run into $tmp/OUT
run() {
  np=$1; out=$2; deck=$3; shift 3
  "$mpiexec" -n "$np" "$train" "$src/inputs/$deck" -D data.source=synthetic -D run.print_every=1000 \
    -D run.eval_every=0 -D data.test_samples=16 -D "run.out_dir=$tmp/$out" -D run.overwrite=true "$@" \
    >"$tmp/$out.txt" 2>&1
}
# the median step time (s) of steps 3.. of a run
step_time() { h5vals "$tmp/$1/log.h5" /metrics/step_time | awk 'NR > 2' | median; }

small="-D model.gpt_layers=8 -D model.gpt_width=128 -D model.gpt_heads=4 -D model.gpt_context=64 -D train.global_batch=16
       -D run.steps=10 -D train.schedule=constant"
echo "-- 1. pipeline bubble, tp = dp = 1, 1F1B, gpt 8 x 128, context 64, batch 16 (medians: steps 2..10, $repeat runs)"
printf '%4s %4s %10s %10s %12s\n' PP M measured theory "step ms"
for _ in $(seq "$repeat"); do
  for pp in 2 4; do
    for m in 1 4 8; do
      # shellcheck disable=SC2086
      run "$pp" "b$pp-$m" gpt-fortunes.deck $small -D parallel.mode=3d -D parallel.pp="$pp" -D train.micro_batches="$m"
      "$report" "$tmp/b$pp-$m/log.h5" | sed -n 's/^  bubble: measured \([0-9.]*\) .* = \([0-9.]*\)$/\1 \2/p' |
        awk -v t="$(step_time "b$pp-$m")" '{ print $1, $2, t }' >>"$tmp/bubble-$pp-$m"
    done
  done
done
for pp in 2 4; do
  for m in 1 4 8; do
    f="$tmp/bubble-$pp-$m"
    awk -v pp="$pp" -v m="$m" -v b="$(awk '{ print $1 }' "$f" | median)" -v t="$(awk '{ print $3 }' "$f" | median)" \
      -v th="$(awk 'NR == 1 { print $2 }' "$f")" 'BEGIN { printf "%4d %4d %10.3f %10.3f %12.1f\n", pp, m, b, th, 1e3 * t }'
  done
done

echo "-- 2. activation memory per stage, PP = 4, M = 8 (bytes of a rank's activation buffers)"
for s in 1f1b gpipe; do
  # shellcheck disable=SC2086
  run 4 "m-$s" gpt-fortunes.deck $small -D run.steps=2 -D parallel.mode=3d -D parallel.pp=4 -D train.micro_batches=8 \
    -D parallel.schedule="$s"
  h5vals "$tmp/m-$s/log.h5" /pipeline/stages/micro_batches_held >"$tmp/held-$s"
  h5vals "$tmp/m-$s/log.h5" /pipeline/stages/activation_bytes >"$tmp/bytes-$s"
done
printf '%6s %12s %14s %12s %14s %8s\n' stage "1f1b held" "1f1b MiB" "gpipe held" "gpipe MiB" ratio
paste "$tmp/held-1f1b" "$tmp/bytes-1f1b" "$tmp/held-gpipe" "$tmp/bytes-gpipe" |
  awk '{ printf "%6d %12d %14.2f %12d %14.2f %7.2fx\n", NR - 1, $1, $2 / 1048576, $3, $4 / 1048576, $2 / $4 }'

big="-D model.gpt_context=64 -D train.global_batch=16 -D run.steps=6 -D train.schedule=constant -D checkpoint.every=0"
echo "-- 3. throughput of inputs/gpt-3d.deck (8 x 512, 8 heads; context 64, batch 16 here), samples/s (medians: steps 3..6, $repeat runs)"
layouts="2:dp 2:2,1,1,2 2:1,2,1,4 4:dp 4:2,2,1,4 4:4,1,1,4 4:1,4,1,4 4:1,2,2,4 4:2,1,2,4"
for _ in $(seq "$repeat"); do
  for l in $layouts; do
    np=${l%%:*} grid=${l#*:}
    if [ "$grid" = dp ]; then
      # shellcheck disable=SC2086
      run "$np" "t$np-dp" gpt-3d.deck $big -D parallel.mode=dp
    else
      IFS=, read -r t p d m <<EOF2
$grid
EOF2
      # shellcheck disable=SC2086
      run "$np" "t$np-$grid" gpt-3d.deck $big -D parallel.tp="$t" -D parallel.pp="$p" -D parallel.dp="$d" \
        -D train.micro_batches="$m"
    fi
    step_time "t$np-$grid" >>"$tmp/steps-$np-$grid"
  done
done
printf '%5s %-22s %12s %10s %9s\n' ranks layout "step ms" samples/s "vs dp"
for l in $layouts; do
  np=${l%%:*} grid=${l#*:}
  st=$(median <"$tmp/steps-$np-$grid")
  if [ "$grid" = dp ]; then
    name="data parallel" dp_time=$st
  else
    name=$(echo "$grid" | awk -F, '{ printf "tp %s pp %s dp %s, M %s", $1, $2, $3, $4 }')
  fi
  awk -v n="$np" -v l="$name" -v s="$st" -v d="$dp_time" \
    'BEGIN { printf "%5d %-22s %12.1f %10.2f %8.2fx\n", n, l, 1e3 * s, 16 / s, d / s }'
done
