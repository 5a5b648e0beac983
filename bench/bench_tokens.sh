#!/bin/sh
# Tokenized text (doc/data.md), measured against baselines in the same invocation:
#  1. surge-tokenize train and encode (1 and 2 ranks) on the Linux documentation corpus
#     (tools/make-corpus.sh), beside Hugging Face's tokenizers on 1 and 2 threads when the Python
#     package is there (pip install tokenizers; never needed by make check);
#  2. the data phase's share of a step of inputs/gpt2-124m.deck, batch shrunk for a CPU.
# Run from the build directory (make bench BENCH=tokens). CORPUS (default ~/.cache/surge/linux-doc)
# must hold text/ (tools/make-corpus.sh makes it); BENCH_VOCAB (default 4096).
set -eu
src=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
mpiexec=${MPIEXEC:-mpiexec}
corpus=${CORPUS:-$HOME/.cache/surge/linux-doc}
vocab=${BENCH_VOCAB:-4096}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/surge-bench-tok.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$src/bench/lib.sh"
[ -d "$corpus/text" ] || { echo "bench_tokens: no $corpus/text (run tools/make-corpus.sh)"; exit 0; }
mbs() { sed -n "s/.*(\([0-9.]*\) MB\/s).*/\1/p" "$1"; }

for np in 1 2; do
  mkdir "$tmp/tok$np"
  "$mpiexec" -n $np ./surge-tokenize train --out "$tmp/tok$np" --vocab-size "$vocab" "$corpus/text" >"$tmp/train$np.txt"
  eval "surge_train$np=\$(mbs \"$tmp/train$np.txt\")"
done
cmp -s "$tmp/tok1/merges.txt" "$tmp/tok2/merges.txt" || echo "bench_tokens: the vocabularies of 1 and 2 ranks differ!"
mv "$tmp/tok1" "$tmp/tok"
for np in 1 2; do
  "$mpiexec" -n $np ./surge-tokenize encode --tokenizer "$tmp/tok" --out "$tmp/s$np" "$corpus/text" >"$tmp/enc$np.txt"
  eval "surge_enc$np=\$(mbs \"$tmp/enc$np.txt\")"
done
cmp -s "$tmp/s1_train_000000.bin" "$tmp/s2_train_000000.bin" || echo "bench_tokens: the shards of 1 and 2 ranks differ!"
hf1=- hf2=- hfe1=- hfe2=-
if python3 -c 'import tokenizers' 2>/dev/null; then
  for th in 1 2; do
    RAYON_NUM_THREADS=$th python3 "$src/bench/tok_reference.py" "$corpus/text" "$vocab" >"$tmp/hf$th.txt"
    eval "hf$th=\$(sed -n 's/^hf-train //p' \"$tmp/hf$th.txt\")"
    eval "hfe$th=\$(sed -n 's/^hf-encode \([0-9.]*\).*/\1/p' \"$tmp/hf$th.txt\")"
  done
fi
bytes=$(sed -n 's/^train: [0-9]* documents, \([0-9]*\) bytes.*/\1/p' "$tmp/train1.txt")
echo "corpus: $corpus/text, $bytes bytes; vocabulary $vocab (MB/s of text, wall time, reading included)"
printf '%-8s %14s %14s %14s %14s\n' step "surge 1 rank" "surge 2 ranks" "hf 1 thread" "hf 2 threads"
printf '%-8s %14s %14s %14s %14s\n' train "$surge_train1" "$surge_train2" "$hf1" "$hf2"
printf '%-8s %14s %14s %14s %14s\n' encode "$surge_enc1" "$surge_enc2" "$hfe1" "$hfe2"

# 2. gpt2-124m's data phase against its step (batch 2, 3 steps; the first is warm-up)
if [ -d "$corpus/shards-50257" ]; then
  ./surge-train "$src/inputs/gpt2-124m.deck" -D train.global_batch=${BENCH_BATCH:-2} -D run.steps=3 -D run.eval_every=0 \
    -D data.test_samples=2 -D checkpoint.every=0 -D run.overwrite=true -D "run.out_dir=$tmp/g124" >"$tmp/g124.txt" 2>&1
  data=$(h5vals "$tmp/g124/log.h5" /ranks/phase_data | tail -n 2 | median)
  step=$(h5vals "$tmp/g124/log.h5" /metrics/step_time | tail -n 2 | median)
  awk -v d="$data" -v s="$step" 'BEGIN { printf "gpt2-124m, batch 2 of 1024 tokens on 1 rank: step %.3f s, data %.6f s = %.4f%% of the step\n", s, d, 100 * d / s }'
else
  echo "gpt2-124m: no $corpus/shards-50257 (tools/make-corpus.sh $corpus 50257)"
fi
