#!/bin/sh
# Generation speed (doc/generate.md): surge-sample's new tokens per second with the key/value cache
# against recomputing the whole context at every token (--no-cache, the baseline), at batch 1 and
# 8, for the 4-layer byte GPT (inputs/gpt-fortunes.deck) and GPT-2 124M's shapes
# (inputs/gpt2-124m.deck, GPT-2's 50257-token vocabulary), both freshly initialised, on one core
# (taskset -c ${BENCH_CORE:-0}) and 1 BLAS thread; every sample starts from one token and adds
# BENCH_SAMPLE_TOKENS (default 64); the best of BENCH_REPEAT runs (default 3: other work on the
# machine only ever slows a run down). The "same" column: both greedy samples agree id for id.
# A second table: the cache in [backend] precision = bf16 against fp32 (the baseline), where the cpu
# can run bf16: its products of a few rows read a bfloat16 copy of the weights (model_weights16), and the
# cache is held in bfloat16 (half fp32's size, both printed). A third:
# bf16 on one thread against a team of min(nproc, 4) (--threads; the same ids).
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
model_args() { # model_args MODEL: surge-sample's arguments for it, in $@ of the caller (set -- ...)
  case $1 in
    fortunes) echo "--deck $src/inputs/gpt-fortunes.deck" ;;
    gpt2-124m) echo "--deck $src/inputs/gpt2-124m.deck -D data.tokenizer= -D data.vocab_size=50257" ;;
  esac
}
runs() { # runs NAME BATCH ARGS...: BENCH_REPEAT runs into $tmp/NAME.out and $tmp/NAME.R.err, on $th threads
  name=$1 b=$2 on=$pin
  shift 2
  [ "${th:-1}" -gt 1 ] && on="" # a team of threads needs the cores
  r=0
  while [ $r -lt "$repeat" ]; do
    $on ./surge-sample "$@" --init 1 --ids 10 --samples "$b" --tokens "$n" --greedy --print-ids --threads "${th:-1}" \
      >"$tmp/$name.out" 2>"$tmp/$name.$r.err"
    r=$((r + 1))
  done
}
printf '%-10s %5s %14s %14s %8s %5s\n' model batch "cache tok/s" "no-cache tok/s" speedup same
for model in fortunes gpt2-124m; do
  # shellcheck disable=SC2046 # the deck's path and -D settings, split on purpose (no spaces in them)
  set -- $(model_args $model)
  for b in 1 8; do
    runs cache "$b" "$@"
    runs full "$b" "$@" --no-cache
    c=$(tps "$tmp"/cache.*.err)
    f=$(tps "$tmp"/full.*.err)
    same=no
    cmp -s "$tmp/cache.out" "$tmp/full.out" && same=yes
    rm -f "$tmp"/*.err
    printf '%-10s %5d %14s %14s %7.1fx %5s\n' $model $b "$c" "$f" "$(echo "$c $f" | awk '{ print $1 / $2 }')" $same
  done
done
if ./surge-sample --deck "$src/inputs/gpt-fortunes.deck" --init 1 --ids 10 --tokens 1 -D backend.precision=bf16 \
  >/dev/null 2>"$tmp/bf16.err"; then
  echo
  printf '%-10s %5s %14s %14s %8s  %s\n' model batch "fp32 tok/s" "bf16 tok/s" bf16/fp32 \
    "(the cache; fp32's cache size, bf16's line)"
  for model in fortunes gpt2-124m; do
    # shellcheck disable=SC2046
    set -- $(model_args $model)
    for b in 1 8; do
      runs fp32 "$b" "$@" -D backend.precision=fp32
      runs bf16 "$b" "$@" -D backend.precision=bf16
      f=$(tps "$tmp"/fp32.*.err)
      h=$(tps "$tmp"/bf16.*.err)
      how=$(sed -n 's/.*tokens\/s (\(.*\))$/\1/p' "$tmp/bf16.0.err")
      size=$(sed -n 's/.*(key\/value cache of \([0-9.]* [KM]iB\).*/\1/p' "$tmp/fp32.0.err")
      rm -f "$tmp"/*.err
      printf '%-10s %5d %14s %14s %7.2fx  %s\n' $model $b "$f" "$h" "$(echo "$h $f" | awk '{ print $1 / $2 }')" \
        "$size; $how"
    done
  done
  team=$(nproc)
  [ "$team" -gt 4 ] && team=4
  if [ "$team" -gt 1 ]; then
    echo
    printf '%-10s %5s %14s %14s %8s %5s  %s\n' model batch "1 thread" "$team threads" ratio same \
      "(bf16, the cache; 1 thread pinned, $team not)"
    # shellcheck disable=SC2046
    set -- $(model_args gpt2-124m) -D backend.precision=bf16
    for b in 1 8; do
      th=1
      runs one "$b" "$@"
      th=$team
      runs team "$b" "$@"
      th=1
      o=$(tps "$tmp"/one.*.err)
      m=$(tps "$tmp"/team.*.err)
      same=no
      cmp -s "$tmp/one.out" "$tmp/team.out" && same=yes
      rm -f "$tmp"/*.err
      printf '%-10s %5d %14s %14s %7.2fx %5s\n' gpt2-124m $b "$o" "$m" "$(echo "$m $o" | awk '{ print $1 / $2 }')" $same
    done
  fi
else
  echo "bf16: the cpu backend cannot run it here: $(tail -1 "$tmp/bf16.err")"
fi
