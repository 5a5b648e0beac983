#!/bin/sh
# surge-sim against real runs on this machine (doc/sim.md, "Validation"): vgg-mini, global batch
# 64, on 2 foreground ranks (one per core), one BLAS thread each, synthetic data.
# Each of REPEATS repeats (default 3):
#   1. surge-profile measures the foreground (G = 2) and the background (1 rank, batch 16); surge-plan
#      exports both as graph files (--write-graph), the network as surge-profile measured it.
#   2. Two plans: surge-plan's fastest (no limit) and bench_multiplex's hand-made one that runs the
#      second half of the network on rank 0 only (rank 1 idles).
#   3. surge-sim --plan predicts each: iteration time, and for the hand-made plan the background's
#      samples/s (whole pieces in the gaps; and if every idle microsecond were used).
#   4. Each plan runs alone for STEPS steps (median step time after 3 warm-up steps), and the
#      hand-made one also with one 1-rank background per rank (MPMD, --bind-to core), whose foreground
#      log gives the background samples/s.
#   5. 3D: a gpt (4 blocks of width 128, context 64, global batch 16) profiled at per-rank batch 4,
#      surge-sim's 1F1B iteration for pp 2 x 4 micro-batches of 4 with the trainer's stages (2 blocks
#      each, --stage-nodes), and the same 3d run on 2 ranks.
# Reported: medians over the repeats, and each repeat's measured / predicted. SIM_PLACES picks where
# (default "local 1gbit"): local, the 2 ranks on this machine's cores (bound one per core); a link
# rate such as 1gbit, the 2 ranks on 2 emulated nodes of tools/cluster-local-up.sh joined by a link
# at that rate, each background on its partner's node, the profiles' network constants measured
# across that link (as root where network namespaces work; elsewhere that place is skipped, saying
# why).
# Called by bench/run-bench.sh with SURGE_TRAIN, MPIEXEC and SURGE_BUILD set.
set -eu
train=${SURGE_TRAIN:-./surge-train}
build=${SURGE_BUILD:-$(dirname "$train")}
mpiexec=${MPIEXEC:-mpiexec}
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
batch=64
bg_batch=16
steps=${SIM_STEPS:-30}
repeats=${SIM_REPEATS:-3}
tmp=$(mktemp -d)
# SIM_KEEP=1 keeps the profiles, graphs, plans and logs (the path is printed)
if [ -n "${SIM_KEEP:-}" ]; then echo "# files in $tmp"; else trap 'rm -rf "$tmp"' EXIT; fi
. "$src/bench/lib.sh"
deck="$src/inputs/vgg-mini-fmnist.deck"
common="-D data.source=synthetic -D backend.threads=1 -D data.test_samples=16 -D run.eval_every=0
  -D run.print_every=1000000 -D run.overwrite=true"
fg="$train $deck $common -D train.global_batch=$batch -D run.steps=$steps -D parallel.mode=burst"
bg="$train $deck --background $common -D train.global_batch=$bg_batch -D run.steps=1000000"
gdeck="$src/inputs/gpt-fortunes.deck"
gpt="$common -D model.gpt_width=128 -D model.gpt_context=64 -D train.global_batch=16"
pipe="-D parallel.mode=3d -D parallel.pp=2 -D train.micro_batches=4 -D parallel.stages=2,2"
fg_ms() { h5vals "$1" /metrics/step_time | tail -n +4 | median | awk '{ print 1000 * $1 }'; }
pred() { h5vals "$tmp/$1-sim.h5" "/sim/burst/plan_file_$2"; }
# validate PLACE: the repeats and the table, with the launches of PLACE (two: 2 ranks; mux_run FG...:
# the 2 foreground ranks and a background beside each)
validate() {
  # one repeat: profile, plan and predict, then run, so that profile and runs meet the same machine
  # (other work on the cores changes both)
  # shellcheck disable=SC2086
  r=1
  while [ $r -le "$repeats" ]; do
    {
      $two "$build/surge-profile" "$deck" $common -D train.global_batch=$batch -o "$tmp/fg.h5"
      $two "$build/surge-profile" "$deck" $common -D train.global_batch=$((2 * bg_batch)) -o "$tmp/bg.h5"
      "$build/surge-plan" "$deck" $common -D train.global_batch=$batch --profile "$tmp/fg.h5" --amp none \
        -o "$tmp/fast.plan" --write-graph "$tmp/fg.graph"
      "$build/surge-plan" "$deck" $common -D train.global_batch=$bg_batch --profile "$tmp/bg.h5" --ranks 1 \
        --write-graph "$tmp/bg.graph"
    } >"$tmp/prep.txt" 2>&1 || { echo "bench_sim: profiling or planning failed:" >&2; tail -5 "$tmp/prep.txt" >&2; exit 1; }
    # the hand-made plan: nodes 6 on (the second half) on rank 0 only
    awk -v b="$batch" '/^[0-9]+ / && $1 >= 6 { print $1, $2, 1, 0, b; next } { print }' "$tmp/fast.plan" |
      grep -v '^predicted_\|^one_rank_us' >"$tmp/idle.plan"
    for p in fast idle; do
      "$build/surge-sim" --graph "$tmp/fg.graph" --ranks 2 --batch $batch --plan "$tmp/$p.plan" --bg-graph "$tmp/bg.graph" \
        --bg-batch $bg_batch -o "$tmp/$p-sim.h5" >"$tmp/$p-sim.txt" 2>&1 ||
        { echo "bench_sim: surge-sim failed" >&2; tail -5 "$tmp/$p-sim.txt" >&2; exit 1; }
      pred $p iter_us >>"$tmp/$p.pred"
      $two $fg -D "parallel.plan=$tmp/$p.plan" -D "run.out_dir=$tmp/$p-$r" >"$tmp/$p-$r.txt" 2>&1 ||
        { echo "bench_sim: the $p run failed" >&2; tail -5 "$tmp/$p-$r.txt" >&2; exit 1; }
      fg_ms "$tmp/$p-$r/log.h5" >>"$tmp/$p.ms"
    done
    pred idle bg_samples_per_s >>"$tmp/bg.pred"
    pred idle bg_ideal_samples_per_s >>"$tmp/bgi.pred"
    mux_run $fg -D "parallel.plan=$tmp/idle.plan" -D "run.out_dir=$tmp/mux-$r" >"$tmp/mux-$r.txt" 2>&1 || { echo "bench_sim: the multiplexed run failed" >&2; tail -5 "$tmp/mux-$r.txt" >&2; exit 1; }
    fg_ms "$tmp/mux-$r/log.h5" >>"$tmp/mux.ms"
    # 3D: profile, the graph with the trainer's stages (stage 0: wte and blocks 0-1), predict, run
    {
      $two "$build/surge-profile" "$gdeck" $gpt --ranks 4 -o "$tmp/gpt.h5"
      "$build/surge-plan" "$gdeck" $gpt --profile "$tmp/gpt.h5" --write-graph "$tmp/gpt.graph"
    } >"$tmp/prep3d.txt" 2>&1 || { echo "bench_sim: profiling the gpt failed:" >&2; tail -5 "$tmp/prep3d.txt" >&2; exit 1; }
    cut=$(sed -n '/^# name/,$p' "$tmp/gpt.graph" | awk '$1 == "blocks.1.add2" { print n + 1; exit } !/^#/ && $1 != "input" { n++ }')
    total=$(sed -n '/^# name/,$p' "$tmp/gpt.graph" | awk '!/^#/ && $1 != "input" && $1 != "end" { n++ } END { print n }')
    "$build/surge-sim" --graph "$tmp/gpt.graph" --tp 1 --pp 2 --dp 1 --micro-batches 4 --micro-batch 4 \
      --stage-nodes "$cut,$((total - cut))" -o "$tmp/gpt-sim.h5" >"$tmp/gpt-sim.txt" 2>&1 ||
      { echo "bench_sim: surge-sim (3D) failed" >&2; tail -5 "$tmp/gpt-sim.txt" >&2; exit 1; }
    h5attr "$tmp/gpt-sim.h5" /sim/pipeline/plain_iter_us >>"$tmp/3d.pred"
    $two $train "$gdeck" $gpt $pipe -D run.steps="$steps" -D "run.out_dir=$tmp/3d-$r" \
      >"$tmp/3d-$r.txt" 2>&1 || { echo "bench_sim: the 3d run failed" >&2; tail -5 "$tmp/3d-$r.txt" >&2; exit 1; }
    fg_ms "$tmp/3d-$r/log.h5" >>"$tmp/3d.ms"
    h5attr "$tmp/mux-$r/log.h5" /multiplex/background_samples_per_sec >>"$tmp/mux.bg"
    r=$((r + 1))
  done
  cp "$tmp/idle.pred" "$tmp/mux.pred"
  echo "# $1: vgg-mini, global batch $batch, 2 foreground ranks on $(nproc) cores, $steps steps, median of $repeats runs; backgrounds: 2 x vgg-mini at batch $bg_batch"
  echo "# network measured by surge-profile: $(grep '^p2p_\|^ar_' "$tmp/fg.graph" | tr '\n' ' ')"
  printf '%-36s %12s %12s %10s %s\n' "quantity" predicted measured meas/pred "(medians; meas/pred per repeat)"
  row() { # row LABEL PRED_FILE MEAS_FILE SCALE: medians and the per-repeat ratios measured / predicted
    ratios=$(paste "$2" "$3" | awk -v s="$4" '{ printf "%.3f ", $2 * s / $1 }')
    awk -v l="$1" -v a="$(median <"$2")" -v b="$(median <"$3")" -v s="$4" -v r="$ratios" 'BEGIN {
      printf "%-36s %12.2f %12.2f %10.3f  %s\n", l, a / s, b, b * s / a, r }'
  }
  row "fastest plan, iteration ms" "$tmp/fast.pred" "$tmp/fast.ms" 1000
  row "hand-made plan, iteration ms" "$tmp/idle.pred" "$tmp/idle.ms" 1000
  row "hand-made + backgrounds, iteration ms" "$tmp/mux.pred" "$tmp/mux.ms" 1000
  row "background samples/s (whole pieces)" "$tmp/bg.pred" "$tmp/mux.bg" 1
  row "background samples/s (all idle time)" "$tmp/bgi.pred" "$tmp/mux.bg" 1
  row "3d gpt pp 2 x M 4, iteration ms" "$tmp/3d.pred" "$tmp/3d.ms" 1000
}

for place in ${SIM_PLACES:-local 1gbit}; do
  rm -f "$tmp"/*.pred "$tmp"/*.ms "$tmp"/*.bg
  if [ "$place" = local ]; then
    two="$mpiexec --bind-to core -n 2"
    mux_run() { # shellcheck disable=SC2068
      "$mpiexec" --bind-to core --map-by core -n 2 $@ : -n 1 $bg -D "run.out_dir=$tmp/mux-$r-b0" \
        : -n 1 $bg -D "run.out_dir=$tmp/mux-$r-b1" -D multiplex.partner_offset=1
    }
    validate "on this machine's cores"
    continue
  fi
  if ! why=$("$src/tools/cluster-local-up.sh" --check 2>&1); then
    echo "# bench_sim: not across emulated nodes: ${why#cluster-local-up: }"
    continue
  fi
  export CLUSTER_LOCAL_DIR="$tmp/cluster"
  trap '"$src/tools/cluster-local-down.sh" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
  "$src/tools/cluster-local-up.sh" --nodes 2 --link "$place" --slots 1 >"$tmp/up.txt" 2>&1 ||
    { cat "$tmp/up.txt" >&2; exit 1; }
  (
    . "$CLUSTER_LOCAL_DIR/cluster.env" # its environment stays inside
    n0=$CLUSTER_NAME-n0 n1=$CLUSTER_NAME-n1
    two="$mpiexec --map-by node -n 2"
    mux_run() { # shellcheck disable=SC2068
      "$mpiexec" -n 2 --host "$n0,$n1" $@ : -n 1 --host "$n0" $bg -D "run.out_dir=$tmp/mux-$r-b0" \
        : -n 1 --host "$n1" $bg -D "run.out_dir=$tmp/mux-$r-b1"
    }
    validate "2 emulated nodes, 1 rank each, a $place link"
  )
  "$src/tools/cluster-local-down.sh" >/dev/null 2>&1
  unset CLUSTER_LOCAL_DIR
  if [ -n "${SIM_KEEP:-}" ]; then trap - EXIT; else trap 'rm -rf "$tmp"' EXIT; fi
done
