#!/bin/sh
# Memory at scale (issue 34's measurements, doc/results.md "Memory at scale"), in one invocation:
#  memory  peak resident memory per rank of gpt2-124m's shape (12 layers, width 768, 12 heads,
#          vocabulary 50257 padded to 50304: 124M parameters) at context MEM_CONTEXT (64), global
#          batch MEM_BATCH (8), MEM_STEPS (2) AdamW steps, on MEM_RANKS (1 2 4 8) dp ranks, with and
#          without [parallel] shard_optimizer and with [train] recompute none and block
#          (MEM_RECOMPUTE), against the bytes each rank should hold: parameters and gradients
#          (4 bytes a parameter each), the optimizer's moments (the run's "optimizer state per
#          rank"), the activations (the engine's own accounting, the "activations" of the run's
#          "memory by rank (bytes)" line) and the process before the model existed (libraries, MPI, the
#          data; the run's "before model"). Ratio: (peak - before model) / state, per rank, at the
#          end of the last step ("steps peak") and at exit (after the final evaluation, checkpoint
#          and model file). Then the savings: unsharded less sharded peak against the moments the
#          shards drop, recompute none less block against the activations it drops.
#          node_shared = false throughout: the path every rank takes across nodes (node-shared
#          memory maps the parameters and the others' gradients into every rank on one node, and
#          a resident-set size counts shared pages in each process that touched them).
#          A configuration whose ranks would need more than 80% of MemAvailable (estimated from
#          the 1-rank run) is skipped with a line that says so.
#  speed   step time of the sharded optimizer (reduce-scatter + all-gather, node_shared = false)
#          against the allreduce path, a gpt of 3.3M parameters (4 x 256, context 128, batch 16,
#          the fortunes text), SPEED_STEPS (12) steps, median step time after 2, SPEED_REPEAT (3)
#          rounds alternating the two: 2 ranks on this node (node-shared memory as a third
#          reference), then 2 emulated nodes x 1 rank at SPEED_LINK (1gbit) (tools/cluster-local-up.sh;
#          needs root, else that part says why and is skipped). Bytes per step from the log.
# MEM_LAYERS (12) sets the gpt's blocks (9: 102M parameters, which 8 ranks fit in less memory);
# MEM_SHARDED ("false true") which of the two runs on more than one rank.
# SPEED_WHERE (default "node cluster") picks the speed part's places.
# MEM_PARTS (default "memory speed") picks the parts. The default memory matrix is the full one
# (1, 2, 4, 8 ranks x sharded x recompute: about 20 minutes on 2 cores; MEM_RANKS="1 2" for a quick
# look). The token shards: MEM_SHARDS, else ~/.cache/surge/linux-doc/shards-50257 or shards-4096
# (tools/make-corpus.sh; any shards do: the ids are below 50257 and only memory is measured).
# Run from the build directory (make bench BENCH=memory).
set -eu
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
mpiexec=${MPIEXEC:-mpiexec}
train=${SURGE_TRAIN:-./surge-train}
case $train in /*) ;; *) train=$(pwd)/$train ;; esac
parts=${MEM_PARTS:-memory speed}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/surge-bench-mem.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$src/bench/lib.sh"
want() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
load() { awk '{ print $1 }' /proc/loadavg; }
cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)
flags=$(awk '/^flags/ { for (i = 2; i <= NF; i++) if ($i ~ /^avx(2|512f)$/) f = f " " $i; print (f == "" ? " none" : f); exit }' /proc/cpuinfo)
echo "# $cpu, $(nproc) cores, avx flags:$flags; $(awk '/MemTotal/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo) GiB, load $(load) at the start"

# memory_rows FILE: the run's "memory by rank (bytes): peak ...; steps peak ...; ..." as one row per rank,
# in MiB: peak steps_peak before state activations
memory_rows() {
  sed -n 's/^memory by rank (bytes): //p' "$1" | awk -F';' '{
    for (q = 1; q <= NF; q++) { n = split($q, w, " "); k = 0
      for (i = 1; i <= n; i++) if (w[i] ~ /^[0-9]+$/) v[++k, q] = w[i] / 1048576
      ranks = k }
    for (r = 1; r <= ranks; r++) { line = ""; for (q = 1; q <= NF; q++) line = line (q > 1 ? " " : "") v[r, q]; print line } }'
}
# optim_rows FILE: each rank's optimizer-state bytes, one a line
optim_rows() { sed -n 's/^optimizer state per rank: bytes \(.*\) for slab.*/\1/p' "$1" | tr ' ' '\n' | awk NF; }

if want memory; then
  shards=${MEM_SHARDS:-}
  for d in "$HOME/.cache/surge/linux-doc/shards-50257" "$HOME/.cache/surge/linux-doc/shards-4096"; do
    [ -n "$shards" ] || { ls "$d"/*_train_*.bin >/dev/null 2>&1 && shards=$d; } || true
  done
  if [ -z "$shards" ]; then
    echo "-- memory: skipped: no token shards (tools/make-corpus.sh, or MEM_SHARDS=DIR)"
  else
    ranks_list=${MEM_RANKS:-1 2 4 8} modes=${MEM_RECOMPUTE:-none block}
    ctx=${MEM_CONTEXT:-64} batch=${MEM_BATCH:-8} steps=${MEM_STEPS:-2} layers=${MEM_LAYERS:-12}
    model="$src/inputs/gpt2-124m.deck -D data.path=$shards -D data.tokenizer= -D data.vocab_size=50257
      -D model.gpt_context=$ctx -D train.global_batch=$batch -D run.steps=$steps -D run.eval_every=0
      -D data.test_samples=8 -D run.print_every=1000 -D run.overwrite=true -D checkpoint.compression=none
      -D parallel.node_shared=false -D model.gpt_layers=$layers"
    echo "-- memory: gpt2-124m's shape with $layers blocks, context $ctx, global batch $batch, $steps AdamW steps, dp, node_shared = false ($shards)"
    mrun() { # mrun NAME NP ARGS...: surge-train into $tmp/NAME, its output in NAME.txt
      name=$1; np=$2; shift 2
      # shellcheck disable=SC2086
      "$mpiexec" -n "$np" "$train" $model -D "run.out_dir=$tmp/$name" "$@" >"$tmp/$name.txt" 2>&1 ||
        { echo "bench_memory: the $name run failed:" >&2; tail -n 5 "$tmp/$name.txt" >&2; exit 1; }
      rm -rf "${tmp:?}/$name" # the checkpoint and model file: 1.5 GB
    }
    printf '%5s %5s %9s %8s %8s %8s %8s %8s %9s %10s %10s %7s %7s %6s\n' ranks shard recompute "params" grads optim act \
      before predicted "steps pk" "exit pk" "x steps" "x exit" load
    echo "# MiB per rank (the largest of the ranks; optim, act: that rank's); predicted = before + params + grads + optim + act;"
    echo "# x: (peak - before model) / (params + grads + optim + act), the range over the ranks"
    n=""
    for np in $ranks_list; do
      for sh in ${MEM_SHARDED:-false true}; do
        [ "$np" -gt 1 ] || [ "$sh" = false ] || continue # one rank: nothing to shard
        for mode in $modes; do
          name=r$np-$sh-$mode
          if [ -n "$n" ]; then # the ranks' need from the 1-rank run: base + 8n + moments (sharded: / R) + act / R + 400 MiB for MPI
            need=$(awk -v np="$np" -v sh="$sh" -v n="$n" -v b="$base1" -v a="$act1" 'BEGIN {
              printf "%.0f", np * (b + 8 * n / 1048576 + (sh == "true" ? 8 * n / 1048576 / np : 8 * n / 1048576) + a / np + 400) }')
            avail=$(awk '/MemAvailable/ { printf "%.0f", $2 / 1024 }' /proc/meminfo)
            if [ "$need" -gt $((avail * 8 / 10)) ]; then
              printf '%5s %5s %9s   skipped: needs about %s MiB, %s MiB available\n' "$np" "$sh" "$mode" "$need" "$avail"
              continue
            fi
          fi
          mrun "$name" "$np" -D parallel.shard_optimizer="$sh" -D train.recompute="$mode"
          memory_rows "$tmp/$name.txt" >"$tmp/$name.rows"
          optim_rows "$tmp/$name.txt" >"$tmp/$name.optim"
          total=$(sed -n 's/^optimizer state per rank: .* of \([0-9]*\)$/\1/p' "$tmp/$name.txt")
          if [ -z "$n" ]; then
            n=$total
            base1=$(awk 'NR == 1 { print $3 }' "$tmp/$name.rows") act1=$(awk 'NR == 1 { print $5 }' "$tmp/$name.rows")
          fi
          paste -d' ' "$tmp/$name.rows" "$tmp/$name.optim" | awk -v np="$np" -v sh="$sh" -v m="$mode" -v n="$total" -v ld="$(load)" '{
            p = 4 * n / 1048576; o = $6 / 1048576; st = $4
            xs = ($2 - $3) / st; xe = ($1 - $3) / st
            if (NR == 1 || $2 > top) { top = $2; row = sprintf("%5s %5s %9s %8.1f %8.1f %8.1f %8.1f %8.1f %9.1f %10.1f %10.1f", np, sh, m, p, p, o, $5, $3, $3 + st, $2, $1) }
            if (NR == 1 || xs < xs0) xs0 = xs; if (NR == 1 || xs > xs1) xs1 = xs
            if (NR == 1 || xe < xe0) xe0 = xe; if (NR == 1 || xe > xe1) xe1 = xe
            if (st < p + p + o + $5 - 0.2 || st > p + p + o + $5 + 0.2) bad = 1 }
            END { printf "%s %s %s %6s%s\n", row, (xs0 == xs1 ? sprintf("%7.3f", xs0) : sprintf("%.3f-%.3f", xs0, xs1)),
              (xe0 == xe1 ? sprintf("%7.3f", xe0) : sprintf("%.3f-%.3f", xe0, xe1)), ld,
              bad ? "  (state != params + grads + optim + act)" : "" }'
        done
      done
    done
    # the savings, mean over the ranks of (steps peak - before model): measured against predicted
    mean_net() { awk '{ s += $2 - $3; k++ } END { print s / k }' "$tmp/$1.rows"; }
    mean_col() { awk -v c="$2" '{ s += $c; k++ } END { print s / k }' "$tmp/$1"; }
    echo "# savings, MiB per rank (mean over the ranks of steps peak - before model): measured against predicted"
    printf '%5s %-34s %10s %10s %8s\n' ranks saving measured predicted ratio
    for np in $ranks_list; do
      for mode in $modes; do
        a=r$np-false-$mode b=r$np-true-$mode
        [ -f "$tmp/$a.rows" ] && [ -f "$tmp/$b.rows" ] || continue
        awk -v np="$np" -v w="sharded optimizer, recompute $mode" -v m="$(mean_net "$a")" -v m2="$(mean_net "$b")" \
          -v o="$(mean_col "$a.optim" 1)" -v o2="$(mean_col "$b.optim" 1)" 'BEGIN {
          d = m - m2; p = (o - o2) / 1048576; printf "%5s %-34s %10.1f %10.1f %8.3f\n", np, w, d, p, d / p }'
      done
      for sh in false true; do
        a=r$np-$sh-none b=r$np-$sh-block
        [ -f "$tmp/$a.rows" ] && [ -f "$tmp/$b.rows" ] || continue
        awk -v np="$np" -v w="recompute block, shard $sh" -v m="$(mean_net "$a")" -v m2="$(mean_net "$b")" \
          -v c="$(mean_col "$a.rows" 5)" -v c2="$(mean_col "$b.rows" 5)" 'BEGIN {
          d = m - m2; p = c - c2; printf "%5s %-34s %10.1f %10.1f %8.3f\n", np, w, d, p, (p != 0 ? d / p : 0) }'
      done
    done
  fi
fi

if want speed; then
  if [ ! -d /usr/share/games/fortunes ]; then
    echo "-- speed: skipped: the fortunes text is not installed (Debian fortunes)"
    exit 0
  fi
  repeat=${SPEED_REPEAT:-3} ssteps=${SPEED_STEPS:-12} link=${SPEED_LINK:-1gbit}
  gpt="$src/inputs/gpt-fortunes.deck -D run.steps=$ssteps -D run.eval_every=0 -D data.test_samples=8
    -D run.print_every=1000 -D run.overwrite=true -D checkpoint.compression=none"
  srun() { # srun NAME HOSTS ARGS...: 2 ranks (on HOSTS, mpiexec's --host; "-": this node's) into $tmp/NAME
    name=$1 on=""
    [ "$2" = - ] || on="--host $2"
    shift 2
    # shellcheck disable=SC2086
    "$mpiexec" -n 2 $on "$train" $gpt -D "run.out_dir=$tmp/$name" "$@" >"$tmp/$name.txt" 2>&1 && return 0
    echo "bench_memory: the $name run failed:" >&2; tail -n 5 "$tmp/$name.txt" >&2; exit 1
  }
  step_ms() { h5vals "$tmp/$1/log.h5" /metrics/step_time | awk 'NR > 2 { print 1e3 * $1 }' | median; }
  # wire_mib NAME CATEGORY...: mean bytes a step of the categories, summed over the ranks (MiB)
  wire_mib() {
    name=$1; shift
    for c in "$@"; do h5vals "$tmp/$name/log.h5" "/metrics/$c" 2>/dev/null || true; done |
      awk -v s="$ssteps" '{ t += $1 } END { printf "%.2f", t / s / 1048576 }'
  }
  # speed WHERE HOSTS CONFIGS: REPEAT alternating rounds of each config (HOSTS as for srun), the table
  speed() {
    where=$1 hosts=$2; shift 2
    for r in $(seq "$repeat"); do
      for c in "$@"; do
        case $c in
          allreduce) a="-D parallel.node_shared=false" ;;
          sharded) a="-D parallel.node_shared=false -D parallel.shard_optimizer=true" ;;
          node-shared) a="-D parallel.node_shared=true" ;;
        esac
        # shellcheck disable=SC2086
        srun "$where-$c-$r" "$hosts" $a
        step_ms "$where-$c-$r" >>"$tmp/$where-$c.ms"
      done
    done
    base=$(median <"$tmp/$where-allreduce.ms")
    printf '%-12s %10s %10s %9s %13s %13s %6s\n' path "ms/step" range "x allred" "dp MiB/step" "across nodes" load
    for c in "$@"; do
      awk -v c="$c" -v t="$(median <"$tmp/$where-$c.ms")" -v b="$base" -v ld="$(load)" \
        -v lo="$(sort -g "$tmp/$where-$c.ms" | head -n 1)" -v hi="$(sort -g "$tmp/$where-$c.ms" | tail -n 1)" \
        -v w="$(wire_mib "$where-$c-1" bytes_dp bytes_dp_scatter bytes_dp_gather)" \
        -v x="$(wire_mib "$where-$c-1" internode_bytes_dp internode_bytes_dp_scatter internode_bytes_dp_gather)" 'BEGIN {
        printf "%-12s %10.1f %10s %8.3fx %13s %13s %6s\n", c, t, sprintf("%.0f-%.0f", lo, hi), t / b, w, x, ld }'
    done
  }
  echo "-- speed: gpt 4 x 256 (3.3M parameters, 13 MB of gradients), context 128, global batch 16, 2 ranks, $ssteps steps, median after 2, $repeat alternating rounds"
  places=${SPEED_WHERE:-node cluster}
  case " $places " in *" node "*)
    echo "# one node (shared memory between the ranks)"
    speed node - allreduce sharded node-shared ;;
  esac
  case " $places " in *" cluster "*) ;; *) exit 0 ;; esac
  cluster_up speed 2 1 "$link"
  echo "# 2 emulated nodes x 1 rank, links at $link (tools/cluster-local-up.sh)"
  speed cluster "$CLUSTER_NAME-n0,$CLUSTER_NAME-n1" allreduce sharded
  echo "# dp MiB/step: the dp, dp_scatter and dp_gather traffic of a step summed over the ranks (the log's bytes_*)"
fi
