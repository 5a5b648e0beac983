#!/bin/sh
# [data] source = tokens (doc/data.md): surge-train reads llm.c shards that an independent writer
# made (tests/write_shard.py, from the documented layout); with a vocabulary of 300 (padded to 384,
# the padding kept out of loss and gradients) dp on 4 ranks and 3d on tp 2 x pp 2 end where 1 rank
# ends; a resumed run continues the same sample order; model.h5 and checkpoints record the
# vocabulary and its files' hash, and a resume on other tokenizer files is refused; bad shards are
# refused naming the file and offset (exit 2) before training starts; a 3 GB sparse shard trains in
# the resident memory of a 10 MB one (within 10%); a header that claims more than it holds is refused.
. "${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/tap.sh"
command -v python3 >/dev/null 2>&1 || tap_skip_all "python3 (the independent shard writer) is not installed"
write="python3 $top_src/tests/write_shard.py"
compare="$top_build/tests/h5_compare"
t=$tap_tmp
mkdir "$t/c"
$write "$t/c/w_train_000000.bin" 30000 300 1
$write "$t/c/w_train_000001.bin" 20000 300 2
$write "$t/c/w_val_000000.bin" 4000 300 3
deck="$t/tokens.deck"
cat >"$deck" <<DECK
[run]
name = tokens
steps = 10
print_every = 10
eval_every = 10
overwrite = true
[model]
zoo = gpt
gpt_layers = 2
gpt_width = 32
gpt_heads = 2
gpt_context = 16
[data]
source = tokens
path = $t/c
vocab_size = 300
test_samples = 16
[train]
global_batch = 16
optimizer = adamw
lr = 1e-3
[checkpoint]
every = 5
DECK
train() { # train NP OUT ARGS...
  np=$1; out=$2; shift 2
  timeout 300 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$deck" -D "run.out_dir=$out" "$@" >>"$out.txt" 2>&1
}

train 1 "$t/one"
tap_ok $? "surge-train reads the independent writer's shards: $(grep '^data' "$t/one.txt")"
grep -q "^data tokens: $(( 29999 / 16 + 19999 / 16 )) training samples, 16 validation samples" "$t/one.txt"
tap_ok $? "windows of context+1 tokens through both training shards: $((29999 / 16)) + $((19999 / 16)) samples"
grep -q "validation loss [0-9.]* nats/token" "$t/one.txt"
tap_ok $? "evaluated on the validation shard, in nats per token"
# a directory whose name holds glob characters is that directory (tk[x] was read as a pattern,
# training on a sibling tkx without a word)
mkdir "$t/c[1]" "$t/c1"
cp "$t/c"/*.bin "$t/c[1]/"
$write "$t/c1/w_train_000000.bin" 5000 300 4
$write "$t/c1/w_val_000000.bin" 4000 300 5
train 1 "$t/brackets" -D "data.path=$t/c[1]" -D run.steps=1
grep -q "^data tokens: $(( 29999 / 16 + 19999 / 16 )) training samples" "$t/brackets.txt"
tap_ok $? "data.path = c[1], a directory beside c1: its own shards: $(grep -a '^data\|error' "$t/brackets.txt" | head -n 1)"
# a validation split that holds a training shard measures nothing: refused, naming both
train 1 "$t/overlap" -D "data.path=$t/c/*train*.bin" -D "data.val_path=$t/c/w_train_000001.bin" -D run.steps=1
[ $? = 2 ] && grep -q "val_path: the shard .*w_train_000001.bin is also a training shard" "$t/overlap.txt"
tap_ok $? "val_path naming a training shard is refused: $(grep -o 'error: .*' "$t/overlap.txt" | head -c 160)"
train 4 "$t/four"
res=$("$compare" "$t/four/model.h5" "$t/one/model.h5" 1e-5 --key-bias-bound 0.006 2>&1)
tap_ok $? "dp on 4 ranks = 1 rank: $res"
train 4 "$t/grid" -D parallel.mode=3d -D parallel.tp=2 -D parallel.pp=2 -D parallel.dp=1 -D train.micro_batches=2
res=$("$compare" "$t/grid/model.h5" "$t/one/model.h5" 1e-5 --key-bias-bound 0.006 2>&1)
tap_ok $? "3d on tp 2 x pp 2 = 1 rank: $res"
rows() { # rows FILE DATASET FIRST COUNT: the values of rows FIRST.. of a (N, 32) dataset, one a line
  h5dump -d "$2" -s "$3,0" -c "$4,32" -y -w 0 "$1" | sed -n '/DATA {/,/}/p' | sed '/}/q' | tr ', ' '\n\n' |
    grep -E '^-?[0-9]'
}
ckpt="$t/one/checkpoints/ckpt-00000010.h5"
h5ls "$ckpt/params/wte.weight" | grep -q "{384, 32}"
tap_ok $? "the token table is padded from 300 to 384 rows (a multiple of 128)"
[ -z "$(rows "$ckpt" /optim/m/wte.weight 300 84 | grep -v '^0$')" ] && [ -z "$(rows "$ckpt" /optim/v/wte.weight 300 84 | grep -v '^0$')" ]
tap_ok $? "no gradient reached the 84 padded rows in 10 steps: their AdamW moments are exactly 0"
[ -n "$(rows "$ckpt" /optim/m/wte.weight 0 300 | grep -v '^0$')" ]
tap_ok $? "the real rows were trained (moments not all 0)"
[ "$(h5dump -a /vocab -y "$t/one/model.h5" | sed -n 's/.*"\(.*\)".*/\1/p' | tail -n 1)" = 300 ]
tap_ok $? "model.h5 records the vocabulary (vocab = 300)"
train 1 "$t/half" -D run.steps=5
train 1 "$t/half" --resume
h5diff "$t/half/model.h5" "$t/one/model.h5" /params /params >/dev/null 2>&1
tap_ok $? "resumed at step 5: bitwise the straight run's parameters (the same samples in the same order)"
"$compare" "$t/one/model.h5" "$t/half/checkpoints/ckpt-00000005.h5" 1e-5 >/dev/null 2>&1
[ $? != 0 ]
tap_ok $? "the runs trained: step 10 differs from step 5"

# Shards that surge-tokenize made, the vocabulary from its tokenizer (600 tokens, padded to 640).
tok="$top_src/tests/data/tok"
mkdir "$t/s" && cp -r "$tok/hf" "$t/tok"
"$top_build/surge-tokenize" encode --tokenizer "$t/tok" --out "$t/s/x" --val-fraction 0.3 "$tok"/*.txt "$top_src/doc" >/dev/null
train 1 "$t/hf" -D "data.path=$t/s" -D "data.tokenizer=$t/tok" -D data.vocab_size=0 -D data.test_samples=4
hash=$(cat "$t/tok/vocab.json" "$t/tok/merges.txt" | python3 -c '
import sys
h = 0xcbf29ce484222325
for b in sys.stdin.buffer.read(): h = ((h ^ b) * 0x100000001b3) & (2**64 - 1)
print("%016x" % h)')
[ "$(h5dump -a /vocab -y "$t/hf/model.h5" | sed -n 's/.*"\(.*\)".*/\1/p' | tail -n 1)" = "600:$hash" ]
tap_ok $? "trained on surge-tokenize's shards; model.h5 records vocab = 600:$hash (FNV-1a of the two files)"
h5ls "$t/hf/model.h5/params/wte.weight" | grep -q "{640, 32}"
tap_ok $? "600 tokens padded to 640 rows"
# surge-eval reads a text through the model's tokenizer, and only through it (a text read as bytes, or
# through another tokenizer, gave a loss with exit 0)
evaluate() { timeout 60 "$top_build/surge-eval" "$t/hf/model.h5" "$@" >"$t/ev.txt" 2>&1; }
evaluate --text "$tok/prose.txt" --tokenizer "$t/tok" && grep -q "^loss [0-9.]* nats/token" "$t/ev.txt"
tap_ok $? "surge-eval of a text through the model's tokenizer: $(head -c 120 "$t/ev.txt")"
evaluate --text "$tok/prose.txt"
[ $? = 2 ] && grep -q "without --tokenizer a text is read as bytes, for a byte-level model (a vocabulary of 256), and this model's is 600" "$t/ev.txt"
tap_ok $? "surge-eval of a text without the tokenizer is refused: $(grep -o 'error: .*' "$t/ev.txt" | head -c 160)"
printf '{"context": "Hello", "endings": [" a", " b"], "label": 0}\n' >"$t/mc.jsonl"
evaluate --choices "$t/mc.jsonl"
[ $? = 2 ] && grep -q "mc.jsonl:1: \"context\": without --tokenizer a text is read as bytes" "$t/ev.txt"
tap_ok $? "and so are --choices texts without it: $(grep -o 'error: .*' "$t/ev.txt" | head -c 160)"
printf '1 2 600\n' >"$t/oov.ids"
evaluate --ids "$t/oov.ids"
[ $? = 2 ] && grep -q "oov.ids: byte 4: id 600 is outside the vocabulary (0..599)" "$t/ev.txt"
tap_ok $? "an id past the vocabulary is refused naming the file: $(grep -o 'error: .*' "$t/ev.txt" | head -c 160)"
printf '\n' >>"$t/tok/merges.txt" # the same merges, other bytes: another hash
train 1 "$t/hf" -D "data.path=$t/s" -D "data.tokenizer=$t/tok" -D data.vocab_size=0 -D data.test_samples=4 -D run.steps=20 --resume
[ $? = 2 ] && grep -q "was trained on the vocabulary 600:$hash.*this run's data has 600:" "$t/hf.txt"
tap_ok $? "a resume with other tokenizer files is refused: $(grep -o 'error: .*' "$t/hf.txt" | head -c 200)"
evaluate --text "$tok/prose.txt" --tokenizer "$t/tok"
[ $? = 2 ] && grep -q "the tokenizer $t/tok (files' hash [0-9a-f]*) is not the one the model was trained with (hash $hash" "$t/ev.txt"
tap_ok $? "and so is surge-eval through them: $(grep -o 'error: .*' "$t/ev.txt" | head -c 200)"

# The shipped decks: without their corpus, one line naming the path and the tool that builds it;
# on this corpus (shrunk), they train.
for d in gpt-bpe gpt2-124m; do
  out="$t/deck-$d"
  timeout 60 "$SURGE_TRAIN" "$top_src/inputs/$d.deck" -D "data.tokenizer=$t/none" -D "run.out_dir=$out" >"$out.txt" 2>&1
  [ $? = 2 ] && grep -q "tokenizer = $t/none: No such file or directory (hint: .*tools/make-corpus.sh" "$out.txt"
  tap_ok $? "inputs/$d.deck without its tokenizer: exit 2, $(grep -o 'error: .*' "$out.txt" | head -c 150)"
  timeout 60 "$SURGE_TRAIN" "$top_src/inputs/$d.deck" -D "data.tokenizer=$t/tok" -D "data.path=$t/none" \
    -D "run.out_dir=$out" >"$out.txt" 2>&1
  [ $? = 2 ] && grep -q "path = $t/none: No such file or directory (hint: tools/make-corpus.sh" "$out.txt"
  tap_ok $? "inputs/$d.deck without its shards: exit 2, $(grep -o 'error: .*' "$out.txt" | head -c 150)"
  timeout 300 "$SURGE_TRAIN" "$top_src/inputs/$d.deck" -D "data.path=$t/s" -D "data.tokenizer=$t/tok" -D run.steps=2 \
    -D run.eval_every=0 -D data.test_samples=2 -D train.global_batch=2 -D model.gpt_layers=1 -D model.gpt_width=32 \
    -D model.gpt_heads=2 -D model.gpt_context=32 -D checkpoint.every=0 -D "run.out_dir=$out-run" >"$out-run.txt" 2>&1
  tap_ok $? "inputs/$d.deck as shipped but shrunk, on surge-tokenize's shards: 2 steps"
done

# Bad shards: exit 2 before the first step, naming the file and the offset.
bad() { # bad DESCRIPTION PATTERN: the shard $t/b/x_train_000000.bin
  out="$t/bad-$tap_n"
  timeout 60 "$SURGE_TRAIN" "$deck" -D "data.path=$t/b/x_train_*.bin" -D "data.val_path=$t/c/w_val_000000.bin" \
    -D "run.out_dir=$out" >"$out.txt" 2>&1
  rc=$?
  [ $rc = 2 ] && grep -q "error: $t/b/x_train_000000.bin: $2" "$out.txt" && ! grep -q "^step " "$out.txt"
  tap_ok $? "refused: $1 (exit $rc: $(grep error "$out.txt" | head -c 200))"
}
mkdir "$t/b"
shard="$t/b/x_train_000000.bin"
$write "$shard" 100 --header-only 20240521 1 && bad "a wrong magic" "offset 0: magic 20240521"
$write "$shard" 100 --header-only 20240520 2 && bad "a wrong version" "offset 4: version 2"
head -c 1000 "$t/c/w_val_000000.bin" >"$shard" && bad "a file shorter than the header" "offset 1000: the file ends inside"
$write "$shard" 4000 300 && truncate -s 5000 "$shard" && bad "a count beyond the file" "offset 8: the header counts 4000 tokens, but the file holds 1988"
$write "$shard" 4000 301 7 && bad "a token beyond the vocabulary" "offset [0-9]*: token 300 is not below the vocabulary of 300"
$write "$shard" $(( (1 << 31) - 1 )) --sparse 10000000 && bad "a header claiming 2^31-1 tokens in 10 MB" "offset 8: the header counts 2147483647"

# A 3 GB sparse shard (holes read as token 0) against a 10 MB one: 100 steps each, peak resident
# memory within 10%.
mkdir "$t/big" "$t/small"
$write "$t/big/s_train_000000.bin" $(( (3 << 30) / 2 - 512 )) --sparse $(( 3 << 30 ))
$write "$t/small/s_train_000000.bin" 5000000 300 4
cp "$t/c/w_val_000000.bin" "$t/big/s_val_000000.bin" && cp "$t/c/w_val_000000.bin" "$t/small/s_val_000000.bin"
peak() { # peak DIR: the process's peak resident KiB (surge-train's memory line) of 100 steps on DIR
  "$SURGE_TRAIN" "$deck" -D run.steps=100 -D checkpoint.every=0 -D run.eval_every=0 -D "data.path=$1" \
    -D "run.out_dir=$1-run" >"$1-run.txt" 2>&1 &&
    sed -n 's/.*process peak \([0-9.]*\) MiB.*/\1/p' "$1-run.txt" | awk '{ printf "%d\n", $1 * 1024 }'
}
big=$(peak "$t/big")
small=$(peak "$t/small")
grep -q "^data tokens: $(( ((3 << 30) / 2 - 513) / 16 )) training samples" "$t/big-run.txt"
tap_ok $? "the 3 GB shard: $(( ((3 << 30) / 2 - 513) / 16 )) samples, trained 100 steps"
[ "${big:-0}" -gt 0 ] && [ "${small:-0}" -gt 0 ] && [ "$big" -le $(( small * 11 / 10 )) ]
tap_ok $? "peak resident memory: 3 GB shard ${big} KiB, 10 MB shard ${small} KiB (within 10%)"
tap_done
