#!/bin/sh
# Backgrounds in a 3D pipeline's bubbles (doc/multiplexing.md, "In a 3d foreground's bubbles"), on
# the emulated cluster (doc/cluster.md): 2 nodes, links at RATE (default 1gbit), the foreground's
# stages alternating between the nodes (--map-by node: every stage boundary crosses a link).
# For each PP in 2 4 and M in 4 8 (tp = dp = 1, 1F1B), in one invocation, alternating:
#   solo  the 3d foreground alone (gpt 4 x 128, context 64, global batch 16, synthetic tokens)
#   mux   the same with a 1-rank mlp background beside every foreground rank (MPMD)
# Reported (medians of steps 3.. and of the repeats): the foreground's step time alone and with the
# backgrounds and their ratio (the slowdown; DeepPool's target: at most 1.10), the idle time the
# schedule predicts per rank and step (bubble (PP-1)/(M+PP-1) x the solo step), the time the
# foreground offered (/ranks/phase_offered: published idle or waiting) and the time its partners ran
# (/ranks/phase_background: their CPU seconds), each per rank and step, and used / predicted
# (target: at least 0.5). MUX3D_FG_ARGS: more -D for the foreground (both modes; e.g.
# "-D multiplex.poll_us=200", which only the multiplexed one uses). CLUSTER_AUTOGROUP=0|1: the kernel's
# autogroups for its duration (bench/lib.sh; with them on, the nodes' sessions stall the foreground). Called by bench/run-bench.sh with SURGE_TRAIN and MPIEXEC set; needs root
# and network namespaces (cluster-local-up.sh --check), else it says why and skips.
set -eu
train=${SURGE_TRAIN:-./surge-train}
mpiexec=${MPIEXEC:-mpiexec}
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
repeats=${SURGE_BENCH_REPEAT:-2}
rate=${MUX3D_RATE:-1gbit}
steps=${MUX3D_STEPS:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/bench/lib.sh"
cluster_up "3d multiplexing" 2 4 "$rate"

fg="$train $src/inputs/gpt-fortunes.deck -D data.source=synthetic -D model.gpt_layers=4 -D model.gpt_width=128
  -D model.gpt_heads=4 -D model.gpt_context=64 -D train.global_batch=16 -D train.schedule=constant -D run.steps=$steps
  -D run.print_every=1000 -D run.eval_every=0 -D data.test_samples=16 -D checkpoint.every=0 -D run.overwrite=true
  -D parallel.mode=3d -D parallel.tp=1 -D parallel.dp=1 ${MUX3D_FG_ARGS:-}"
bg="$train $src/inputs/mlp-fmnist.deck --background -D data.source=synthetic -D model.mlp_hidden=64
  -D train.global_batch=32 -D run.steps=1000000 -D run.eval_every=0 -D run.print_every=1000000 -D data.test_samples=16
  -D run.overwrite=true"

# run PP M MODE OUT: the foreground (and in mode mux its backgrounds: foreground rank r runs on node
# r % 2 as its index r / 2 there, so its background goes to that node with partner offset r / 2)
run() {
  pp=$1 m=$2 mode=$3 out=$4
  bgs=""
  if [ "$mode" = mux ]; then
    for r in $(seq 0 $((pp - 1))); do
      bgs="$bgs : -n 1 --host $CLUSTER_NAME-n$((r % 2)):4 $bg -D run.out_dir=$out-b$r -D multiplex.partner_offset=$((r / 2))"
    done
  fi
  # shellcheck disable=SC2086
  timeout 600 "$mpiexec" --map-by node -n "$pp" $fg -D parallel.pp="$pp" -D train.micro_batches="$m" \
    -D "run.out_dir=$out" $bgs >"$out.txt" 2>&1 || { echo "bench_multiplex_3d: PP $pp M $m $mode failed:" >&2; tail -n 5 "$out.txt" >&2; exit 1; }
}
step() { h5vals "$1/log.h5" /metrics/step_time | awk 'NR > 2' | median; }
# per_rank LOG DATASET PP: the median over steps 3.. of the mean over the ranks of a /ranks dataset
per_rank() {
  h5vals "$1/log.h5" "$2" | awk -v pp="$3" '{ s += $1 } NR % pp == 0 { if (NR / pp > 2) print s / pp; s = 0 }' | median
}

echo "-- a 3d foreground (tp 1, dp 1, 1F1B) on 2 nodes at $rate, with and without an mlp background per rank; $repeats runs alternating, medians of steps 3..$steps; load $(awk '{ print $1 }' /proc/loadavg); sched_autogroup_enabled $(autogroup_now)"
for i in $(seq "$repeats"); do
  for pp in 2 4; do
    for m in 4 8; do
      for mode in solo mux; do
        run "$pp" "$m" "$mode" "$tmp/$mode-$pp-$m-$i"
        step "$tmp/$mode-$pp-$m-$i" >>"$tmp/$mode-$pp-$m.step"
      done
      per_rank "$tmp/mux-$pp-$m-$i" /ranks/phase_offered "$pp" >>"$tmp/$pp-$m.offered"
      per_rank "$tmp/mux-$pp-$m-$i" /ranks/phase_background "$pp" >>"$tmp/$pp-$m.used"
      for r in $(seq 0 $((pp - 1))); do
        h5vals "$tmp/mux-$pp-$m-$i-b$r/log.h5" /metrics/step | wc -l >>"$tmp/$pp-$m.bgsteps"
      done
    done
  done
done
printf '%3s %3s %9s %9s %9s %9s %11s %9s %9s %9s\n' PP M "solo ms" "mux ms" slowdown bubble "idle ms" "offer ms" "used ms" "used/idle"
for pp in 2 4; do
  for m in 4 8; do
    awk -v pp="$pp" -v m="$m" -v s="$(median <"$tmp/solo-$pp-$m.step")" -v x="$(median <"$tmp/mux-$pp-$m.step")" \
      -v o="$(median <"$tmp/$pp-$m.offered")" -v u="$(median <"$tmp/$pp-$m.used")" 'BEGIN {
      b = (pp - 1) / (m + pp - 1); idle = b * s
      printf "%3d %3d %9.2f %9.2f %9.3f %9.3f %11.2f %9.2f %9.2f %9.2f\n", pp, m, 1e3 * s, 1e3 * x, x / s, b, 1e3 * idle,
        1e3 * o, 1e3 * u, u / idle }'
  done
done
echo "# slowdown: mux / solo step time (target <= 1.10); bubble: the schedule's (PP-1)/(M+PP-1); idle: bubble x the solo step,"
echo "# per rank; offer: what the foreground published as idle or waiting per rank and step; used: its partners' CPU"
echo "# seconds per rank and step (target used/idle >= 0.5); background steps trained in all: $(awk '{ s += $1 } END { print s }' "$tmp"/*.bgsteps)"
echo "# load average after: $(awk '{ print $1 }' /proc/loadavg)"
