#!/bin/sh
# Fidelity of the burst planner's cost model (doc/burst.md, "Fidelity"): for each model and rank
# count, profile with surge-profile on the same ranks, plan with surge-plan (A from the deck, 2 by
# default), train the burst plan and the data-parallel run (mode dp) for STEPS steps on synthetic
# data (the data-parallel run on the allreduce path the planner models, [parallel] node_shared =
# false: on one node dp otherwise sums through node-shared memory, faster than that model), and set
# the measured median step time (the log's /metrics/step_time, the slowest rank) beside the
# prediction. Rank-time: predicted = the planner's; measured = the sum over ranks of each rank's
# median forward + backward + comm + optimizer time per step (the log's /ranks/phase_*; comm includes
# time blocked in collectives and re-shards; the optimizer phase is the update the planner charges
# to each node's ranks). This machine has 2 cores: 4 ranks are oversubscribed.
# Called by bench/run-bench.sh with SURGE_TRAIN, MPIEXEC and SURGE_BUILD set.
set -eu
train=${SURGE_TRAIN:-./surge-train}
build=${SURGE_BUILD:-$(dirname "$train")}
mpiexec=${MPIEXEC:-mpiexec}
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
batch=${BURST_BATCH:-64}
steps=${BURST_STEPS:-30}
ranks_list=${BURST_RANKS:-2 4}
models=${BURST_MODELS:-mlp vgg-mini resnet-mini resnet-mini-bn resnet18} # batch-norm networks: the planner costs their sums (doc/burst.md)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cores=$(nproc 2>/dev/null || echo 1)

. "$src/bench/lib.sh"
# rank_ms LOG NP: sum over ranks of each rank's median (forward + backward + comm + optimizer) per
# step, in ms
rank_ms() {
  for ph in forward backward comm optimizer; do
    h5vals "$1" /ranks/phase_$ph >"$tmp/$ph.txt" || { echo nan; return; }
  done
  paste "$tmp/forward.txt" "$tmp/backward.txt" "$tmp/comm.txt" "$tmp/optimizer.txt" |
    awk '{ print $1 + $2 + $3 + $4 }' >"$tmp/busy.txt"
  total=0
  r=0
  while [ $r -lt "$2" ]; do
    m=$(awk -v np="$2" -v r=$r '(NR - 1) % np == r' "$tmp/busy.txt" | median)
    total=$(awk -v a="$total" -v b="$m" 'BEGIN { print a + b }')
    r=$((r + 1))
  done
  awk -v t="$total" 'BEGIN { print 1000 * t }'
}
row() { # row MODEL NP PLAN PRED_ITER_US PRED_RANK_US LOG
  meas=$(h5vals "$6" /metrics/step_time | median)
  busy=$(rank_ms "$6" "$2")
  awk -v m="$1" -v np="$2" -v p="$3" -v pi="$4" -v pr="$5" -v s="$meas" -v b="$busy" 'BEGIN {
    printf "%-12s %5d %-13s %10.2f %10.2f %8.2f %11.1f %11.1f %8.2f\n", m, np, p, pi / 1000, 1000 * s,
      1000 * s / (pi / 1000), pr / 1000, b, b / (pr / 1000) }'
}

printf '# global batch %d, %d steps per run, synthetic data, 1 BLAS thread per rank, %s cores\n' "$batch" "$steps" "$cores"
printf '%-12s %5s %-13s %10s %10s %8s %11s %11s %8s\n' model ranks plan "pred ms" "meas ms" meas/pred \
  "pred rk-ms" "meas rk-ms" meas/pred
for m in $models; do
  case $m in
    mlp) deck=mlp-fmnist.deck ;;
    vgg-mini) deck=vgg-mini-fmnist.deck ;;
    resnet-mini) deck=resnet-mini-fmnist.deck ;;
    resnet-mini-bn) deck=resnet-mini-bn-fmnist.deck ;;
    resnet18) deck=resnet18-fmnist.deck ;;
    *) echo "bench_burst: unknown model $m" >&2; exit 2 ;;
  esac
  set -- "$src/inputs/$deck" -D data.source=synthetic -D "train.global_batch=$batch" -D backend.threads=1 \
    -D data.test_samples=16
  for np in $ranks_list; do
    note=""
    [ "$np" -gt "$cores" ] && note=" (oversubscribed: $np ranks on $cores cores)"
    d="$tmp/$m-$np"
    mkdir -p "$d"
    "$mpiexec" -n "$np" "$build/surge-profile" "$@" -o "$d/prof.h5" --warmup 3 --repeats 10 >"$d/prof.txt" 2>&1 ||
      { echo "bench_burst: surge-profile $m on $np ranks failed:" >&2; tail -n 3 "$d/prof.txt" >&2; exit 1; }
    "$build/surge-plan" "$@" --profile "$d/prof.h5" -o "$d/plan.txt" >"$d/plan.out" 2>&1 ||
      { echo "bench_burst: surge-plan $m failed:" >&2; tail -n 3 "$d/plan.out" >&2; exit 1; }
    # "predicted iteration time: I us (data parallel D us: ...)" and "rank-time: R rank-us, ... (data parallel Q rank-us, ...)"
    pred=$(sed -n 's/^predicted iteration time: \([0-9.]*\) us (data parallel \([0-9.]*\) us.*/\1 \2/p' "$d/plan.out")
    rpred=$(sed -n 's/^rank-time: \([0-9.]*\) rank-us.*(data parallel \([0-9.]*\) rank-us.*/\1 \2/p' "$d/plan.out")
    # the same profile planned with local statistics (nothing summed): the data-parallel prediction
    # without batch norm's sums, for their share of it
    nobn=$("$build/surge-plan" "$@" -D model.batchnorm=local --profile "$d/prof.h5" -o "$d/plan-local.txt" 2>&1 |
      sed -n 's/^predicted iteration time: [0-9.]* us (data parallel \([0-9.]*\) us.*/\1/p')
    for mode in burst dp; do
      if [ $mode = burst ]; then extra="-D parallel.mode=burst -D parallel.plan=$d/plan.txt"; else extra="-D parallel.node_shared=false"; fi
      # shellcheck disable=SC2086
      "$mpiexec" -n "$np" "$train" "$@" $extra -D run.steps="$steps" -D run.eval_every=0 -D run.print_every=1000 \
        -D "run.out_dir=$d/$mode" -D run.overwrite=true >"$d/$mode.txt" 2>&1 ||
        { echo "bench_burst: surge-train $m $mode on $np ranks failed:" >&2; tail -n 3 "$d/$mode.txt" >&2; exit 1; }
    done
    row "$m" "$np" burst "${pred% *}" "${rpred% *}" "$d/burst/log.h5"
    row "$m" "$np" data-parallel "${pred#* }" "${rpred#* }" "$d/dp/log.h5"
    awk -v with="${pred#* }" -v without="$nobn" 'BEGIN { if (without != "" && with - without > 0.0005)
      printf "#   data parallel: %.2f ms of batch norm sums in its prediction (%.2f without)\n", (with - without) / 1000,
        without / 1000 }'
    [ -n "$note" ] && echo "#   $m on $np ranks:$note"
    awk '/^ranks used:/ { print "#   burst plan " $0 }' "$d/plan.out"
    awk '/^[0-9]+ / { r = r " " $3 } END { print "#   burst plan, ranks per layer:" r }' "$d/plan.txt"
  done
done
echo "# pred: the planner's cost model (forward+backward, re-shards, gradient sync, batch norm's sums); meas: median over the"
echo "# steps of the log; the model includes the data, loss and optimizer costs surge-profile measured (profile format 2)"
