#!/bin/sh
# Optimus-CC's compression in 3d runs (doc/compression.md), measured in one invocation on the gpt of
# inputs/gpt-fortunes.deck (4 blocks of width 256, context 128, global batch 16) on tp 2 x pp 2 x
# dp 2 with 4 micro-batches, against the exact run of the same layout. Variants:
#   exact      no compression
#   cb         compressed back-propagation, rank 16, LEP, epilogue only
#   cb+fe      and fused embedding synchronisation
#   cb+fe+sc   and PowerSGD of rank 32 on the data-parallel gradients of stage 0 (sc_stages = pp - 1,
#              the last stage exact, as the paper's K = 3 of 4)
#   cb+fe+sc2  the same on both stages (speed only)
# Three parts (COMPRESS_PARTS, default all):
#   traffic  5 steps of each variant: bytes per step of every category against the formulas
#            (doc/compression.md) and the compression ratio of each compressed category, the
#            compressor's time per step
#   quality  COMPRESS_STEPS (default 300) steps of exact, cb, cb+fe, cb+fe+sc on the fortunes text:
#            validation loss every 100 steps, each against the exact twin (same seed, same data);
#            the loss curves as SVG (surge-report --plot) into COMPRESS_PLOTS (default: not kept)
#   speed    on the emulated cluster (doc/cluster.md), 4 nodes x 2 ranks (a tensor-parallel pair per
#            node; pipeline and data-parallel groups across nodes), links at each of COMPRESS_RATES
#            (default 1gbit 100mbit): the median step time of every variant (steps 3..10,
#            COMPRESS_REPEATS runs alternating, default 3) against the exact run's, and the
#            compressor's time per step. Needs root and network namespaces (skipped elsewhere).
# Called by bench/run-bench.sh with SURGE_TRAIN and MPIEXEC set.
set -eu
train=${SURGE_TRAIN:-./surge-train}
report=${SURGE_REPORT:-$(dirname "$train")/surge-report}
mpiexec=${MPIEXEC:-mpiexec}
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
parts=${COMPRESS_PARTS:-traffic quality speed}
steps=${COMPRESS_STEPS:-300}
repeats=${COMPRESS_REPEATS:-3}
rates=${COMPRESS_RATES:-1gbit 100mbit}
plots=${COMPRESS_PLOTS:-}
case $train in /*) ;; *) train=$(pwd)/$train ;; esac
case $report in /*) ;; *) report=$(pwd)/$report ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/bench/lib.sh"
want() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
load() { awk '{ print $1 }' /proc/loadavg; }

grid="-D parallel.mode=3d -D parallel.tp=2 -D parallel.pp=2 -D parallel.dp=2 -D train.micro_batches=4"
cb="-D compress.cb=true -D compress.cb_rank=16"
fe="-D compress.fe=true"
sc="-D compress.sc_stages=1 -D compress.dp_rank=32"
flags() { # the -D settings of a variant
  case $1 in
    exact) echo "" ;;
    cb) echo "$cb" ;;
    cb+fe) echo "$cb $fe" ;;
    cb+fe+sc) echo "$cb $fe $sc" ;;
    cb+fe+sc2) echo "$cb $fe -D compress.sc_stages=2 -D compress.dp_rank=32" ;;
  esac
}
# run OUT VARIANT ARGS...: a run of the deck into $tmp/OUT
run() {
  out=$1; v=$2; shift 2
  # shellcheck disable=SC2046,SC2086
  "$mpiexec" -n 8 "$train" "$src/inputs/gpt-fortunes.deck" $grid $(flags "$v") -D "run.out_dir=$tmp/$out" \
    -D run.overwrite=true -D run.print_every=1000 "$@" >"$tmp/$out.txt" 2>&1 ||
    { echo "bench_compress: the $v run failed:" >&2; tail -5 "$tmp/$out.txt" >&2; exit 1; }
}
# per_step OUT DATASET: the dataset's mean per step over the run
per_step() { h5vals "$tmp/$1/log.h5" "$2" | awk '{ s += $1; n++ } END { printf "%.0f", n ? s / n : 0 }'; }

if want traffic; then
  echo "-- traffic per step (bytes handed to the comm layer, summed over the 8 ranks; 5 steps), load $(load)"
  for v in exact cb cb+fe cb+fe+sc; do run "t-$v" "$v" -D run.steps=5 -D run.eval_every=0 -D data.test_samples=16; done
  blocks0=$(h5vals "$tmp/t-exact/log.h5" /pipeline/stages/blocks | head -n 1)
  blocks1=$(h5vals "$tmp/t-exact/log.h5" /pipeline/stages/blocks | sed -n 2p)
  printf '%-10s %-28s %14s %14s %8s\n' variant category measured formula "x form"
  for v in exact cb cb+fe cb+fe+sc; do
    o="t-$v"
    case $v in exact) c=0 ;; *) c=1 ;; esac                  # compressed sends per pipeline: PP (PP - 1) / 2
    case $v in *fe*) f=1 ;; *) f=0 ;; esac
    case $v in *sc*) k=1 ;; *) k=0 ;; esac                     # compressed stages
    # the formulas (doc/compression.md): C 256, T 128, V 256, tp 2, pp 2, dp 2, M 4, n = 2 x 128 tokens
    awk -v v="$v" -v c="$c" -v f="$f" -v k="$k" -v b0="$blocks0" -v b1="$blocks1" \
      -v ag="$(per_step "$o" /metrics/bytes_activation_grad)" \
      -v agc="$(per_step "$o" /metrics/bytes_activation_grad_compressed)" \
      -v agr="$([ "$v" = exact ] && echo 0 || per_step "$o" /compress/activation_grad_raw_bytes)" \
      -v dpc="$(per_step "$o" /metrics/bytes_dp_compressed)" \
      -v dpr="$([ "$v" = exact ] && echo 0 || per_step "$o" /compress/dp_raw_bytes)" \
      -v emb="$(per_step "$o" /metrics/bytes_embedding)" -v dp="$(per_step "$o" /metrics/bytes_dp)" \
      -v dpx="$(per_step t-exact /metrics/bytes_dp)" 'BEGIN {
      C = 256; T = 128; V = 256; TP = 2; PP = 2; DP = 2; M = 4; n = 2 * T; rcb = 16; R = 32
      pipes = TP * DP; pp_sends = (PP - 1) * M
      np = n / TP # scatter-gather ([parallel] scatter_gather, the default): each tp rank sends its part of the rows
      f_ag = (pp_sends - c) * np * C * 4 * pipes; f_agc = c * (np + C) * rcb * 4 * pipes; f_agr = c * np * C * 4 * pipes
      f_emb = 2 * TP * DP * (V / TP) * C * 4
      # per tensor-parallel rank of a block: qkv (3C/TP, C), proj (C, C/TP), fc (4C/TP, C), fcproj (C, 4C/TP)
      nm[1] = 3 * C / TP; mm[1] = C; nm[2] = C; mm[2] = C / TP; nm[3] = 4 * C / TP; mm[3] = C; nm[4] = C; mm[4] = 4 * C / TP
      pay = 0; raw = 0
      for (i = 1; i <= 4; i++) { r = nm[i] < mm[i] ? nm[i] : mm[i]; if (r > R) r = R; pay += (nm[i] + mm[i]) * r; raw += nm[i] * mm[i] }
      # stage 0: its blocks on each of TP x DP ranks, the position table (T, C) on tp rank 0 of each replica,
      # the word embedding (V/TP, C) unless fused
      r = T < C ? T : C; if (r > R) r = R; wr = (V / TP < C ? V / TP : C); if (wr > R) wr = R
      f_dpc = k * 4 * (TP * DP * (b0 * pay + (1 - f) * (V / TP + C) * wr) + DP * (T + C) * r)
      f_dpr = k * 4 * (TP * DP * (b0 * raw + (1 - f) * V / TP * C) + DP * T * C)
      # FE takes the word embedding out of the data-parallel sums of both stages
      f_dp = dpx - f * 2 * TP * DP * (V / TP) * C * 4 - f_dpr
      row("activation_grad", ag, f_ag); row("activation_grad_compressed", agc, f_agc)
      row("  as exact", agr, f_agr)
      if (agc > 0) printf "%-10s %-28s %14.1f\n", v, "  ratio", agr / agc
      row("dp", dp, f_dp); row("dp_compressed", dpc, f_dpc); row("  as exact", dpr, f_dpr)
      if (dpc > 0) printf "%-10s %-28s %14.1f\n", v, "  ratio", dpr / dpc
      row("embedding", emb, f_emb)
    }
    function row(name, got, want) {
      x = want > 0 ? sprintf("%.4f", got / want) : got == 0 ? "-" : "inf"
      printf "%-10s %-28s %14.0f %14.0f %8s\n", v, name, got, want, x
    }'
    s=$(h5vals "$tmp/$o/log.h5" /compress/compress_seconds 2>/dev/null | median || echo nan)
    [ "$v" = exact ] || printf '%-10s %-28s %14.2f\n' "$v" "compressor ms per step" "$(awk -v s="$s" 'BEGIN { print 1e3 * s }')"
  done
  echo "# stage 0 holds $blocks0 blocks, stage 1 $blocks1; dp's formula: the exact run's dp bytes less the word embedding (fe) and the compressed matrices"
fi

if want quality; then
  echo "-- quality: $steps steps on the fortunes text, validation loss every 100 steps against the exact twin, load $(load)"
  for v in exact cb cb+fe cb+fe+sc; do run "q-$v" "$v" -D run.steps="$steps" -D run.eval_every=100; done
  printf '%-10s' variant
  h5vals "$tmp/q-exact/log.h5" /eval/step | awk '{ printf " %10s", "step " $1 } END { printf " %10s\n", "x exact" }'
  for v in exact cb cb+fe cb+fe+sc; do
    h5vals "$tmp/q-$v/log.h5" /eval/loss >"$tmp/q-$v.eval"
    printf '%-10s' "$v"
    paste "$tmp/q-$v.eval" "$tmp/q-exact.eval" | awk '{ printf " %10.4f", $1; last = $1 / $2 } END { printf " %10.4f\n", last }'
  done
  if [ -n "$plots" ]; then
    "$report" "$tmp/q-exact/log.h5" "$tmp/q-cb/log.h5" "$tmp/q-cb+fe/log.h5" "$tmp/q-cb+fe+sc/log.h5" --plot "$plots" \
      >"$tmp/plot.txt" 2>&1 && echo "# loss curves: $plots/loss.svg"
  fi
fi

if want speed; then
  up="$src/tools/cluster-local-up.sh"
  cluster_up speed 4 2 1gbit
  variants="exact cb cb+fe cb+fe+sc cb+fe+sc2"
  for rate in $rates; do
    "$up" --link "$rate" >/dev/null
    echo "-- speed on 4 nodes x 2 ranks (tp pairs in a node), links at $rate: steps 3..10, $repeats runs alternating, load $(load)"
    for i in $(seq "$repeats"); do
      for v in $variants; do
        run "s-$v-$i" "$v" -D run.steps=10 -D run.eval_every=0 -D data.test_samples=16
        h5vals "$tmp/s-$v-$i/log.h5" /metrics/step_time | awk 'NR > 2' | median >>"$tmp/s-$rate-$v"
        [ "$v" = exact ] || h5vals "$tmp/s-$v-$i/log.h5" /compress/compress_seconds | awk 'NR > 2' | median >>"$tmp/c-$rate-$v"
      done
    done
    base=$(median <"$tmp/s-$rate-exact")
    printf '%-10s %12s %10s %16s\n' variant "step ms" "x exact" "compressor ms"
    for v in $variants; do
      c=$([ "$v" = exact ] && echo 0 || median <"$tmp/c-$rate-$v")
      awk -v v="$v" -v t="$(median <"$tmp/s-$rate-$v")" -v b="$base" -v c="$c" 'BEGIN {
        printf "%-10s %12.1f %10.3f %16.2f\n", v, 1e3 * t, t / b, 1e3 * c }'
    done
    echo "# load average after: $(load)"
  done
fi
