#!/bin/sh
# Full-length training results (not part of make check): trains every example deck in inputs/ as
# shipped and checks its final metric against the expectation doc/results.md states for it.
#   tools/full-results.sh [NAME ...]     (default: all; about 2 hours on 2 cores)
#   tools/full-results.sh --list         the decks, their ranks and targets
# NAMEs: demo mlp vgg vgg-bn resnet resnet-bn resnet18 vgg16-bn inception gpt gpt-bpe gpt-3d sweep gpt2-124m.
# A deck that would outlast a session on 2 cores runs with its batch or context shrunk (never its
# layout or steps), as the table says; gpt2-124m is a GPU deck and is skipped without one.
# Results go to runs/full-*/ and the summary to stdout, one line per check:
#   PASS|FAIL|SKIP NAME: what was measured (target), wall time
# Exit status 0 when nothing failed (skips do not fail).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${SURGE_BUILD:-$top/_build}
mpiexec=${MPIEXEC:-mpiexec}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# NAME|DECK|RANKS|METRIC|OP TARGET|-D overrides (the shrink, where one is needed)
# METRIC: acc (final test accuracy, %) or loss (final validation loss); OP: >= or <=.
table='demo|demo.deck|1|acc|>= 83|
mlp|mlp-fmnist.deck|1|acc|>= 84|
vgg|vgg-mini-fmnist.deck|1|acc|>= 82|
vgg-bn|vgg-mini-bn-fmnist.deck|1|acc|>= 90|
resnet|resnet-mini-fmnist.deck|1|acc|>= 35|
resnet-bn|resnet-mini-bn-fmnist.deck|2|acc|>= 90|
resnet18|resnet18-fmnist.deck|1|acc|>= 91|
vgg16-bn|vgg16-bn-fmnist.deck|1|acc|>= 89|
inception|inception-v3-fmnist.deck|1|acc|>= 90|
gpt|gpt-fortunes.deck|1|loss|<= 2.65|
gpt-bpe|gpt-bpe.deck|1|loss|<= 6.2|
gpt-3d|gpt-3d.deck|8|loss|<= 2.9|-D model.gpt_context=64 -D train.global_batch=16'
# lr-sweep.deck: each variant is a check of its own (sweep-vI), lr 1 expected to stay at chance
sweep_targets='>= 80|>= 80|>= 82|>= 82|<= 15|<= 15'

if [ "${1:-}" = --list ]; then
  echo "$table" | awk -F'|' '{ printf "%-10s inputs/%-26s %d rank(s)  %-4s %s  %s\n", $1, $2, $3, $4, $5, $6 }'
  echo "$sweep_targets" | tr '|' '\n' | awk '{ printf "sweep-v%-4d inputs/lr-sweep.deck --variant %d  acc %s\n", NR-1, NR-1, $0 }'
  echo "gpt2-124m  inputs/gpt2-124m.deck      GPU deck (18865 steps of 524288 tokens): skipped on a CPU"
  exit 0
fi

"$top/tools/build.sh" >/dev/null
cd "$top"
which=${*:-demo mlp vgg vgg-bn resnet resnet-bn resnet18 vgg16-bn inception gpt gpt-bpe gpt-3d sweep gpt2-124m}
summary=""
failed=0

# metric_of LOG acc|loss: the number of the run's final metric line, or nothing
metric_of() {
  case $2 in
    acc) sed -n 's/^final test accuracy \([0-9.]*\)%$/\1/p' "$1" | tail -n 1 ;;
    loss) sed -n 's/^final validation loss \([0-9.]*\) .*/\1/p' "$1" | tail -n 1 ;;
  esac
}

# verdict NAME VALUE OP TARGET SECONDS NOTE: one summary line
verdict() {
  if [ -z "$2" ]; then
    ok=FAIL
  else
    ok=$(awk -v v="$2" -v op="$3" -v t="$4" 'BEGIN { print ((op == ">=" && v >= t) || (op == "<=" && v <= t)) ? "PASS" : "FAIL" }')
  fi
  [ $ok = PASS ] || failed=$((failed + 1))
  summary="$summary$ok $1: ${2:-no final metric (the run failed)} (target $3 $4), $5 s wall$6\n"
}

# train NAME RANKS OUT_DIR DECK ARGS...: the run's output in $log, its wall seconds in $secs
train() {
  n=$1 np=$2 out=$3 deck=$4
  shift 4
  log="runs/full-$n.txt"
  mkdir -p runs
  start=$(date +%s)
  if [ "$np" = 1 ]; then
    "$build/surge-train" "inputs/$deck" -D "run.out_dir=$out" -D run.overwrite=true "$@" >"$log" 2>&1 || true
  else
    "$mpiexec" -n "$np" "$build/surge-train" "inputs/$deck" -D "run.out_dir=$out" -D run.overwrite=true "$@" \
      >"$log" 2>&1 || true
  fi
  secs=$(($(date +%s) - start))
  grep -E '^(eval step|final|done:|surge: error)' "$log" || true
}

for m in $which; do
  case $m in
    sweep)
      for i in 0 1 2 3 4 5; do
        target=$(echo "$sweep_targets" | cut -d'|' -f$((i + 1)))
        echo "== sweep-v$i: inputs/lr-sweep.deck --variant $i"
        train "sweep-v$i" 1 'runs/full-sweep/${run.name}' lr-sweep.deck --variant "$i"
        verdict "sweep-v$i" "$(metric_of "$log" acc)" "${target% *}" "${target#* }" "$secs" ""
      done
      continue ;;
    gpt2-124m)
      summary="${summary}SKIP gpt2-124m: a GPU deck (18865 steps of 524288 tokens; doc/gpu.md), not run on a CPU\n"
      continue ;;
  esac
  row=$(echo "$table" | awk -F'|' -v n="$m" '$1 == n')
  [ -n "$row" ] || { echo "full-results: unknown deck name '$m' (see --list)" >&2; exit 2; }
  deck=$(echo "$row" | cut -d'|' -f2)
  np=$(echo "$row" | cut -d'|' -f3)
  kind=$(echo "$row" | cut -d'|' -f4)
  target=$(echo "$row" | cut -d'|' -f5)
  shrink=$(echo "$row" | cut -d'|' -f6)
  if [ "$m" = gpt-bpe ] && [ ! -d "$HOME/.cache/surge/linux-doc/shards-4096" ]; then
    echo "== building the corpus gpt-bpe reads (tools/make-corpus.sh)"
    "$top/tools/make-corpus.sh" >/dev/null
  fi
  echo "== $m: inputs/$deck on $np rank(s)${shrink:+, shrunk: $shrink}"
  # shellcheck disable=SC2086
  train "$m" "$np" "runs/full-$m" "$deck" $shrink
  verdict "$m" "$(metric_of "$log" "$kind")" "${target% *}" "${target#* }" "$secs" "${shrink:+ (shrunk: $shrink)}"
done
printf '\n== full-length results (%s)\n%b' "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$summary"
[ "$failed" = 0 ]
