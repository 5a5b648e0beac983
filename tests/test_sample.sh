#!/bin/sh
# surge-sample (doc/generate.md) on a small byte-level gpt trained here: greedy generation with the
# key/value cache = recomputing the whole context at every token, token for token (one prompt and a
# batch of three of different lengths); a fixed seed gives the same samples on 1 and 2 ranks, and
# another seed other ones; a checkpoint samples like the model file of the same step; text prompts
# go through the run's tokenizer (the ids surge-tokenize gives); bad input is one line and exit 2.
. "${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/tap.sh"
SAMPLE="$top_build/surge-sample"
t=$tap_tmp
deck="$t/bytes.deck"
cat >"$deck" <<DECK
[run]
name = sample
steps = 30
print_every = 30
eval_every = 30
out_dir = $t/run
[model]
zoo = gpt
gpt_layers = 2
gpt_width = 32
gpt_heads = 4
gpt_context = 32
[data]
source = text
test_samples = 16
[train]
global_batch = 8
optimizer = adamw
lr = 3e-3
[checkpoint]
every = 30
dir = $t/run/ckpt
DECK
timeout 300 "$SURGE_TRAIN" "$deck" >"$t/train.txt" 2>&1
tap_ok $? "a small byte-level gpt trains for 30 steps: $(grep 'final validation' "$t/train.txt")"
model="$t/run/model.h5"

sample() { # sample OUT NP ARGS...: surge-sample's stdout in OUT, stderr in OUT.err; its exit status
  out=$1; np=$2; shift 2
  timeout 120 "$mpiexec" -n "$np" "$SAMPLE" "$@" >"$out" 2>"$out.err"
}

sample "$t/cache" 1 "$model" --prompt "The " --greedy --tokens 28 --print-ids
rc=$?
sample "$t/full" 1 "$model" --prompt "The " --greedy --tokens 28 --print-ids --no-cache
[ $rc = 0 ] && [ $? = 0 ] && [ "$(wc -w <"$t/cache")" = 32 ] && cmp -s "$t/cache" "$t/full"
tap_ok $? "greedy, 28 tokens after a 4-byte prompt: the cache gives the ids of recomputing the context: $(cut -c1-60 "$t/cache")"
line="^surge-sample: 1 samples x 28 new tokens in [0-9.]* s: [0-9.]* tokens/s (key/value cache of [0-9.]* [KM]iB, cpu"
grep -q "$line backend" \
  "$t/cache.err"
tap_ok $? "tokens/s printed: $(cat "$t/cache.err")"
set -- --prompt "Once upon a time" --ids "10 65 66" --prompt "x" --greedy --tokens 16 --print-ids
sample "$t/cache3" 1 "$model" "$@" && sample "$t/full3" 1 "$model" "$@" --no-cache && cmp -s "$t/cache3" "$t/full3" &&
  [ "$(grep -c '^--- sample' "$t/cache3")" = 3 ]
tap_ok $? "a batch of three prompts of 16, 3 and 1 tokens: the same ids with and without the cache"
if "$top_build/tests/test_bf16" | grep -q "^ok [0-9]* # SKIP the cpu backend's bf16"; then
  tap_skip "bf16: the cpu backend cannot run it here (tests/test_bf16 says why)"
else # the cache's products of a few rows read the weights' bfloat16 copy (model_weights16; tests/test_fusion: bitwise;
  # 3 rows where the CPU has bfloat16 pairs, 1 everywhere)
  sample "$t/cache3b" 1 "$model" "$@" -D backend.precision=bf16 &&
    sample "$t/full3b" 1 "$model" "$@" -D backend.precision=bf16 --no-cache && cmp -s "$t/cache3b" "$t/full3b" &&
    grep -q "(no cache, cpu backend" "$t/full3b.err"
  tap_ok $? "bf16: the batch of three gives the same ids with the cache and without it: $(cat "$t/cache3b.err")"
  sample "$t/cache1b" 1 "$model" --ids "10 65 66" --greedy --tokens 16 --print-ids -D backend.precision=bf16 &&
    sample "$t/full1b" 1 "$model" --ids "10 65 66" --greedy --tokens 16 --print-ids -D backend.precision=bf16 \
      --no-cache && cmp -s "$t/cache1b" "$t/full1b" &&
    grep -q "(key/value cache of [0-9.]* [KM]iB in bfloat16, weights read as bfloat16, cpu backend" "$t/cache1b.err"
  tap_ok $? "bf16, one sample: the cache, held in bfloat16, reads a bfloat16 copy of the weights and gives the ids \
of no cache: \
$(cat "$t/cache1b.err")"
fi
head -2 "$t/cache3" | tail -1 | cut -d' ' -f1-16 | grep -qx "79 110 99 101 32 117 112 111 110 32 97 32 116 105 109 101"
tap_ok $? "a text prompt of a byte-level model is its bytes, kept at the start of the sample"

set -- "$model" --prompt "The " --prompt "A" --samples 2 --tokens 20 --temperature 0.9 --top-k 40 --top-p 0.95 --seed 42
sample "$t/one" 1 "$@" && sample "$t/two" 2 "$@" && cmp -s "$t/one" "$t/two" && [ "$(grep -c '^--- sample' "$t/one")" = 4 ]
tap_ok $? "seed 42, 2 prompts x 2 samples: the same text on 1 and 2 ranks"
sample "$t/other" 1 "$model" --prompt "The " --prompt "A" --samples 2 --tokens 20 --temperature 0.9 --top-k 40 \
  --top-p 0.95 --seed 43
! cmp -s "$t/one" "$t/other" && grep -q "^The " "$t/one"
tap_ok $? "another seed gives other samples; the text starts with its prompt"
awk '/^--- sample 1 /{getline; a=$0} /^--- sample 2 /{getline; b=$0} END{exit a == b}' "$t/one"
tap_ok $? "two samples of one prompt differ (streams of their own)"

ckpt=$(ls "$t/run/ckpt"/ckpt-*.h5 | tail -1)
sample "$t/ckpt" 1 "$ckpt" --prompt "The " --greedy --tokens 28 --print-ids && cmp -s "$t/ckpt" "$t/cache"
tap_ok $? "the step-30 checkpoint $(basename "$ckpt") samples like model.h5"

# [run] sample_every: a sample after evaluations, printed and logged; surge-sample gives the last again.
for layout in dp 3d; do
  case $layout in
    dp) np=1; set -- ;;
    3d) np=4; set -- -D parallel.mode=3d -D parallel.tp=2 -D parallel.pp=2 -D parallel.dp=1 ;;
  esac
  out="$t/s-$layout"
  timeout 300 "$mpiexec" -n $np "$SURGE_TRAIN" "$deck" -D run.steps=20 -D run.eval_every=10 -D run.sample_every=10 \
    -D run.sample_tokens=24 -D "run.out_dir=$out" -D "checkpoint.dir=$out/ckpt" "$@" >"$out.txt" 2>&1
  [ $? = 0 ] && [ "$(grep -c '^sample at step' "$out.txt")" = 2 ] && [ "$(h5vals "$out/log.h5" /samples/step | tr '\n' ' ')" = "10 20 " ]
  tap_ok $? "$layout: a sample after the evaluations at steps 10 and 20, in the log's /samples"
  printed=$(sed -n 's/^sample at step 20 (24 tokens, [0-9]* tokens\/s): //p' "$out.txt")
  logged=$(h5vals "$out/log.h5" /samples/text | tail -1 | sed 's/^"//; s/"$//')
  again=$(timeout 60 "$SAMPLE" "$out/model.h5" --ids 10 --tokens 24 --seed 1 --escape 2>/dev/null)
  [ -n "$printed" ] && [ "$again" = "\\n$printed" ] && [ "$(printf '%s' "$logged" | sed 's/\\\\/\\/g')" = "$printed" ]
  tap_ok $? "$layout: the sample of step 20 is logged and is surge-sample's of model.h5 with the run's seed: $printed"
done
bad_deck() { # bad_deck LABEL PATTERN -D ...: surge-train refuses the deck
  label=$1; pattern=$2; shift 2
  timeout 60 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$t/never" "$@" >"$t/bad.out" 2>"$t/bad.err"
  rc=$?
  [ $rc = 2 ] && grep -q "^surge: error: .*$pattern" "$t/bad.err"
  tap_ok $? "$label: exit $rc, $(cat "$t/bad.err")"
}
bad_deck "sample_every off the evaluations" "sample_every: 15 is not a multiple of eval_every (10)" \
  -D run.eval_every=10 -D run.sample_every=15
bad_deck "samples longer than the context" "sample_tokens (32) must be below gpt_context (32)" -D run.sample_every=30 \
  -D run.sample_tokens=32
bad_deck "samples of an image model" "samples need a language model" -D run.sample_every=30 -D model.zoo=mlp \
  -D data.source=synthetic

# Text through the run's tokenizer: a BPE model (freshly initialised) on the test vocabulary.
tok="$top_src/tests/data/tok/hf"
cat >"$t/bpe.deck" <<DECK
[model]
zoo = gpt
gpt_layers = 1
gpt_width = 32
gpt_heads = 2
gpt_context = 64
[data]
source = tokens
tokenizer = $tok
DECK
printf 'Hello, world: the tokenizer' >"$t/prompt.txt"
"$top_build/surge-tokenize" encode --tokenizer "$tok" --ids "$t/prompt.txt" >"$t/prompt.ids"
sample "$t/bpe" 1 --deck "$t/bpe.deck" --init 3 --prompt "$(cat "$t/prompt.txt")" --tokens 8 --print-ids
n=$(wc -w <"$t/prompt.ids")
[ $? = 0 ] && [ "$(cut -d' ' -f1-"$n" "$t/bpe")" = "$(cat "$t/prompt.ids")" ] && [ "$(wc -w <"$t/bpe")" = $((n + 8)) ]
tap_ok $? "a text prompt goes through [data] tokenizer: surge-tokenize's $n ids, then 8 new ones"
sample "$t/bpe-text" 1 --deck "$t/bpe.deck" --init 3 --prompt "$(cat "$t/prompt.txt")" --tokens 8
grep -q "^Hello, world: the tokenizer" "$t/bpe-text"
tap_ok $? "and the sample is decoded by it, the prompt first"

# A model of token data records its vocabulary: another is refused (shards from tests/write_shard.py).
if command -v python3 >/dev/null 2>&1; then
  mkdir "$t/shards"
  python3 "$top_src/tests/write_shard.py" "$t/shards/s_train_000000.bin" 4000 300 1
  python3 "$top_src/tests/write_shard.py" "$t/shards/s_val_000000.bin" 400 300 2
  timeout 300 "$SURGE_TRAIN" "$t/bpe.deck" -D data.tokenizer= -D "data.path=$t/shards" -D data.vocab_size=300 \
    -D model.gpt_context=16 -D run.steps=2 -D train.global_batch=4 -D data.test_samples=4 -D "run.out_dir=$t/tok" \
    >"$t/tok.txt" 2>&1 &&
    sample "$t/tok.ids" 1 "$t/tok/model.h5" --ids "1 2 299" --tokens 8 &&
    [ "$(wc -w <"$t/tok.ids")" = 11 ] && awk '{ for (i = 1; i <= NF; i++) if ($i >= 300) exit 1 }' "$t/tok.ids"
  tap_ok $? "a model of 300-token shards (no tokenizer) samples ids below 300: $(cat "$t/tok.ids")"
  timeout 60 "$SAMPLE" "$t/tok/model.h5" -D data.vocab_size=301 --ids 1 >"$t/bad.out" 2>"$t/bad.err"
  [ $? = 2 ] && grep -q "^surge: error: the model was trained on a vocabulary of 300 tokens, but \[data\] gives 301" \
    "$t/bad.err"
  tap_ok $? "another vocabulary than the model file records: $(cat "$t/bad.err")"
else
  tap_skip "python3 (the shard writer) is not installed"
  tap_skip "python3 (the shard writer) is not installed"
fi

# Bad input: one line on stderr, exit 2.
bad() { # bad LABEL PATTERN ARGS...
  label=$1; pattern=$2; shift 2
  timeout 60 "$SAMPLE" "$@" >"$t/bad.out" 2>"$t/bad.err"
  rc=$?
  [ $rc = 2 ] && [ "$(wc -l <"$t/bad.err")" = 1 ] && grep -q "^surge: error: .*$pattern" "$t/bad.err"
  tap_ok $? "$label: exit $rc, $(cat "$t/bad.err")"
}
bad "a missing file" "$t/none.h5: cannot open the model file" "$t/none.h5" --prompt a
bad "a file that is no model" "bytes.deck: not a weights file Surge reads" "$deck" --deck "$deck" --prompt a
bad "the wrong deck for the model" "/params/wte.weight: shape (256,32) in the file, (256,64) in this model" "$model" \
  -D model.gpt_width=64 --prompt a
bad "a model file without the blocks the deck says" "/params/blocks.2.ln1.weight: missing" "$model" -D model.gpt_layers=3 \
  --prompt a
bad "a prompt longer than the context" "prompt 1 has 40 tokens, more than the model's context of 32" "$model" \
  --prompt "0123456789012345678901234567890123456789"
bad "a prompt that leaves no room" "with --tokens 30 the sample needs 34 positions, but the model's context is 32" \
  "$model" --prompt "The " --tokens 30
bad "an id past the vocabulary" "id 256 is not in the model's vocabulary 0..255" "$model" --ids "1 256"
bad "an id that is no number" "'x2' is not a token id" "$model" --ids "1,x2"
bad "a negative id" "id -1 is not in" "$model" --ids "-1"
bad "an empty prompt" "prompt 1 is empty" "$model" --prompt ""
bad "top-p 0" "--top-p 0: expected a number in (0, 1]" "$model" --prompt a --top-p 0
bad "top-p 1.5, the same range named" "--top-p 1.5: expected a number in (0, 1]" "$model" --prompt a --top-p 1.5
bad "a negative temperature" "--temperature -1: expected a number in" "$model" --prompt a --temperature -1
bad "no tokens" "--tokens 0: expected a number in" "$model" --prompt a --tokens 0
bad "an unknown option" "unknown option '--topk'" "$model" --prompt a --topk 3
bad "--init without a deck" "--init needs --deck DECK" --init 1 --prompt a
bad "--greedy and --temperature" "--greedy and --temperature 0.5: give one" "$model" --prompt a --greedy --temperature 0.5
bad "a model and --init" "both a model file and --init" "$model" --init 1 --deck "$deck" --prompt a
bad "no prompt for a byte model" "no prompt: give --prompt TEXT" "$model"
bad "an unknown backend" "backend.name" "$model" --prompt a --backend tpu
bad "a negative thread count, named by its flag" "--threads -1: expected a number in \\[1, 1024\\]" "$model" --prompt a \
  --threads -1
bad "an image model" "fashion-mnist holds no token sequences" --deck "$top_src/inputs/mlp-fmnist.deck" --init 1 --prompt a
bad "text for a model without a tokenizer" "no tokenizer" --deck "$t/bpe.deck" -D data.tokenizer= \
  -D data.vocab_size=300 --init 1 --prompt a
bad "a tokenizer of another size than the model's" "wte.weight: shape (256,32) in the file, (640,32) in this model" "$model" \
  -D data.source=tokens -D "data.tokenizer=$tok" --prompt a
tap_done
