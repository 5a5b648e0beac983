#!/bin/sh
# Activation recomputation ([train] recompute, doc/recompute.md) against none, in the same invocation:
#  1. one rank: step time (median of steps 3.., the runs interleaved, $BENCH_REPEAT rounds) and CPU
#     time per step (what a busy machine's other jobs inflate least), the
#     activation memory the engine holds (the "training state" of the memory line less the
#     parameters, gradients and moments, which recomputation leaves alone) and the process's peak
#     RSS above the data, for none, block and attention;
#  2. the 3d layout (tp 1 x pp 2, 4 micro-batches, 1F1B): each stage's activation bytes
#     (/pipeline/stages/activation_bytes) and the step time, none against block.
# The gpt of inputs/gpt-fortunes.deck (4 x 256, context 128, batch 16; BENCH_WIDTH, BENCH_CONTEXT,
# BENCH_BATCH change it), 10 steps a run.
# Run from the build directory (make bench BENCH=recompute).
set -eu
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
mpiexec=${MPIEXEC:-mpiexec}
train=${SURGE_TRAIN:-./surge-train}
repeat=${BENCH_REPEAT:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/surge-bench-rc.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$src/bench/lib.sh"
[ -d /usr/share/games/fortunes ] || { echo "bench_recompute: the fortunes text is not installed (Debian fortunes)"; exit 0; }
sizes="-D model.gpt_layers=4 -D model.gpt_width=${BENCH_WIDTH:-256} -D model.gpt_heads=4 \
  -D model.gpt_context=${BENCH_CONTEXT:-128} -D train.global_batch=${BENCH_BATCH:-16} -D run.steps=10 \
  -D run.eval_every=0 -D data.test_samples=8 -D checkpoint.every=0 -D run.overwrite=true -D run.print_every=100"
run() { # run NP NAME MODE ARGS...: surge-train into $tmp/NAME, its CPU seconds (user + sys; 1 rank) in NAME.cpu
  np=$1; name=$2; mode=$3; shift 3
  # shellcheck disable=SC2086
  "$mpiexec" -n "$np" /usr/bin/time -f '%U %S' -o "$tmp/$name.cpu" "$train" "$src/inputs/gpt-fortunes.deck" $sizes \
    -D train.recompute="$mode" -D "run.out_dir=$tmp/$name" "$@" >"$tmp/$name.txt" 2>&1 ||
    { cat "$tmp/$name.txt" >&2; exit 1; }
}
cpu() { awk '{ print $1 + $2 }' "$tmp/$1.cpu"; }
step_time() { h5vals "$tmp/$1/log.h5" /metrics/step_time | awk 'NR > 2' | median; }
mib() { sed -n "s/.*$2 \([0-9.]*\) MiB.*/\1/p" "$tmp/$1.txt"; }
peak() { sed -n "s/.* peak \([0-9.]*\) MiB above.*/\1/p" "$tmp/$1.txt"; }

echo "-- 1. one rank, gpt 4 x ${BENCH_WIDTH:-256}, context ${BENCH_CONTEXT:-128}, batch ${BENCH_BATCH:-16} ($repeat rounds)"
# CPU seconds per step: (a run of 10 steps - one of 2) / 8, which the other jobs of a shared machine
# inflate far less than the wall time
for r in $(seq "$repeat"); do
  for mode in none block attention; do
    run 1 "$mode-$r" "$mode"
    run 1 "$mode-$r-2" "$mode" -D run.steps=2
    step_time "$mode-$r" >>"$tmp/steps-$mode"
    awk -v a="$(cpu "$mode-$r")" -v b="$(cpu "$mode-$r-2")" 'BEGIN { print (a - b) / 8 }' >>"$tmp/cpu-$mode"
  done
done
# the parameters, gradients and moments (AdamW: 4 floats a parameter) are the same in every mode
params=$(sed -n 's/^model [^:]*: \([0-9]*\) parameters.*/\1/p' "$tmp/none-1.txt" | head -n 1)
printf '%-10s %10s %8s %12s %8s %16s %16s %8s\n' mode "ms/step" "x none" "CPU ms/step" "x none" "activation MiB" \
  "peak RSS MiB" saved
base=$(median <"$tmp/steps-none") cbase=$(median <"$tmp/cpu-none")
for mode in none block attention; do
  t=$(median <"$tmp/steps-$mode") c=$(median <"$tmp/cpu-$mode")
  awk -v m="$mode" -v t="$t" -v b="$base" -v c="$c" -v cb="$cbase" -v s="$(mib "$mode-1" "training state")" \
    -v s0="$(mib none-1 "training state")" \
    -v p="$(peak "$mode-1")" -v n="${params:-0}" 'BEGIN {
      w = 4 * 4 * n / 1048576; printf "%-10s %10.1f %7.2fx %12.1f %7.2fx %16.1f %16.1f %7.0f%%\n", m, 1e3 * t, t / b,
      1e3 * c, c / cb, s - w, p, 100 * (s0 - s) / (s0 - w) }'
done

echo "-- 2. 3d, tp 1 x pp 2, 4 micro-batches (1F1B): activation MiB per stage"
for mode in none block; do
  run 2 "3d-$mode" "$mode" -D parallel.mode=3d -D parallel.pp=2 -D parallel.micro_batches=4
  h5vals "$tmp/3d-$mode/log.h5" /pipeline/stages/activation_bytes >"$tmp/bytes-$mode"
done
printf '%6s %12s %12s %8s\n' stage "none MiB" "block MiB" ratio
paste "$tmp/bytes-none" "$tmp/bytes-block" | awk '{ printf "%6d %12.2f %12.2f %7.2fx\n", NR - 1, $1 / 1048576, $2 / 1048576, $2 / $1 }'
awk -v a="$(step_time 3d-none)" -v b="$(step_time 3d-block)" \
  'BEGIN { printf "step time (wall; the ranks poll while they wait, so CPU time says nothing here): none %.1f ms, block %.1f ms (%.2fx)\n", 1e3 * a, 1e3 * b, b / a }'
