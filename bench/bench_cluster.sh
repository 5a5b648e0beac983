#!/bin/sh
# The emulated cluster (doc/cluster.md): 2 nodes x 2 ranks started by mpiexec through the cluster's
# launch agent, links shaped to each rate in turn. Four parts (CLUSTER_PARTS, default all):
#   net        per rate (CLUSTER_RATES, default 10gbit 1gbit 100mbit): point-to-point bandwidth
#              from rank 0 to the other node and within its own (tests/p2p_bw, median of 5
#              transfers), and allreduce bus bandwidth at 4 MiB, raw MPI_Allreduce and the comm
#              layer (bench/bench_allreduce), each against the configured rate
#   burst      per rate (CLUSTER_PLAN_RATES, default 1gbit 100mbit): burst planner fidelity for
#              vgg-mini and resnet-mini on the 4 ranks (bench/bench_burst.sh: profile on the
#              cluster, plan, train the plan and data parallelism, predicted against measured)
#   multiplex  per rate (CLUSTER_PLAN_RATES): a vgg-mini foreground on the 4 ranks under the plan the
#              planner makes from a profile on this cluster, with one 1-rank vgg-mini background
#              per foreground rank beside it on its node, as separate processes (MPMD launch) and
#              in-process ([multiplex] placement = thread, a background thread in each foreground
#              rank's process), against data parallelism alone and the burst plan alone on the same
#              ranks; MUX_REPEATS runs of each (alternating), medians: foreground samples/s, its
#              slowdown (burst alone / with backgrounds), background samples/s, total / data parallel
#   pipeline   per rate (CLUSTER_PLAN_RATES): the 3d layout's scatter-gather (doc/3d.md): a gpt of 4
#              blocks (width 256, context 128, batch 16 in 4 micro-batches; synthetic tokens) on tp 2 x
#              pp 2, each stage's tp pair on one node so the pipeline crosses the link, with
#              [parallel] scatter_gather true and false alternating (MUX_REPEATS runs of 12 steps),
#              median step of 3..12 and the pipeline's bytes a step that crossed nodes
# CLUSTER_AUTOGROUP=0 or 1: kernel.sched_autogroup_enabled for the benchmark's duration (restored at
# its exit; unset: as the machine has it). With autogroups on, as Debian ships, the ranks of the two
# emulated nodes are in two sessions, and the foreground stalled for 1-30 s at a time beside the
# low-priority backgrounds (doc/cluster.md); each run's stalls are counted either way.
# CLUSTER_SHORT=1: a quick check that it all runs (a few minutes): the multiplex part only, at
# 1gbit, one run of each, MUX_STEPS 12, a shorter profile (the figures are then rough).
# Needs root and network namespaces (tools/cluster-local-up.sh --check); elsewhere it says why and
# measures nothing. Called by bench/run-bench.sh with SURGE_TRAIN, MPIEXEC and SURGE_BUILD set.
set -eu
train=${SURGE_TRAIN:-./surge-train}
build=${SURGE_BUILD:-$(dirname "$train")}
mpiexec=${MPIEXEC:-mpiexec}
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
short=${CLUSTER_SHORT:-0}
[ "$short" = 1 ] && short_plan=1gbit short_parts=multiplex short_steps=12 short_repeats=1
rates=${CLUSTER_RATES:-10gbit 1gbit 100mbit}
plan_rates=${CLUSTER_PLAN_RATES:-${short_plan:-1gbit 100mbit}}
parts=${CLUSTER_PARTS:-${short_parts:-net burst multiplex pipeline}}
batch=${MUX_BATCH:-64}
bg_batch=${MUX_BG_BATCH:-16}
bg_extra=${MUX_BG_KEYS:-} # more keys of the backgrounds' deck, e.g. "-D multiplex.min_wait_us=0"
steps=${MUX_STEPS:-${short_steps:-30}}
repeats=${MUX_REPEATS:-${short_repeats:-3}}
prof_repeats=$([ "$short" = 1 ] && echo 3 || echo 10)
up="$src/tools/cluster-local-up.sh"
down="$src/tools/cluster-local-down.sh"
case $train in /*) ;; *) train=$(pwd)/$train ;; esac
case $build in /*) ;; *) build=$(pwd)/$build ;; esac

if ! why=$("$up" --check 2>&1); then
  echo "# bench_cluster: skipped: ${why#cluster-local-up: }"
  exit 0
fi
tmp=$(mktemp -d)
export CLUSTER_LOCAL_DIR="$tmp/cluster"
. "$src/bench/lib.sh"
trap '"$down" >/dev/null 2>&1; rm -rf "$tmp"; autogroup_restore' EXIT
autogroup_apply
"$up" --nodes 2 --slots 2 --link 1gbit >"$tmp/up.txt" 2>&1 || { cat "$tmp/up.txt" >&2; exit 1; }
. "$CLUSTER_LOCAL_DIR/cluster.env"
n0=$CLUSTER_NAME-n0 n1=$CLUSTER_NAME-n1
want() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
# reshape RATE: every link at RATE
reshape() { "$up" --link "$1" >/dev/null || { echo "bench_cluster: reshaping to $1 failed" >&2; exit 1; }; }
# mbit RATE: the rate in Mbit/s
mbit() { awk -v r="$1" 'BEGIN { v = r + 0; u = substr(r, length(v "") + 1)
  print v * (u == "gbit" ? 1000 : u == "mbit" ? 1 : u == "kbit" ? 0.001 : u == "tbit" ? 1e6 : 1e-6) }'; }
load() { awk '{ print $1 }' /proc/loadavg; }
echo "# 2 nodes x 2 ranks on $(nproc) cores, links shaped by tbf (burst: 1 ms at the rate, at least 64 KiB); load average $(load) at the start; sched_autogroup_enabled $(autogroup_now)"

if want net; then
  echo "# point-to-point: one message of MIB MiB from rank 0, median of 5; allreduce: float32 sum of 4 MiB,"
  echo "# busbw = 2(n-1)/n bytes / time (bench/bench_allreduce); x rate: against the configured link rate"
  printf '%-8s %12s %7s %14s %12s %7s %12s %7s %6s\n' link "p2p Mbit/s" "x rate" "same node" "ar raw busbw" "x rate" "ar comm" "x rate" load
  for rate in $rates; do
    reshape "$rate"
    r=$(mbit "$rate")
    mib=$(awk -v r="$r" 'BEGIN { print (r < 500 ? 8 : 32) }')
    "$mpiexec" -n 4 "$build/tests/p2p_bw" "$mib" 5 >"$tmp/bw.txt" 2>&1 || { cat "$tmp/bw.txt" >&2; exit 1; }
    "$mpiexec" -n 4 "$build/bench/bench_allreduce" 4194304 >"$tmp/ar.txt" 2>&1 || { cat "$tmp/ar.txt" >&2; exit 1; }
    other=$(awk '$1 == "pair" && $4 == "other" { print $7 }' "$tmp/bw.txt")
    same=$(awk '$1 == "pair" && $4 == "same" { print $7 }' "$tmp/bw.txt")
    # the 4 MiB row: size count iters | raw(us) algbw busbw #wrong | comm(us) algbw busbw #wrong | ratio
    ar=$(awk -F'|' '$1 ~ /^ *4194304 / { split($2, a, " "); split($3, b, " "); print a[3] * 8000, b[3] * 8000 }' "$tmp/ar.txt")
    awk -v l="$rate" -v r="$r" -v o="$other" -v s="$same" -v a="${ar% *}" -v c="${ar#* }" -v ld="$(load)" 'BEGIN {
      printf "%-8s %12.1f %7.3f %14.1f %12.1f %7.3f %12.1f %7.3f %6s\n", l, o, o / r, s, a, a / r, c, c / r, ld }'
  done
  echo "# same node: rank 0 to rank 1 (shared memory, unshaped); ar raw: MPI_Allreduce; ar comm: comm_allreduce_sum"
fi

if want burst; then
  for rate in $plan_rates; do
    reshape "$rate"
    echo "== burst planner fidelity on 2 nodes x 2 ranks, links at $rate (bench/bench_burst.sh), load $(load)"
    BURST_RANKS=4 BURST_MODELS="vgg-mini resnet-mini" SURGE_TRAIN="$train" SURGE_BUILD="$build" MPIEXEC="$mpiexec" \
      sh "$src/bench/bench_burst.sh"
  done
fi

if want multiplex; then
  [ -x "$build/surge-plan" ] || { echo "bench_cluster: $build/surge-plan is missing" >&2; exit 1; }
  deck="$src/inputs/vgg-mini-fmnist.deck"
  keys="-D data.source=synthetic -D backend.threads=1 -D data.test_samples=16 -D run.eval_every=0 -D run.overwrite=true"
  model="$deck $keys"
  fg="$train $model -D train.global_batch=$batch -D run.steps=$steps -D run.print_every=1000"
  bg_keys="$keys -D train.global_batch=$bg_batch -D run.steps=1000000 -D run.print_every=1000000 $bg_extra"
  bg="$train $deck --background $bg_keys"
  # the same backgrounds in-process: the background deck's keys as -D bg:section.key=value
  inproc="-D multiplex.placement=thread --background-deck $deck $(echo "$bg_keys" | sed 's/-D /-D bg:/g')"
  # fg_sps LOG: global batch / median step time, skipping the first 3 steps (warm-up)
  fg_sps() { h5vals "$1" /metrics/step_time | tail -n +4 | median | awk -v b="$batch" '{ print b / $1 }'; }
  # stalls LOG: the foreground's steps over 10 times the run's median step, and the longest step (s)
  stalls() {
    h5vals "$1" /metrics/step_time >"$tmp/steps.txt"
    awk -v m="$(median <"$tmp/steps.txt")" '$1 > 10 * m { n++ } $1 > x { x = $1 } END { printf "%d/%.1f\n", n, x }' "$tmp/steps.txt"
  }
  # run CONFIG DIR: dp, burst, mux or thread; the foreground's log is DIR/log.h5
  # shellcheck disable=SC2086
  run() {
    case $1 in
      dp) "$mpiexec" -n 4 $fg -D "run.out_dir=$2" ;;
      burst) "$mpiexec" -n 4 $fg $burst -D "run.out_dir=$2" ;;
      mux) "$mpiexec" -n 4 --host "$n0:2,$n1:2" $fg $burst -D "run.out_dir=$2" \
        : -n 1 --host "$n0" $bg -D "run.out_dir=$2-b0" : -n 1 --host "$n0" $bg -D "run.out_dir=$2-b1" -D multiplex.partner_offset=1 \
        : -n 1 --host "$n1" $bg -D "run.out_dir=$2-b2" : -n 1 --host "$n1" $bg -D "run.out_dir=$2-b3" -D multiplex.partner_offset=1 ;;
      thread) "$mpiexec" -n 4 --host "$n0:2,$n1:2" $fg $burst $inproc -D "run.out_dir=$2" -D "bg:run.out_dir=$2-b" ;;
    esac >"$2.txt" 2>&1 || { echo "bench_cluster: the $1 run failed:" >&2; tail -n 5 "$2.txt" >&2; exit 1; }
  }
  for rate in $plan_rates; do
    reshape "$rate"
    d="$tmp/mux-$rate"
    mkdir -p "$d"
    # shellcheck disable=SC2086
    "$mpiexec" -n 4 "$build/surge-profile" $model -D train.global_batch=$batch -o "$d/prof.h5" --warmup 3 --repeats "$prof_repeats" \
      >"$d/prof.txt" 2>&1 || { echo "bench_cluster: surge-profile failed:" >&2; tail -n 3 "$d/prof.txt" >&2; exit 1; }
    # shellcheck disable=SC2086
    "$build/surge-plan" $model -D train.global_batch=$batch --profile "$d/prof.h5" -o "$d/plan.txt" >"$d/plan.out" 2>&1 ||
      { echo "bench_cluster: surge-plan failed:" >&2; tail -n 3 "$d/plan.out" >&2; exit 1; }
    burst="-D parallel.mode=burst -D parallel.plan=$d/plan.txt"
    r=1
    while [ $r -le "$repeats" ]; do
      for c in dp burst mux thread; do
        run $c "$d/$c-$r"
        fg_sps "$d/$c-$r/log.h5" >>"$d/$c.fg"
        stalls "$d/$c-$r/log.h5" >>"$d/$c.stalls"
      done
      for c in mux thread; do h5attr "$d/$c-$r/log.h5" /multiplex/background_samples_per_sec >>"$d/$c.bg"; done
      r=$((r + 1))
    done
    echo "== multiplexing on 2 nodes x 2 ranks, links at $rate: vgg-mini foreground (batch $batch, $steps steps), one 1-rank vgg-mini background (batch $bg_batch) per foreground rank; load $(load)"
    awk '/^ranks used:/ { print "# the planner'"'"'s plan: " $0 }' "$d/plan.out"
    awk '/^[0-9]+ / { r = r " " $3 } END { print "# ranks per layer:" r }' "$d/plan.txt"
    sed -n 's/^predicted iteration time: /# predicted iteration time: /p' "$d/plan.out"
    mux_table "$(median <"$d/dp.fg")" "$(median <"$d/burst.fg")" \
      "burst plan + 4 backgrounds (processes)" "$(median <"$d/mux.fg")" "$(median <"$d/mux.bg")" \
      "burst plan + 4 in-process backgrounds" "$(median <"$d/thread.fg")" "$(median <"$d/thread.bg")"
    # every run's figure, in run order, so a spread the medians hide shows
    for f in dp.fg burst.fg mux.fg mux.bg thread.fg thread.bg; do printf '%s %s\n' "$f" "$(tr '\n' ' ' <"$d/$f")"; done |
      awk '{ printf "%s%s:", (NR > 1 ? ";" : "# each run (samples/s):"), " " $1; for (i = 2; i <= NF; i++) printf " %.0f", $i } END { print "" }'
    for f in dp burst mux thread; do printf '%s %s\n' "$f" "$(tr '\n' ' ' <"$d/$f.stalls")"; done |
      awk '{ printf "%s %s:", (NR > 1 ? ";" : "# each run'"'"'s foreground stalls (steps over 10x its median / longest step, s):"), $1
        for (i = 2; i <= NF; i++) printf " %s", $i } END { print "" }'
  done
  echo "# median of $repeats runs of each (alternating); foreground samples/s from the median step time after 3"
  echo "# warm-up steps; background samples/s: the foreground log's /multiplex@background_samples_per_sec;"
  echo "# fg slowdn: burst alone / burst with backgrounds; load: at the end of the rate's runs. A stall lets the"
  echo "# backgrounds run alone and inflates their samples/s: quote them from runs without stalls"
fi

if want pipeline; then
  gpt="$train $src/inputs/gpt-fortunes.deck -D data.source=synthetic -D backend.threads=1 -D model.gpt_layers=4
    -D model.gpt_width=256 -D model.gpt_heads=4 -D model.gpt_context=128 -D train.global_batch=16
    -D train.micro_batches=4 -D parallel.mode=3d -D parallel.tp=2 -D parallel.pp=2 -D run.steps=12
    -D run.eval_every=0 -D run.print_every=1000 -D checkpoint.every=0 -D run.overwrite=true"
  # step_s LOG: the median step time of steps 3..12 (s)
  step_s() { h5vals "$1" /metrics/step_time | tail -n +3 | median; }
  # crossed LOG: the activation and gradient bytes a step that crossed nodes
  crossed() {
    h5vals "$1" /metrics/internode_bytes_activation >"$tmp/a.txt" &&
      h5vals "$1" /metrics/internode_bytes_activation_grad >"$tmp/g.txt" &&
      paste "$tmp/a.txt" "$tmp/g.txt" | awk '{ s += $1 + $2 } END { printf "%.0f", s / NR }'
  }
  echo "== scatter-gather on 2 nodes x 2 ranks: a gpt of 4 x 256 (context 128, batch 16, 4 micro-batches)" \
    "on tp 2 x pp 2"
  printf '%-8s %-14s %10s %14s %s
' link scatter_gather "step s" "crossed B/step" "each run (s)"
  for rate in $plan_rates; do
    reshape "$rate"
    d="$tmp/pipe-$rate"
    mkdir -p "$d"
    r=1
    while [ $r -le "$repeats" ]; do
      for sg in true false; do
        # shellcheck disable=SC2086
        "$mpiexec" -n 4 --host "$n0:2,$n1:2" $gpt -D parallel.scatter_gather=$sg -D "run.out_dir=$d/$sg-$r" \
          >"$d/$sg-$r.txt" 2>&1 ||
          { echo "bench_cluster: the pipeline run failed:" >&2; tail -n 5 "$d/$sg-$r.txt" >&2; exit 1; }
        step_s "$d/$sg-$r/log.h5" >>"$d/$sg.s"
      done
      r=$((r + 1))
    done
    for sg in true false; do
      printf '%-8s %-14s %10.4f %14s %s
' "$rate" "$sg" "$(median <"$d/$sg.s")" "$(crossed "$d/$sg-1/log.h5")" \
        "$(tr '\n' ' ' <"$d/$sg.s")"
    done
    awk -v a="$(median <"$d/false.s")" -v b="$(median <"$d/true.s")" -v l="$(load)" -v r="$rate" \
      'BEGIN { printf "# %s: scatter-gather %.2fx the whole-tensor step (medians); load %s\n", r, a / b, l }'
  done
  echo "# median of $repeats runs of each (alternating); crossed: /metrics/internode_bytes_activation(_grad) a step"
fi
