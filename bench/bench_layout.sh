#!/bin/sh
# The one trainer's layouts (layout/layout.h), measured in one invocation:
#  1. memory per rank, data parallel on 4 ranks: the peak resident memory above the data against
#     the training state (parameters, gradients, optimizer moments, activations of B/R samples);
#  2. the gradient sync overlapped with the backward pass against the same run with
#     [parallel] overlap = false, 2 ranks: step time, and the exposed communication (step time
#     minus compute) as a fraction of the allreduce time of the run without overlap; on shared
#     memory, and (as root, where tools/cluster-local-up.sh can) across 2 emulated nodes on a
#     1 Gbit/s link, 1 rank each;
#  3. data-parallel throughput of every zoo model on 1 and 2 ranks, and, when SURGE_TRAIN_BASE names
#     another build's surge-train (e.g. the previous commit's), the same runs with it alternately.
# Called by bench/run-bench.sh with SURGE_TRAIN and MPIEXEC set. Synthetic data, one BLAS thread.
# LAYOUT_PARTS picks parts (default "memory overlap throughput"); LAYOUT_LINKS the emulated links
# of part 2 (default 1gbit; e.g. "1gbit 10gbit").
set -eu
train=${SURGE_TRAIN:-./surge-train}
base=${SURGE_TRAIN_BASE:-}
mpiexec=${MPIEXEC:-mpiexec}
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
repeat=${SURGE_BENCH_REPEAT:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/bench/lib.sh"

# settings MODEL: its deck, steps and global batch
settings() {
  case $1 in
    mlp) deck=mlp-fmnist.deck; steps=200; batch=128 ;;
    vgg-mini) deck=vgg-mini-fmnist.deck; steps=20; batch=128 ;;
    resnet-mini) deck=resnet-mini-fmnist.deck; steps=20; batch=64 ;;
    gpt) deck=gpt-fortunes.deck; steps=10; batch=16 ;;
  esac
}
# run PROGRAM NP MODEL OUT ARGS...: a synthetic-data run of MODEL into $tmp/OUT; its output in $tmp/OUT.txt
run() {
  prog=$1; np=$2; settings "$3"; out=$4; shift 4
  $mpiexec -n "$np" "$prog" "$src/inputs/$deck" -D data.source=synthetic -D run.steps="$steps" \
    -D run.print_every=1000 -D run.eval_every=0 -D data.test_samples=16 -D "run.out_dir=$tmp/$out" \
    -D run.overwrite=true "$@" >"$tmp/$out.txt" 2>&1
}
rate() { sed -n 's/^done: .*, \([0-9.]*\) samples\/s)$/\1/p' "$tmp/$1.txt"; }

parts=${LAYOUT_PARTS:-memory overlap throughput}
part() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }

if part memory; then
echo "-- memory per rank, data parallel on 4 ranks (peak resident memory above the data / training state)"
printf '%-12s %6s %8s %14s %14s %7s\n' model batch window "state MiB" "peak MiB" ratio
for m in vgg-mini gpt; do
  run "$train" 4 $m mem-$m
  settings $m
  sed -n 's/^memory per rank: training state \([0-9.]*\) MiB (.* of \([0-9]*\) samples), peak \([0-9.]*\) MiB.*(\([0-9.]*\)x.*/\1 \2 \3 \4/p' \
    "$tmp/mem-$m.txt" | awk -v m=$m -v b=$batch '{ printf "%-12s %6d %8d %14.1f %14.1f %6.2fx\n", m, b, $2, $1, $3, $4 }'
done
fi

# step_stats OUT: the medians over steps 3.. of the step time, the compute of the slowest rank (data,
# forward, backward, optimizer), and the largest comm and wait phases of a rank
step_stats() {
  for p in data forward backward optimizer comm wait; do h5vals "$tmp/$1/log.h5" /ranks/phase_$p >"$tmp/$p.v"; done
  h5vals "$tmp/$1/log.h5" /metrics/step_time >"$tmp/step.v"
  paste "$tmp/data.v" "$tmp/forward.v" "$tmp/backward.v" "$tmp/optimizer.v" "$tmp/comm.v" "$tmp/wait.v" |
    awk -v R=2 '{ s = int((NR - 1) / R); c = $1 + $2 + $3 + $4; if (c > comp[s]) comp[s] = c
                  if ($5 > comm[s]) comm[s] = $5; if ($6 > wait[s]) wait[s] = $6 }
      END { for (s in comp) print s, comp[s], comm[s], wait[s] }' | sort -n >"$tmp/per_step.v"
  col() { awk -v k="$1" 'NR > 2 { print $k }' "$tmp/per_step.v" | median; }
  echo "$(awk 'NR > 2' "$tmp/step.v" | median) $(col 2) $(col 3) $(col 4)"
}
# overlap_table: the table for gpt and vgg-mini, runs launched with $mpiexec
overlap_table() {
  printf '%-12s %12s %12s %9s %14s %14s %9s\n' model "step on ms" "step off ms" "on/off" "exposed on ms" "allreduce ms" exposed
  for m in gpt vgg-mini; do
    : >"$tmp/on.all"; : >"$tmp/off.all"
    for i in $(seq "$repeat"); do
      run "$train" 2 $m on-$m-$i -D parallel.overlap=true && step_stats on-$m-$i >>"$tmp/on.all"
      run "$train" 2 $m off-$m-$i -D parallel.overlap=false && step_stats off-$m-$i >>"$tmp/off.all"
    done
    on_step=$(awk '{ print $1 }' "$tmp/on.all" | median); off_step=$(awk '{ print $1 }' "$tmp/off.all" | median)
    # with overlap the comm phase also holds the wait for the slower rank, which the run without
    # overlap logs apart (its barrier): exposed = (comm + wait with overlap) - (wait without)
    sync_on=$(awk '{ print $3 + $4 }' "$tmp/on.all" | median); wait_off=$(awk '{ print $4 }' "$tmp/off.all" | median)
    exposed=$(awk -v a="$sync_on" -v b="$wait_off" 'BEGIN { e = a - b; print (e > 0 ? e : 0) }')
    allreduce=$(awk '{ print $3 }' "$tmp/off.all" | median)
    awk -v m=$m -v a="$on_step" -v b="$off_step" -v e="$exposed" -v r="$allreduce" \
      'BEGIN { printf "%-12s %12.2f %12.2f %8.3fx %14.2f %14.2f %8.0f%%\n", m, 1e3*a, 1e3*b, a/b, 1e3*e, 1e3*r, 100*e/r }'
  done
}
if part overlap; then
echo "-- gradient sync overlapped with the backward pass, 2 ranks on shared memory (medians over $repeat alternating runs, warm-up steps 1-2 left out)"
overlap_table
if "$src/tools/cluster-local-up.sh" --check >/dev/null 2>&1; then
  for link in ${LAYOUT_LINKS:-1gbit}; do
    echo "-- the same across 2 emulated nodes on a $link link, 1 rank each (tools/cluster-local-up.sh)"
    export CLUSTER_LOCAL_DIR="$tmp/cluster"
    trap '"$src/tools/cluster-local-down.sh" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
    "$src/tools/cluster-local-up.sh" --nodes 2 --link "$link" --slots 1 >/dev/null
    ( . "$CLUSTER_LOCAL_DIR/cluster.env" && mpiexec="$mpiexec --map-by node" && overlap_table ) # its environment stays inside
    "$src/tools/cluster-local-down.sh" >/dev/null 2>&1
    unset CLUSTER_LOCAL_DIR
    trap 'rm -rf "$tmp"' EXIT
  done
else
  echo "# (not across emulated nodes: $("$src/tools/cluster-local-up.sh" --check 2>&1 | tail -n 1))"
fi
fi

part throughput || exit 0
echo "-- data-parallel throughput, samples/s (medians over $repeat runs${base:+; before = $base, alternating})"
if [ -n "$base" ]; then
  printf '%-12s %6s %11s %11s %7s %11s %11s %7s\n' model batch "1 rank" before ratio "2 ranks" before ratio
else
  printf '%-12s %6s %11s %11s %9s\n' model batch "1 rank" "2 ranks" speed-up
fi
for m in mlp vgg-mini resnet-mini gpt; do
  settings $m
  line="$m $batch"
  for np in 1 2; do
    : >"$tmp/new.r"; : >"$tmp/old.r"
    for i in $(seq "$repeat"); do
      run "$train" $np $m tp-$m-$np && rate tp-$m-$np >>"$tmp/new.r"
      [ -z "$base" ] || { run "$base" $np $m tb-$m-$np && rate tb-$m-$np >>"$tmp/old.r"; }
    done
    line="$line $(median <"$tmp/new.r")"
    [ -z "$base" ] || line="$line $(median <"$tmp/old.r")"
  done
  if [ -n "$base" ]; then
    echo "$line" | awk '{ printf "%-12s %6d %11.1f %11.1f %6.3fx %11.1f %11.1f %6.3fx\n", $1, $2, $3, $4, $3/$4, $5, $6, $5/$6 }'
  else
    echo "$line" | awk '{ printf "%-12s %6d %11.1f %11.1f %8.2fx\n", $1, $2, $3, $4, $4/$3 }'
  fi
done
echo "# rates include the warm-up steps and the per-step log and metric reductions"
