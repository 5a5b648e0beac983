#!/bin/sh
# make bench BENCH=bf16: the cpu backend's [backend] precision = bf16 (products of bfloat16
# operands, doc/gpu.md) against fp32 in one invocation: per model (BENCH_BF16_MODELS, default gpt
# mlp vgg-mini resnet-mini), BENCH_BF16_ROUNDS (default 5) rounds of alternating bench_models --rate
# runs on 1 rank; the median samples/s of each and bf16 / fp32. The CPU's bfloat16 instructions
# decide the gain (AVX-512 BF16: bfloat16 pairs; without: the operands rounded, no faster). Then
# generation (surge-sample with the key/value cache, the fortunes gpt freshly initialised, greedy,
# BENCH_BF16_TOKENS new tokens, default 120) at 1 and 16 samples, fp32 and bf16 alternating, the
# median tokens/s of the rounds. Last, where the machine has 2 cores or more: bf16 on 1 thread against
# a team of min(nproc, 4) ([backend] threads: the own kernels split their products), per model. Last, bf16
# with [backend] activations = float32 against auto: the gpt's rate (the same rounds), and at GPT-2 124M's
# shape (context BENCH_BF16_CONTEXT, default 128, batch 8) the run's activation bytes, peak and step time.
# Called by bench/run-bench.sh from the build directory with MPIEXEC set.
set -eu
mpiexec=${MPIEXEC:-mpiexec}
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
models=${BENCH_BF16_MODELS:-gpt mlp vgg-mini resnet-mini}
rounds=${BENCH_BF16_ROUNDS:-5}
case $rounds in
  '' | *[!0-9]* | 0) echo "bench_bf16.sh: BENCH_BF16_ROUNDS=$rounds: expected a positive count" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/bench/lib.sh"
form="operands rounded, float multiply-adds"
grep -q '\bavx512_bf16\b' /proc/cpuinfo && grep -q '\bavx512bw\b' /proc/cpuinfo && form="bfloat16 pairs (AVX-512 BF16)"
echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores; bf16 products here: $form"
echo "# 1 rank, 1 BLAS thread, synthetic data; medians of $rounds alternating rounds, samples/s;" \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
# row LABEL RATE: `rounds` alternating rounds of "RATE fp32" and "RATE bf16" (each prints one rate),
# then the label, the two medians and bf16 / fp32 as one table row
# (row LABEL RATE A B: the same with RATE's arguments A and B, default fp32 and bf16)
row() {
  a=${3:-fp32} b2=${4:-bf16}
  : >"$tmp/a"
  : >"$tmp/b"
  i=0
  while [ $i -lt "$rounds" ]; do
    "$2" "$a" >>"$tmp/a"
    "$2" "$b2" >>"$tmp/b"
    i=$((i + 1))
  done
  awk -v m="$1" -v f="$(median <"$tmp/a")" -v b="$(median <"$tmp/b")" \
    'BEGIN { printf "%-12s %10.1f %10.1f %9.2fx\n", m, f, b, b / f }'
}
model_rate() { BENCH_PRECISION=$1 "$mpiexec" -n 1 ./bench/bench_models --rate "$m"; }
threads_rate() {
  BENCH_PRECISION=bf16 BENCH_THREADS=$1 "$mpiexec" -n 1 --bind-to none ./bench/bench_models --rate "$m"
}
sample_rate() {
  ./surge-sample --deck "$src/inputs/gpt-fortunes.deck" --init 1 --ids 10 --samples "$b" --tokens "$tokens" --greedy \
    --print-ids --threads 1 -D backend.precision="$1" 2>&1 >/dev/null | sed -n 's/.*: \([0-9.]*\) tokens\/s.*/\1/p'
}
printf '%-12s %10s %10s %10s\n' model fp32 bf16 bf16/fp32
for m in $models; do row "$m" model_rate; done
tokens=${BENCH_BF16_TOKENS:-120}
echo "# generation: surge-sample, fortunes gpt (--init 1), $tokens new tokens, key/value cache; median tokens/s"
printf '%-12s %10s %10s %10s\n' samples fp32 bf16 bf16/fp32
for b in 1 16; do row "$b" sample_rate; done
team=$(nproc)
[ "$team" -gt 4 ] && team=4
if [ "$team" -gt 1 ]; then
  echo "# bf16 on 1 thread against $team ([backend] threads; the rank not bound to a core); median samples/s"
  printf '%-12s %10s %10s %10s\n' model "1 thread" "$team threads" ratio
  for m in $models; do row "$m" threads_rate 1 "$team"; done
fi
# activations that only products and GELU read held in bfloat16 ([backend] activations = auto, doc/design.md)
# against all in float32: the gpt's rate, then GPT-2 124M's shape, what the run counts and its peak
echo "# bf16 with activations = float32 against auto (held in bfloat16 where only products and GELU read them);" \
  "median samples/s"
printf '%-12s %10s %10s %10s\n' model float32 auto auto/float32
act_rate() { BENCH_PRECISION=bf16 BENCH_ACTIVATIONS=$1 "$mpiexec" -n 1 ./bench/bench_models --rate "$m"; }
m=gpt
row gpt act_rate float32 auto
ctx=${BENCH_BF16_CONTEXT:-128}
echo "# GPT-2 124M's blocks (12 x 768, 12 heads; the fortunes text's bytes, 256 ids), context $ctx, batch 8," \
  "4 AdamW steps on the fortunes text in bf16: the run's activations and peak (MiB), its ms/step (the first" \
  "step included)"
printf '%-12s %6s %12s %10s %10s\n' activations held activations peak ms/step
for a in float32 auto; do
  "$mpiexec" -n 1 ./surge-train "$src/inputs/gpt-fortunes.deck" -D model.gpt_layers=12 -D model.gpt_width=768 \
    -D model.gpt_heads=12 -D model.gpt_context="$ctx" -D train.global_batch=8 -D run.steps=4 \
    -D run.eval_every=0 -D data.test_samples=8 -D checkpoint.compression=none -D backend.precision=bf16 \
    -D backend.activations=$a -D "run.out_dir=$tmp/act-$a" >"$tmp/act-$a.txt" 2>&1 ||
    { echo "surge-train with activations = $a failed:" >&2; tail -3 "$tmp/act-$a.txt" >&2; exit 1; }
  awk -v a=$a '/^memory by rank/ {
      for (f = 1; f < NF; f++) { if ($f == "activations") act = $(f + 1); if ($f == "peak") pk = $(f + 1) } }
    /^activations held in bfloat16/ { held = $NF }
    /done: / { sub(/.*\(/, ""); ms = $1 }
    END { printf "%-12s %6d %12.1f %10.1f %10.1f\n", a, held, act / 1048576, pk / 1048576, ms }' "$tmp/act-$a.txt"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
