#!/bin/sh
# Multiplexing (doc/multiplexing.md, "Measured"): on as many foreground ranks as cores (2), a
# foreground vgg-mini whose burst plan runs the second half of the network (conv2 block, classifier)
# on rank 0 only, so rank 1 idles for part of every step; one 1-rank background vgg-mini job per
# foreground rank (MPMD launch, --bind-to core: each background shares its partner's core).
# Three runs in this invocation, the same foreground deck and steps:
#   dp     the data-parallel plan alone          (the baseline for total throughput)
#   burst  the burst plan alone                  (the baseline for the foreground's slowdown)
#   mux    the burst plan with the two backgrounds
#   thread the burst plan with the same two backgrounds in-process ([multiplex] placement = thread:
#          a second thread of each foreground rank's process, surge-train --background-deck)
#   plain  the burst plan beside the same two jobs started plainly, one pinned to each core (no
#          gating, normal priority): what sharing the cores costs without multiplexing
#   polite the burst plan alone with --foreground and no partner: the cost of the polite waits,
#          and the CPU time they leave free (CPU seconds of the whole job per step, burst vs polite)
# Then short steps (about 1.4 ms alone: vgg-mini 4/8 channels wide, fc 32, global batch 32, the
# same idle plan, MUX_SHORT_STEPS steps; MUX_SHORT_STEPS=0 skips it), the polite waits' pace by
# [multiplex] poll_fraction: the foreground alone, alone as a --foreground, and with an in-process
# mlp background per rank (synthetic data, batch 32), at each fraction of MUX_FRACTIONS; the
# background's work is the steps it made beside the idle rank (doc/multiplexing.md, "Polite waits
# on short steps").
# Reported: foreground samples/s (global batch / median step time of the slowest rank), background
# samples/s (summed over the background jobs while the foreground ran: the foreground log's
# /multiplex@background_samples_per_sec), total, slowdown = burst / mux foreground samples/s, and
# total against dp. Each run is repeated REPEATS times (alternating) and the median taken.
# Called by bench/run-bench.sh with SURGE_TRAIN, MPIEXEC and SURGE_BUILD set.
set -eu
train=${SURGE_TRAIN:-./surge-train}
build=${SURGE_BUILD:-$(dirname "$train")}
mpiexec=${MPIEXEC:-mpiexec}
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
batch=${MUX_BATCH:-64}
bg_batch=${MUX_BG_BATCH:-16}
steps=${MUX_STEPS:-30}
repeats=${MUX_REPEATS:-3}
short_steps=${MUX_SHORT_STEPS:-300}
fractions=${MUX_FRACTIONS:-0.0625 0.25}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$build/tests/make_plan" ] || { echo "bench_multiplex: $build/tests/make_plan is missing (make bench builds it)" >&2; exit 1; }

. "$src/bench/lib.sh"
# fg_sps LOG [BATCH]: global batch (default $batch) / median step time, skipping the first 3 steps (warm-up)
fg_sps() { h5vals "$1" /metrics/step_time | tail -n +4 | median | awk -v b="${2:-$batch}" '{ print b / $1 }'; }

fg="$train $src/inputs/vgg-mini-fmnist.deck -D data.source=synthetic -D train.global_batch=$batch -D backend.threads=1
  -D data.test_samples=16 -D run.steps=$steps -D run.eval_every=0 -D run.print_every=1000 -D run.overwrite=true"
"$build/tests/make_plan" "$src/inputs/vgg-mini-fmnist.deck" 2 "$tmp/p.plan" data.source=synthetic "train.global_batch=$batch" \
  >/dev/null 2>&1 || { echo "bench_multiplex: make_plan failed" >&2; exit 1; }
awk -v b="$batch" '/^[0-9]+ / && $1 >= 6 { print $1, $2, 1, 0, b; next } { print }' "$tmp/p.plan" >"$tmp/idle.plan"
burst="-D parallel.mode=burst -D parallel.plan=$tmp/idle.plan"
bg="$train $src/inputs/vgg-mini-fmnist.deck --background -D data.source=synthetic -D train.global_batch=$bg_batch
  -D backend.threads=1 -D data.test_samples=16 -D run.steps=1000000 -D run.eval_every=0 -D run.print_every=1000000
  -D run.overwrite=true"

# the same backgrounds in-process: the background deck's keys as -D bg:section.key=value
inproc="-D multiplex.placement=thread --background-deck $src/inputs/vgg-mini-fmnist.deck -D bg:data.source=synthetic
  -D bg:train.global_batch=$bg_batch -D bg:data.test_samples=16 -D bg:run.steps=1000000 -D bg:run.eval_every=0
  -D bg:run.print_every=1000000 -D bg:run.overwrite=true"

# the same background jobs as plain jobs: no --background, stopped when the foreground ends; their
# samples/s: samples of the steps they logged over those steps' time
co="$train $src/inputs/vgg-mini-fmnist.deck -D data.source=synthetic -D train.global_batch=$bg_batch
  -D backend.threads=1 -D data.test_samples=16 -D run.steps=1000000 -D run.eval_every=0 -D run.print_every=1000000
  -D run.overwrite=true -D log.flush_every=1"
co_sps() { h5vals "$1" /metrics/step_time | awk -v b="$bg_batch" '{ t += $1; n++ } END { print (t > 0 ? b * n / t : 0) }'; }

# cpu_of FILE CMD...: run CMD, then write the CPU seconds it and its descendants used to FILE
cpu_of() {
  sh -c '"$@"; rc=$?; awk -v hz="$(getconf CLK_TCK)" "{ print (\$16 + \$17) / hz }" /proc/$$/stat >"$0"; exit $rc' "$@"
}

# run CONFIG DIR: one run of dp, burst, mux, plain or polite; the foreground's log is DIR/log.h5
# shellcheck disable=SC2086
run() {
  case $1 in
    dp) "$mpiexec" --bind-to core -n 2 $fg -D "run.out_dir=$2" ;;
    burst) cpu_of "$2.cpu" "$mpiexec" --bind-to core -n 2 $fg $burst -D "run.out_dir=$2" ;;
    polite) cpu_of "$2.cpu" "$mpiexec" --bind-to core -n 2 $fg $burst --foreground -D "multiplex.channel=bench-$$" \
      -D "run.out_dir=$2" ;;
    mux) "$mpiexec" --bind-to core --map-by core -n 2 $fg $burst -D "run.out_dir=$2" \
      : -n 1 $bg -D "run.out_dir=$2-b0" : -n 1 $bg -D "run.out_dir=$2-b1" -D multiplex.partner_offset=1 ;;
    thread) "$mpiexec" --bind-to core -n 2 $fg $burst $inproc -D "run.out_dir=$2" -D "bg:run.out_dir=$2-b" ;;
    plain) # two plain 1-rank jobs pinned to the two cores, running until the foreground is done
      for k in 0 1; do
        taskset -c $k "$mpiexec" --bind-to none -n 1 $co -D "run.out_dir=$2-b$k" >"$2-b$k.txt" 2>&1 &
      done
      "$mpiexec" --bind-to core -n 2 $fg $burst -D "run.out_dir=$2"
      rc=$?
      pkill -f "run.out_dir=$2-b[01]( |\$)"
      wait
      return $rc ;;
  esac >"$2.txt" 2>&1 || { echo "bench_multiplex: the $1 run failed:" >&2; tail -n 5 "$2.txt" >&2; exit 1; }
}
r=1
while [ $r -le "$repeats" ]; do
  for c in dp burst mux thread plain polite; do
    run $c "$tmp/$c-$r"
    fg_sps "$tmp/$c-$r/log.h5" >>"$tmp/$c.fg"
  done
  h5attr "$tmp/mux-$r/log.h5" /multiplex/background_samples_per_sec >>"$tmp/mux.bg"
  h5attr "$tmp/thread-$r/log.h5" /multiplex/background_samples_per_sec >>"$tmp/thread.bg"
  echo "$(co_sps "$tmp/plain-$r-b0/log.h5") $(co_sps "$tmp/plain-$r-b1/log.h5")" | awk '{ print $1 + $2 }' >>"$tmp/plain.bg"
  for c in burst polite; do awk -v n="$steps" '{ print $1 / n }' "$tmp/$c-$r.cpu" >>"$tmp/$c.cpu"; done
  r=$((r + 1))
done
dp=$(median <"$tmp/dp.fg")
alone=$(median <"$tmp/burst.fg")
fgm=$(median <"$tmp/mux.fg")
fgp=$(median <"$tmp/plain.fg")
bgp=$(median <"$tmp/plain.bg")
bgm=$(median <"$tmp/mux.bg")
fgt=$(median <"$tmp/thread.fg")
bgt=$(median <"$tmp/thread.bg")
fgq=$(median <"$tmp/polite.fg")
cpu_spin=$(median <"$tmp/burst.cpu")
cpu_polite=$(median <"$tmp/polite.cpu")
printf '# vgg-mini, global batch %d, %d steps, synthetic data, 2 foreground ranks on %s cores; backgrounds: 2 x vgg-mini at batch %d\n' \
  "$batch" "$steps" "$(nproc 2>/dev/null || echo '?')" "$bg_batch"
printf '# median of %d runs of each configuration (alternating); foreground samples/s from the median step time after 3 warm-up steps\n' "$repeats"
mux_table "$dp" "$alone" "burst plan + 2 backgrounds" "$fgm" "$bgm" "burst plan + 2 in-process backgrounds" "$fgt" "$bgt" \
  "burst plan + the 2 jobs, not multiplexed" "$fgp" "$bgp"
echo "# fg slowdn: burst alone / burst with backgrounds (foreground samples/s; 1.10 is the 10% target);"
echo "# total/dp: (foreground + background samples/s) / the data-parallel plan alone on the same ranks;"
echo "# not multiplexed: the same two jobs started plainly on the two cores (normal priority, no gating)"
printf '\n# the foreground alone: waits spinning in MPI (plain) or polling and sleeping (--foreground, no partner)\n'
printf '%-40s %12s %16s\n' configuration "fg samp/s" "CPU s per step"
awk -v a="$alone" -v q="$fgq" -v s="$cpu_spin" -v p="$cpu_polite" 'BEGIN {
  printf "%-40s %12.1f %16.3f\n", "burst plan alone", a, s
  printf "%-40s %12.1f %16.3f\n", "burst plan alone, --foreground", q, p }'
echo "# CPU s per step: user + system time of the whole job (2 ranks and mpiexec) over its steps, start-up included"

# ---- short steps: the polite waits' pace by poll_fraction
[ "$short_steps" -gt 0 ] || exit 0
narrow="model.vgg_channels=4,8 model.vgg_fc=32"
"$build/tests/make_plan" "$src/inputs/vgg-mini-fmnist.deck" 2 "$tmp/s.plan" data.source=synthetic train.global_batch=32 \
  $narrow >/dev/null 2>&1 || { echo "bench_multiplex: make_plan (short steps) failed" >&2; exit 1; }
awk '/^[0-9]+ / && $1 >= 6 { print $1, $2, 1, 0, 32; next } { print }' "$tmp/s.plan" >"$tmp/s-idle.plan"
sfg="$train $src/inputs/vgg-mini-fmnist.deck -D data.source=synthetic -D train.global_batch=32 -D backend.threads=1
  -D model.vgg_channels=4,8 -D model.vgg_fc=32 -D data.test_samples=16 -D run.steps=$short_steps -D run.eval_every=0
  -D run.print_every=100000 -D run.overwrite=true -D parallel.mode=burst -D parallel.plan=$tmp/s-idle.plan"
smlp="-D multiplex.placement=thread --background-deck $src/inputs/mlp-fmnist.deck -D bg:data.source=synthetic
  -D bg:model.mlp_hidden=64 -D bg:train.global_batch=32 -D bg:data.test_samples=16 -D bg:run.steps=100000000
  -D bg:run.eval_every=0 -D bg:run.print_every=100000000 -D bg:run.overwrite=true"
# short_run KIND FRACTION DIR: one short-step run (alone, polite: --foreground alone, pair: with backgrounds)
# shellcheck disable=SC2086
short_run() {
  case $1 in
    alone) "$mpiexec" --bind-to core -n 2 $sfg -D "run.out_dir=$3" ;;
    polite) "$mpiexec" --bind-to core -n 2 $sfg --foreground -D "multiplex.channel=bench-s$$" \
      -D "multiplex.poll_fraction=$2" -D "run.out_dir=$3" ;;
    pair) "$mpiexec" --bind-to core -n 2 $sfg $smlp -D "multiplex.poll_fraction=$2" -D "run.out_dir=$3" \
      -D "bg:run.out_dir=$3-b" ;;
  esac >"$3.txt" 2>&1 || { echo "bench_multiplex: the short-step $1 run failed:" >&2; tail -n 5 "$3.txt" >&2; exit 1; }
}
r=1
while [ $r -le "$repeats" ]; do
  short_run alone - "$tmp/s-alone-$r"
  fg_sps "$tmp/s-alone-$r/log.h5" 32 >>"$tmp/s-alone.fg"
  for f in $fractions; do
    for k in polite pair; do
      short_run $k "$f" "$tmp/s-$k-$f-$r"
      fg_sps "$tmp/s-$k-$f-$r/log.h5" 32 >>"$tmp/s-$k-$f.fg"
    done
    h5vals "$tmp/s-pair-$f-$r-b/bg1/log.h5" /metrics/step | tail -n 1 >>"$tmp/s-pair-$f.steps"
  done
  r=$((r + 1))
done
salone=$(median <"$tmp/s-alone.fg")
printf '
# short steps: vgg-mini 4/8 channels wide, fc 32, global batch 32, %d steps, the same idle plan; alone %.1f samples/s
' \
  "$short_steps" "$salone"
printf '%-14s %22s %22s %22s
' poll_fraction "polite alone: slowdn" "in-process pair: slowdn" "bg steps (idle rank)"
for f in $fractions; do
  awk -v f="$f" -v a="$salone" -v q="$(median <"$tmp/s-polite-$f.fg")" -v p="$(median <"$tmp/s-pair-$f.fg")" \
    -v k="$(median <"$tmp/s-pair-$f.steps")" 'BEGIN { printf "%-14s %22.3f %22.3f %22d\n", f, a / q, a / p, k }'
done
echo "# slowdn: the foreground alone / the row's (medians of $repeats runs); bg steps: the in-process mlp background"
echo "# beside the idle rank, steps made during the foreground's $short_steps (median)"
