#!/bin/sh
# Weights in and out (doc/formats.md, "Weights in and out"; doc/eval.md): a gpt trained on bytes is
# exported to safetensors (Hugging Face GPT-2) and to llm.c's model file; an independent GPT-2 forward
# in numpy, reading those files with its own plain readers (tests/gpt2_numpy.py), gives Surge's logits
# within 1e-5, also for a padded vocabulary (300 -> 384) and for bfloat16 files; model.h5 ->
# safetensors -> model.h5 and model.h5 -> llm.c -> model.h5 are bitwise; a run started with
# [model] init = an exported file evaluates, before its first step, to the exporting run's validation
# loss within 1e-6 in dp, 3d and burst layouts; surge-eval gives the same loss on 1 and 2 ranks and
# the numpy forward's multiple-choice scores; damaged or mismatched files (truncated, lying offsets,
# a tensor of the wrong shape, llm.c's magic wrong, another width or vocabulary, an mlp) are refused
# with exit 2 naming the tensor or offset; an mlp starts from its model.h5 too.
. "${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/tap.sh"
[ -f /usr/share/games/fortunes/fortunes ] || tap_skip_all "the fortunes package (the byte-level text) is not installed"
command -v python3 >/dev/null 2>&1 || tap_skip_all "python3 is not installed"
convert="$top_build/surge-convert"
evaluate="$top_build/surge-eval"
t=$tap_tmp
numpy=""
for py in python3 /usr/bin/python3; do # Debian's python3-numpy is the system python's
  if "$py" -c 'import numpy' 2>/dev/null; then numpy=$py; break; fi
done
forward() { "$numpy" "$top_src/tests/gpt2_numpy.py" "$@"; }
no_numpy="numpy is not installed (tools/install-deps.sh installs python3-numpy)"

small="-D model.gpt_layers=2 -D model.gpt_width=32 -D model.gpt_heads=2 -D model.gpt_context=16 -D data.test_samples=8"
train() { # train NP OUT ARGS...: a small gpt on the fortunes, output in OUT.txt
  np=$1; out=$2; shift 2
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$top_src/inputs/gpt-fortunes.deck" $small -D run.print_every=10 \
    -D "run.out_dir=$out" -D run.overwrite=true "$@" >"$out.txt" 2>&1
}
val_loss() { h5vals "$1/log.h5" /eval/loss | tail -n 1; } # the last evaluation
first_loss() { h5vals "$1/log.h5" /eval/loss | head -n 1; }
within() { awk -v a="$1" -v b="$2" -v tol="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= tol) }'; }

train 1 "$t/a" -D run.steps=6 -D train.lr=1e-2 -D train.warmup_steps=0
tap_ok $? "a gpt of 2 blocks trained 6 steps on bytes"
mkdir "$t/hf" && "$convert" "$t/a/model.h5" "$t/hf/model.safetensors" >"$t/c1.txt" 2>&1
tap_ok $? "model.h5 -> safetensors: $(cat "$t/c1.txt")"
grep -q '"n_head": 2' "$t/hf/config.json" && grep -q '"architectures": \["GPT2LMHeadModel"\]' "$t/hf/config.json"
tap_ok $? "config.json beside it: GPT2LMHeadModel, n_head 2"
"$convert" "$t/a/model.h5" "$t/a.bin" >/dev/null 2>&1 && "$convert" "$t/a/model.h5" "$t/a16.bin" --dtype bfloat16 >/dev/null 2>&1
tap_ok $? "model.h5 -> llm.c's file, float32 and bfloat16"
head -c 4 "$t/a.bin" | od -An -tu4 | grep -q 20240326
tap_ok $? "llm.c's file starts with magic 20240326"

# the independent forward on 16 bytes of text
printf 'Surge says hi!!!' | od -An -tu1 >"$t/ids.txt"
"$evaluate" "$t/a/model.h5" --ids "$t/ids.txt" --logits "$t/a.logits" >/dev/null 2>&1
tap_ok $? "surge-eval writes model.h5's logits"
if [ -n "$numpy" ]; then
  res=$(forward hf "$t/hf/model.safetensors" "$t/ids.txt" "$t/a.logits" 1e-5 2>&1)
  tap_ok $? "numpy GPT-2 from the Hugging Face layout = Surge: $res"
  res=$(forward llmc "$t/a.bin" "$t/ids.txt" "$t/a.logits" 1e-5 2>&1)
  tap_ok $? "numpy GPT-2 from llm.c's layout = Surge: $res"
  "$evaluate" "$t/a16.bin" --ids "$t/ids.txt" --logits "$t/a16.logits" >/dev/null 2>&1
  res=$(forward llmc "$t/a16.bin" "$t/ids.txt" "$t/a16.logits" 1e-5 2>&1)
  tap_ok $? "bfloat16 llm.c file: numpy = Surge on its values: $res"
else
  tap_skip "$no_numpy"; tap_skip "$no_numpy"; tap_skip "$no_numpy"
fi
# one token: no loss, but the next token's distribution
echo 83 >"$t/one.txt"
"$evaluate" "$t/a/model.h5" --ids "$t/one.txt" --logits "$t/one.logits" >"$t/one.out" 2>&1 &&
  grep -q "logits of 1 token written" "$t/one.out" && [ "$(wc -c <"$t/one.logits")" -eq 1024 ]
tap_ok $? "--logits of 1 token: one row of 256 floats, no loss: $(cat "$t/one.out")"
if [ -n "$numpy" ]; then
  res=$(forward hf "$t/hf/model.safetensors" "$t/one.txt" "$t/one.logits" 1e-5 2>&1)
  tap_ok $? "numpy GPT-2 = Surge on 1 token: $res"
else
  tap_skip "$no_numpy"
fi
# --precision bf16: the products in bfloat16, cpu as ref computes them, another loss than fp32's
l32=$("$evaluate" "$t/a/model.h5" --ids "$t/ids.txt" 2>&1 | sed -n 's/^loss \([0-9.]*\) .*/\1/p')
l16=$("$evaluate" "$t/a/model.h5" --ids "$t/ids.txt" --precision bf16 2>&1 | sed -n 's/^loss \([0-9.]*\) .*/\1/p')
r16=$("$evaluate" "$t/a/model.h5" --ids "$t/ids.txt" --precision bf16 --backend ref 2>&1 |
  sed -n 's/^loss \([0-9.]*\) .*/\1/p')
[ -n "$l16" ] && within "$l16" "$r16" 2e-6 && [ "$l16" != "$l32" ] && within "$l16" "$l32" 0.05
tap_ok $? "surge-eval --precision bf16: cpu $l16 = ref $r16 (fp32 $l32)"
"$evaluate" "$t/a/model.h5" --ids "$t/one.txt" >"$t/one-loss.out" 2>&1
[ $? -eq 2 ] && grep -q "nothing to predict.*--logits writes one token's" "$t/one-loss.out"
tap_ok $? "1 token without --logits: refused, naming --logits"

# round trips
"$convert" "$t/hf/model.safetensors" "$t/back_hf.h5" >/dev/null 2>&1 && h5diff "$t/back_hf.h5" "$t/a/model.h5" /params /params >/dev/null 2>&1
tap_ok $? "model.h5 -> safetensors -> model.h5: /params bitwise"
"$convert" "$t/a.bin" "$t/back_llmc.h5" >/dev/null 2>&1 && h5diff "$t/back_llmc.h5" "$t/a/model.h5" /params /params >/dev/null 2>&1
tap_ok $? "model.h5 -> llm.c float32 -> model.h5: /params bitwise"
"$convert" "$t/back_hf.h5" "$t/again.bin" >/dev/null 2>&1 && cmp -s "$t/again.bin" "$t/a.bin"
tap_ok $? "and a converted model.h5 converts again to the same bytes"
"$convert" "$t/a/checkpoints/ckpt-00000006.h5" "$t/ck.bin" >/dev/null 2>&1 && cmp -s "$t/ck.bin" "$t/a.bin"
tap_ok $? "a checkpoint's /params convert like model.h5"

# starting from the exported weights: the step-0 evaluation is the exporter's last
want=$(val_loss "$t/a")
for run in "dp 1 hf/model.safetensors" "dp 2 a.bin" "3d 4 a.bin" "burst 2 hf/model.safetensors"; do
  # shellcheck disable=SC2086
  set -- $run
  extra=""
  case $1 in
    3d) extra="-D parallel.mode=3d -D parallel.tp=2 -D parallel.pp=2 -D parallel.dp=1 -D train.micro_batches=2" ;;
    burst) # the planner's plan with the embedding on the output's rank set and the first MLP's nodes
      # each on one rank, in turn
      # shellcheck disable=SC2086
      "$top_build/tests/make_plan" "$top_src/inputs/gpt-fortunes.deck" 2 "$t/planner.plan" $(echo "$small" | sed 's/-D //g') >/dev/null 2>&1
      awk '/^[0-9]+ / && NF == 5 { if ($1 == 1) { $3 = 2; $4 = 0; $5 = 8 } else if ($1 >= 7 && $1 <= 11) { $3 = 1; $4 = $1 % 2; $5 = 16 } }
        { print }' "$t/planner.plan" >"$t/burst.plan"
      extra="-D parallel.mode=burst -D parallel.plan=$t/burst.plan" ;;
  esac
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" --oversubscribe -n "$2" "$SURGE_TRAIN" "$top_src/inputs/gpt-fortunes.deck" $small $extra \
    -D run.steps=1 -D "run.out_dir=$t/init-$1" -D run.overwrite=true -D "model.init=$t/$3" >"$t/init-$1.txt" 2>&1
  got=$(first_loss "$t/init-$1")
  [ -n "$got" ] && within "$got" "$want" 1e-6
  tap_ok $? "$1 on $2 ranks, init = $3: validation loss at step 0 $got, the exporting run's $want"
done

# a padded vocabulary (300 tokens, 384 rows): llm.c keeps the padding, Hugging Face's file drops it
mkdir "$t/tok"
python3 "$top_src/tests/write_shard.py" "$t/tok/w_train_000000.bin" 20000 300 1
python3 "$top_src/tests/write_shard.py" "$t/tok/w_val_000000.bin" 2000 300 2
train 1 "$t/b" -D run.steps=3 -D data.source=tokens -D "data.path=$t/tok" -D data.vocab_size=300
tap_ok $? "a gpt on 300 tokens (padded to 384) trained"
"$convert" "$t/b/model.h5" "$t/b.bin" >/dev/null 2>&1 && "$convert" "$t/b.bin" "$t/b_back.h5" >/dev/null 2>&1 &&
  h5diff "$t/b_back.h5" "$t/b/model.h5" /params /params >/dev/null 2>&1
tap_ok $? "padded: model.h5 -> llm.c -> model.h5 bitwise (llm.c keeps all 384 rows)"
mkdir "$t/bhf" && "$convert" "$t/b/model.h5" "$t/bhf/model.safetensors" >/dev/null 2>&1 && grep -q '"vocab_size": 300' "$t/bhf/config.json"
tap_ok $? "padded: safetensors of vocab_size 300"
python3 -c 'import random; random.seed(5); print(" ".join(str(random.randrange(300)) for _ in range(16)))' >"$t/ids300.txt"
"$evaluate" "$t/b.bin" --ids "$t/ids300.txt" --logits "$t/b.logits" >/dev/null 2>&1
if [ -n "$numpy" ]; then
  res=$(forward hf "$t/bhf/model.safetensors" "$t/ids300.txt" "$t/b.logits" 1e-5 2>&1)
  tap_ok $? "padded: numpy from the Hugging Face file = Surge's 300 logits: $res"
else
  tap_skip "$no_numpy"
fi
timeout 300 "$mpiexec" -n 2 "$SURGE_TRAIN" "$top_src/inputs/gpt-fortunes.deck" $small -D data.source=tokens \
  -D "data.path=$t/tok" -D data.vocab_size=300 -D run.steps=1 -D "run.out_dir=$t/init-b" -D run.overwrite=true \
  -D "model.init=$t/bhf/model.safetensors" >"$t/init-b.txt" 2>&1
got=$(first_loss "$t/init-b"); want_b=$(val_loss "$t/b")
[ -n "$got" ] && within "$got" "$want_b" 1e-6
tap_ok $? "padded: init = the safetensors (padding rows zero): step-0 loss $got, the exporter's $want_b"

# surge-eval: loss on 1 and 2 ranks, multiple choice against numpy
head -c 5000 /usr/share/games/fortunes/fortunes >"$t/text.txt"
one=$("$evaluate" "$t/hf/model.safetensors" --text "$t/text.txt" 2>&1)
two=$(timeout 60 "$mpiexec" -n 2 "$evaluate" "$t/a.bin" --text "$t/text.txt" 2>&1)
l1=$(echo "$one" | sed -n 's/^loss \([0-9.]*\) .*/\1/p'); l2=$(echo "$two" | sed -n 's/^loss \([0-9.]*\) .*/\1/p')
[ -n "$l1" ] && [ "$l1" = "$l2" ] && echo "$one" | grep -q "bits/byte over 4999 tokens (4999 bytes)"
tap_ok $? "surge-eval: $one; 2 ranks: $l2"
piped=$(cat "$t/text.txt" | "$evaluate" "$t/hf/model.safetensors" --text /dev/stdin 2>&1)
[ "$(echo "$piped" | sed -n 's/^loss \([0-9.]*\) .*/\1/p')" = "$l1" ]
tap_ok $? "a text from a pipe is read to its end (it read as empty: 0 tokens): $piped"
cat >"$t/mc.jsonl" <<'JSONL'
{"context": [83, 117, 114], "endings": [[103, 101], [101], [32, 115, 97]], "label": 1}

{"context": [10], "endings": [[84, 104], [200, 201]], "label": 0}
{"context": [72, 101, 108, 108], "endings": [[111], [97], [112], [32]], "label": 3}
{"context": "Hello", "endings": [" world", "!!!"], "label": 0}
JSONL
mc=$(timeout 60 "$mpiexec" -n 2 "$evaluate" "$t/hf/model.safetensors" --choices "$t/mc.jsonl" 2>&1)
acc=$(echo "$mc" | sed -n 's/.*accuracy \([0-9.]*\) (sum.*/\1/p'); nats=$(echo "$mc" | sed -n 's/.*completion \([0-9.]*\) nats.*/\1/p')
tap_ok $? "multiple choice on 2 ranks: $mc"
if [ -n "$numpy" ]; then
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if line.strip():
        ex = json.loads(line)
        enc = lambda v: list(v.encode()) if isinstance(v, str) else v
        print(json.dumps({"context": enc(ex["context"]), "endings": [enc(e) for e in ex["endings"]], "label": ex["label"]}))
' "$t/mc.jsonl" >"$t/mc_ids.jsonl"
  res=$(forward choices "$t/hf/model.safetensors" "$t/mc_ids.jsonl" "$acc" "$nats" 2>&1)
  tap_ok $? "numpy scores the same choices: $res"
else
  tap_skip "$no_numpy"
fi
# HellaSwag's own lines ("ctx", endings without their leading space) score as llm.c renders them:
# each text ending after a space, the same as "context" with the spaces written in
printf '{"ctx": "A man. he", "endings": ["is up", "sat", [32, 114]], "label": 0}\n' >"$t/hs.jsonl"
printf '{"context": "A man. he", "endings": [" is up", " sat", [32, 114]], "label": 0}\n' >"$t/hs_spaced.jsonl"
scores() { sed 's/^choices [^:]*: //; s/; [0-9.]* s on .*//'; } # the numbers, without file and time
hs=$("$evaluate" "$t/a.bin" --choices "$t/hs.jsonl" 2>&1 | scores)
spaced=$("$evaluate" "$t/a.bin" --choices "$t/hs_spaced.jsonl" 2>&1 | scores)
[ -n "$hs" ] && [ "$hs" = "$spaced" ] && echo "$hs" | grep -q completion
tap_ok $? "HellaSwag's ctx lines: text endings encoded after a space, as llm.c does: $hs"
printf '{"context": [1], "endings": [[2], [3]], "label": 0}\n{"context": [1], "endings": [[2], [999]], "label": 0}\n' >"$t/bad.jsonl"
"$evaluate" "$t/a.bin" --choices "$t/bad.jsonl" >"$t/bad.txt" 2>&1
[ $? = 2 ] && grep -q "bad.jsonl:2: ending 1: entry 0 is not a token id" "$t/bad.txt"
tap_ok $? "a bad id is refused naming FILE:LINE: $(cat "$t/bad.txt")"
printf '{"context": [1], "endings": [[2], [3]], "label": 0}\n{"context": [1], "endings": [[2' >"$t/bad2.jsonl"
"$evaluate" "$t/a.bin" --choices "$t/bad2.jsonl" >"$t/bad2.txt" 2>&1
[ $? = 2 ] && grep -q "bad2.jsonl:2: not a JSON object" "$t/bad2.txt"
tap_ok $? "broken JSON is refused naming FILE:LINE: $(cat "$t/bad2.txt")"
printf '{"context": "Hello", "endings": [" a", " b\\\\u0000"], "label": 0}\n{"context": "The cat\\u0000 sat", "endings": [" a", " b"], "label": 0}\n' >"$t/nul.jsonl"
"$evaluate" "$t/a.bin" --choices "$t/nul.jsonl" >"$t/nul.txt" 2>&1
[ $? = 2 ] && grep -q "nul.jsonl:2: a text holds \\\\u0000, a NUL character" "$t/nul.txt"
tap_ok $? "a NUL in a text (which would end it there) is refused, an escaped backslash before u0000 is not: $(cat "$t/nul.txt")"

# damaged and mismatched files
refused() { # refused NAME PATTERN CMD...: exit 2 with PATTERN in the message
  name=$1; pattern=$2; shift 2
  "$@" >"$t/$name.txt" 2>&1
  rc=$?
  [ $rc = 2 ] && grep -q -- "$pattern" "$t/$name.txt"
  tap_ok $? "$name refused (exit $rc): $(grep -o 'error: .*' "$t/$name.txt" | head -c 300)"
}
st="$t/hf/model.safetensors"
size=$(wc -c <"$st")
head -c $((size - 100)) "$st" >"$t/trunc.safetensors"; cp "$t/hf/config.json" "$t/config.json"
refused "truncated safetensors" "run past the data the file holds" "$convert" "$t/trunc.safetensors" "$t/x.h5"
head -c 6 "$st" >"$t/short.safetensors"
refused "a 6-byte safetensors" "truncated" "$convert" "$t/short.safetensors" "$t/x.h5"
edit() { # edit IN OUT PYTHON: IN with its JSON header h rewritten by PYTHON, which may append bytes `tail`
  # to the data (`data`), to OUT
  python3 -c '
import json, struct, sys
blob = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
h = json.loads(blob[8:8 + n])
data = blob[8 + n:]
tail = b""
exec(sys.argv[3])
t = json.dumps(h).encode()
t += b" " * (-len(t) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(t)) + t + data + tail)' "$@"
}
edit "$st" "$t/lie.safetensors" 'h["transformer.h.1.ln_2.bias"]["data_offsets"] = [10**12, 10**12 + 128]'
refused "a header that lies about offsets" "transformer.h.1.ln_2.bias: data_offsets \[1000000000000" "$convert" "$t/lie.safetensors" "$t/x.h5"
edit "$st" "$t/span.safetensors" 'h["transformer.h.0.mlp.c_fc.bias"]["data_offsets"][1] -= 4'
refused "offsets that disagree with the shape" "c_fc.bias: data_offsets .* hold 508 bytes, its shape and dtype need 512" "$convert" "$t/span.safetensors" "$t/x.h5"
edit "$st" "$t/shape.safetensors" 'h["transformer.h.0.attn.c_attn.weight"]["shape"] = [96, 32]'
refused "a tensor of the wrong shape" "transformer.h.0.attn.c_attn.weight: shape (96,32) in the file, (32,96) in this model" \
  "$convert" "$t/shape.safetensors" "$t/x.h5"
# a head beside the embedding, its own bytes after the others: the same values (tied) are read, other
# values are refused (Surge's gpt ties it)
edit "$st" "$t/tied.safetensors" 'o = h["transformer.wte.weight"]["data_offsets"]
tail = data[o[0]:o[1]]
h["lm_head.weight"] = dict(h["transformer.wte.weight"], data_offsets=[len(data), len(data) + len(tail)])'
"$convert" "$t/tied.safetensors" "$t/tied.h5" >/dev/null 2>&1 &&
  h5diff "$t/tied.h5" "$t/a/model.h5" /params /params >/dev/null 2>&1
tap_ok $? "an lm_head.weight equal to the token embedding is read as the tied output (bitwise the same model)"
edit "$st" "$t/untied.safetensors" 'o = h["transformer.wte.weight"]["data_offsets"]
tail = data[o[0] + 4:o[1]] + data[o[0]:o[0] + 4]
h["lm_head.weight"] = dict(h["transformer.wte.weight"], data_offsets=[len(data), len(data) + len(tail)])'
refused "an untied output layer" "lm_head.weight is not the token embedding: the output is untied" \
  "$convert" "$t/untied.safetensors" "$t/x.h5"
# the format's layout (the safetensors library refuses the rest): the tensors tile the data
edit "$st" "$t/shared.safetensors" 'h["lm_head.weight"] = dict(h["transformer.wte.weight"])'
refused "two tensors on the same bytes" "tensors .*wte.weight.* share bytes of the data" "$convert" "$t/shared.safetensors" \
  "$t/x.h5"
edit "$st" "$t/missing.safetensors" 'name = "transformer.h.1.attn.c_proj.bias"
b, e = h.pop(name)["data_offsets"]
data = data[:b] + data[e:]
for k, v in h.items():
    if k != "__metadata__" and v["data_offsets"][0] >= e: v["data_offsets"] = [o - (e - b) for o in v["data_offsets"]]'
refused "a missing tensor" "tensor transformer.h.1.attn.c_proj.bias: missing (this model's shape for it: (32))" \
  "$convert" "$t/missing.safetensors" "$t/x.h5"
edit "$st" "$t/trailing.safetensors" 'tail = bytes(100)'
refused "bytes after the last tensor" "100 bytes after the last tensor's data belong to no tensor" "$convert" \
  "$t/trailing.safetensors" "$t/x.h5"
# a config.json that describes another architecture than the weights compute here is refused naming the key
for kv in '"activation_function": "relu"' '"layer_norm_epsilon": 0.1' '"scale_attn_weights": false' '"n_layer": 7'; do
  key=${kv%%:*}
  mkdir -p "$t/cfg" && cp "$st" "$t/cfg/model.safetensors"
  sed "s/^  $key: .*/  $kv,/" "$t/hf/config.json" >"$t/cfg/config.json"
  grep -q "$kv" "$t/cfg/config.json" || sed -i "s/^{/{ $kv,/" "$t/cfg/config.json"
  refused "config.json with $kv" "config.json: $key is .*; the weights beside it are read as GPT-2's" "$convert" "$t/cfg/model.safetensors" "$t/x.h5"
done
cp "$t/a.bin" "$t/magic.bin" && printf '\177' | dd of="$t/magic.bin" bs=1 seek=0 conv=notrunc 2>/dev/null
refused "llm.c's magic wrong" "magic 20240255 at offset 0, not llm.c's 20240326" "$convert" "$t/magic.bin" "$t/x.h5"
cp "$t/a.bin" "$t/version.bin" && printf '\007' | dd of="$t/version.bin" bs=1 seek=4 conv=notrunc 2>/dev/null
refused "llm.c's version wrong" "version 7 at offset 4" "$convert" "$t/version.bin" "$t/x.h5"
head -c $(($(wc -c <"$t/a.bin") - 4)) "$t/a.bin" >"$t/trunc.bin"
refused "a truncated llm.c file" "its header's sizes need .* truncated" "$convert" "$t/trunc.bin" "$t/x.h5"
train_out() { # train_out ARGS...: train as train does, the output on stdout
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" -n 1 "$SURGE_TRAIN" "$top_src/inputs/gpt-fortunes.deck" $small -D "run.out_dir=$t/refused" \
    -D run.overwrite=true -D run.steps=1 "$@" 2>&1
}
refused "init of another width" "transformer.wte.weight: shape (256,32) in the file, (256,64) in this model" \
  train_out -D model.gpt_width=64 -D "model.init=$st"
refused "init of another vocabulary" "a model of vocabulary 300, this model's is 256" \
  train_out -D "model.init=$t/b/model.h5"
refused "llm.c init of another vocabulary" "vocabulary (V) 300 in the header, 256 in this model" \
  train_out -D "model.init=$t/b.bin"
if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  timeout 120 "$SURGE_TRAIN" "$top_src/inputs/mlp-fmnist.deck" -D run.steps=1 -D model.mlp_hidden=16 -D data.train_samples=64 \
    -D data.test_samples=16 -D train.global_batch=16 -D "run.out_dir=$t/mlp" -D run.overwrite=true >"$t/mlp.txt" 2>&1
  refused "an mlp to safetensors" "a mlp model: only the gpt has a GPT-2 counterpart" "$convert" "$t/mlp/model.h5" "$t/mlp.safetensors"
  timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$top_src/inputs/mlp-fmnist.deck" -D run.steps=1 -D model.mlp_hidden=16 \
    -D data.train_samples=64 -D data.test_samples=16 -D train.global_batch=16 -D "run.out_dir=$t/mlp2" -D run.overwrite=true \
    -D "model.init=$t/mlp/model.h5" >"$t/mlp2.txt" 2>&1
  got=$(first_loss "$t/mlp2"); want_m=$(val_loss "$t/mlp")
  [ -n "$got" ] && within "$got" "$want_m" 1e-6
  tap_ok $? "any zoo model starts from its model.h5: the mlp on 2 ranks, step-0 test loss $got, the exporter's $want_m"
else
  tap_skip "dataset-fashion-mnist is not installed (the mlp to refuse)"
  tap_skip "dataset-fashion-mnist is not installed (the mlp to start from)"
fi

# a weights file holding a NaN (a model that had diverged) is refused by every reader, naming the tensor
# and the value (a ReLU network read one silently: NaN became 0 on the way to the loss)
cp "$t/a.bin" "$t/nan.bin" && printf '\000\000\300\177' | dd of="$t/nan.bin" bs=1 seek=1424 conv=notrunc 2>/dev/null
"$evaluate" "$t/nan.bin" --ids "$t/ids.txt" >"$t/nan-eval.txt" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "nan.bin: tensor wte.weight: value 100 is nan, not finite" "$t/nan-eval.txt"
tap_ok $? "surge-eval of an llm.c file holding a NaN: exit $rc: $(grep -o 'error: .*' "$t/nan-eval.txt" | head -c 200)"
train 1 "$t/nan-init" -D run.steps=1 -D "model.init=$t/nan.bin"
rc=$?
[ $rc = 2 ] && grep -q "nan.bin: tensor wte.weight: value 100 is nan" "$t/nan-init.txt"
tap_ok $? "[model] init = that file: exit $rc"

# a killed conversion's leftover temporary file that is a link: replaced, never written through
echo precious >"$t/victim.txt"
mkdir "$t/lk" && ln -s "$t/victim.txt" "$t/lk/a.bin.tmp" && ln -s "$t/victim.txt" "$t/lk/model.safetensors.tmp"
"$convert" "$t/a/model.h5" "$t/lk/a.bin" >"$t/lk.txt" 2>&1 && "$convert" "$t/a/model.h5" "$t/lk/model.safetensors" >>"$t/lk.txt" 2>&1 &&
  [ "$(cat "$t/victim.txt")" = precious ] && [ ! -L "$t/lk/a.bin" ] && [ ! -L "$t/lk/model.safetensors" ] &&
  cmp -s "$t/lk/a.bin" "$t/a.bin" && [ ! -e "$t/lk/a.bin.tmp" ]
tap_ok $? "a leftover OUT.tmp that links elsewhere is replaced: the link's target kept, OUT a file of its own"
tap_done
