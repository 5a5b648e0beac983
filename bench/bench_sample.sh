#!/bin/sh
# Generation speed (doc/generate.md): surge-sample's new tokens per second with the key/value cache
# against recomputing the whole context at every token (--no-cache, the baseline), at batch 1 and
# 8, for the 4-layer byte GPT (inputs/gpt-fortunes.deck) and GPT-2 124M's shapes
# (inputs/gpt2-124m.deck, GPT-2's 50257-token vocabulary), both freshly initialised, on one core
# (taskset -c ${BENCH_CORE:-0}) and 1 BLAS thread; every sample starts from one token and adds
# BENCH_SAMPLE_TOKENS (default 64); the best of BENCH_REPEAT runs (default 3: other work on the
# machine only ever slows a run down). The "same" column: both greedy samples agree id for id.
# Run from the build directory (make bench BENCH=sample).
set -eu
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
n=${BENCH_SAMPLE_TOKENS:-64}
repeat=${BENCH_REPEAT:-3}
core=${BENCH_CORE:-0}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/surge-bench-sample.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pin=""
command -v taskset >/dev/null 2>&1 && pin="taskset -c $core"
tps() { sed -n 's/.*: \([0-9.]*\) tokens\/s.*/\1/p' "$@" | sort -g | tail -1; } # the best of the runs' files
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), 1 core, 1 thread; $n new tokens per sample"
printf '%-10s %5s %14s %14s %8s %5s\n' model batch "cache tok/s" "no-cache tok/s" speedup same
for model in fortunes gpt2-124m; do
  case $model in
    fortunes) set -- --deck "$src/inputs/gpt-fortunes.deck" ;;
    gpt2-124m) set -- --deck "$src/inputs/gpt2-124m.deck" -D data.tokenizer= -D data.vocab_size=50257 ;;
  esac
  for b in 1 8; do
    for e in cache full; do
      flag=""
      [ $e = full ] && flag=--no-cache
      r=0
      while [ $r -lt "$repeat" ]; do
        $pin ./surge-sample "$@" --init 1 --ids 10 --samples $b --tokens "$n" --greedy --print-ids --threads 1 $flag \
          >"$tmp/$e.out" 2>"$tmp/$e.$r.err"
        r=$((r + 1))
      done
    done
    c=$(tps "$tmp"/cache.*.err)
    f=$(tps "$tmp"/full.*.err)
    same=no
    cmp -s "$tmp/cache.out" "$tmp/full.out" && same=yes
    rm -f "$tmp"/*.err
    printf '%-10s %5d %14s %14s %7.1fx %5s\n' $model $b "$c" "$f" "$(echo "$c $f" | awk '{ print $1 / $2 }')" $same
  done
done
