#!/bin/sh
# surge-tokenize (doc/data.md): encoding matches the reference ids that Hugging Face's tokenizers
# made (tools/tok-reference.py) with its own vocabulary and with one Surge trained; training is
# reproducible, on 1 and 3 ranks; decode(encode(x)) = x byte for byte (invalid UTF-8 too); shards from 1 and 4 ranks
# are byte-identical; a vocab/merges pair that does not agree is refused naming the line.
. "${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/tap.sh"
TOK="$top_build/surge-tokenize"
data="$top_src/tests/data/tok"
t=$tap_tmp

for name in prose code.c edge; do
  for voc in hf surge; do
    "$TOK" encode --tokenizer "$data/$voc" --ids "$data/$name.txt" >"$t/$name.$voc.ids" 2>"$t/err"
    cmp -s "$t/$name.$voc.ids" "$data/$name.$voc.ids"
    tap_ok $? "$name.txt with the $voc vocabulary: the reference's $(wc -w <"$data/$name.$voc.ids") ids, id for id"
  done
done

mkdir "$t/trained"
"$TOK" train --out "$t/trained" --vocab-size 600 --min-frequency 1 "$data/prose.txt" "$data/code.c.txt" \
  "$data/edge.txt" >"$t/train.out" 2>&1
cmp -s "$t/trained/vocab.json" "$data/surge/vocab.json" && cmp -s "$t/trained/merges.txt" "$data/surge/merges.txt"
tap_ok $? "train writes the stored vocab.json and merges.txt again, byte for byte"
mkdir "$t/trained3"
"$mpiexec" -n 3 "$TOK" train --out "$t/trained3" --vocab-size 600 --min-frequency 1 "$data/prose.txt" "$data/code.c.txt" \
  "$data/edge.txt" >"$t/train3.out" 2>&1
cmp -s "$t/trained3/vocab.json" "$data/surge/vocab.json" && cmp -s "$t/trained3/merges.txt" "$data/surge/merges.txt"
tap_ok $? "train on 3 ranks (pieces counted in shares, summed on rank 0): the same files"
"$TOK" train --out "$t/trained" --vocab-size 600 "$data/prose.txt" >/dev/null 2>"$t/err"
[ $? = 2 ] && grep -q "vocab.json: the file exists" "$t/err"
tap_ok $? "train never replaces a vocabulary"
mkdir "$t/half" && : >"$t/half/merges.txt"
"$TOK" train --out "$t/half" --vocab-size 300 "$data/prose.txt" >/dev/null 2>"$t/err"
[ $? = 2 ] && grep -q "half/merges.txt: the file exists" "$t/err" && [ ! -e "$t/half/vocab.json" ]
tap_ok $? "nor writes half a tokenizer: an existing merges.txt is refused before the training, vocab.json not written"
# a token learnt from text that looks like a special one ("<|" + "|>" = "<||>") is an ordinary token:
# the files load again, and encode and decode give the text back (refused before at merges.txt's line)
mkdir "$t/lookalike"
awk 'BEGIN { for (i = 0; i < 200; i++) print "<||> <|-|> x" }' >"$t/lookalike/a.txt"
"$TOK" train --out "$t/lookalike/new/tok" --vocab-size 300 "$t/lookalike/a.txt" >/dev/null 2>"$t/err" &&
  "$TOK" encode --tokenizer "$t/lookalike/new/tok" --ids "$t/lookalike/a.txt" >"$t/lookalike.ids" 2>>"$t/err" &&
  "$TOK" decode --tokenizer "$t/lookalike/new/tok" --ids "$t/lookalike.ids" >"$t/lookalike.txt" 2>>"$t/err" &&
  cmp -s "$t/lookalike.txt" "$t/lookalike/a.txt" && grep -q '"<||>"' "$t/lookalike/new/tok/vocab.json"
tap_ok $? "a learnt \"<||>\" token (--out's directories made) loads, encodes and decodes back: $(head -c 200 "$t/err")"

# A corpus: the texts, invalid UTF-8 and control bytes, an empty file, and more documents.
mkdir "$t/corpus" "$t/corpus/more"
cp "$data"/*.txt "$t/corpus/"
printf 'bad \377\376 utf-8: \303( \342\202 \300\257 \355\240\200 \360\237\230 nul \000 end\r\n' >"$t/corpus/invalid.txt"
: >"$t/corpus/empty.txt"
for i in 1 2 3 4 5 6 7 8 9; do sed -n "${i},\$p" "$data/prose.txt" >"$t/corpus/more/doc$i.txt"; done
i=10
while [ $i -lt 80 ]; do # past one round of 4 ranks x 16 documents
  sed -n "$((i % 9 + 1))p" "$data/code.c.txt" >"$t/corpus/more/doc$i.txt"
  i=$((i + 1))
done
for f in "$t"/corpus/*.txt; do
  "$TOK" encode --tokenizer "$data/hf" --ids "$f" >"$t/ids" && "$TOK" decode --tokenizer "$data/hf" --ids "$t/ids" >"$t/back"
  cmp -s "$f" "$t/back"
  tap_ok $? "decode(encode(x)) = x: $(basename "$f")"
done

mkdir "$t/one" # ("four" is made by encode, as train makes its --out)
"$TOK" encode --tokenizer "$data/hf" --out "$t/one/c" --val-fraction 0.25 --shard-tokens 700 "$t/corpus" >"$t/one.out" 2>&1
tap_ok $? "encode on 1 rank: $(cat "$t/one.out")"
"$mpiexec" -n 4 "$TOK" encode --tokenizer "$data/hf" --out "$t/four/c" --val-fraction 0.25 --shard-tokens 700 \
  "$t/corpus" >"$t/four.out" 2>&1
tap_ok $? "encode on 4 ranks, into the directory of --out that it makes: $(tail -n 1 "$t/four.out")"
(cd "$t/one" && ls) >"$t/one.ls"
(cd "$t/four" && ls) >"$t/four.ls"
same=0
cmp -s "$t/one.ls" "$t/four.ls" || same=1
for f in $(cat "$t/one.ls"); do cmp -s "$t/one/$f" "$t/four/$f" || same=1; done
[ "$(wc -l <"$t/one.ls")" -ge 4 ]
tap_ok $? "several shards of each split: $(echo $(cat "$t/one.ls"))"
tap_ok $same "the shards of 1 and 4 ranks are byte-identical"
# files are written under their names + ".tmp" and take their names when complete: what a killed run
# left there (temporary files longer than this run's) is replaced, and nothing is left over (a killed
# encode left shards with zeroed headers under their names, a killed train half a vocab.json, and a
# rerun refused to replace either)
mkdir "$t/stale" "$t/stale-tok"
for f in c_train_000000 c_train_000001 c_train_000007 c_val_000000; do head -c 300000 /dev/zero | tr '\0' '\377' >"$t/stale/$f.bin.tmp"; done
for f in vocab.json merges.txt; do head -c 300000 /dev/zero | tr '\0' '\377' >"$t/stale-tok/$f.tmp"; done
"$TOK" encode --tokenizer "$data/hf" --out "$t/stale/c" --val-fraction 0.25 --shard-tokens 700 "$t/corpus" >/dev/null 2>&1 &&
  "$TOK" train --out "$t/stale-tok" --vocab-size 600 --min-frequency 1 "$data/prose.txt" "$data/code.c.txt" \
    "$data/edge.txt" >/dev/null 2>&1
rc=$?
same=0
for f in $(cat "$t/one.ls"); do cmp -s "$t/one/$f" "$t/stale/$f" || same=1; done
[ $rc = 0 ] && [ $same = 0 ] && [ "$(ls "$t/stale" | sort)" = "$(sort "$t/one.ls")" ] &&
  cmp -s "$t/stale-tok/vocab.json" "$data/surge/vocab.json" && cmp -s "$t/stale-tok/merges.txt" "$data/surge/merges.txt" &&
  [ "$(ls -A "$t/stale-tok" | tr '\n' ' ')" = "merges.txt vocab.json " ]
tap_ok $? "a killed run's temporary files are replaced: the same shards and tokenizer, no .tmp left (exit $rc)"
[ "$(od -An -t d4 -N 12 "$t/one/c_train_000000.bin" | tr -s ' ')" = " 20240520 1 700" ]
tap_ok $? "llm.c's header: magic 20240520, version 1, count 700"
[ "$(od -An -t u2 -j 1024 -N 2 "$t/one/c_train_000000.bin" | tr -d ' ')" = 0 ]
tap_ok $? "the training stream starts with <|endoftext|> (id 0 of this vocabulary)"
"$TOK" decode --tokenizer "$data/hf" --skip-special "$t"/one/c_train_*.bin "$t"/one/c_val_*.bin >"$t/all"
: >"$t/expect"
for f in $(cd "$t/corpus" && find . -type f | sed 's|^\./||' | LC_ALL=C sort); do cat "$t/corpus/$f" >>"$t/expect"; done
[ "$(wc -c <"$t/all")" = "$(wc -c <"$t/expect")" ]
tap_ok $? "the shards decode to every byte of the corpus ($(wc -c <"$t/expect") bytes)"
"$TOK" encode --tokenizer "$data/hf" --out "$t/one/c" "$t/corpus" >/dev/null 2>"$t/err"
[ $? = 2 ] && grep -q "c_train_000000.bin exists" "$t/err"
tap_ok $? "encode never replaces shards"

# Vocabularies that do not agree: refused (exit 2) naming the file and line.
bad() { # bad DESCRIPTION EXPECTED-MESSAGE: the pair in $t/bad
  "$TOK" encode --tokenizer "$t/bad" --ids "$data/prose.txt" >/dev/null 2>"$t/err"
  rc=$?
  [ $rc = 2 ] && grep -qF "$2" "$t/err"
  tap_ok $? "refused: $1 (exit $rc: $(head -c 160 "$t/err"))"
}
mkdir "$t/bad"
cp "$data/hf/vocab.json" "$t/bad/"
sed '3s/.*/zz qq/' "$data/hf/merges.txt" >"$t/bad/merges.txt"
bad "a merge of unknown tokens" "merges.txt:3: \"zz\" is not a token"
sed '4s/.*/i/' "$data/hf/merges.txt" >"$t/bad/merges.txt"
bad "a line of one token" "merges.txt:4: expected two tokens"
sed '5s/.*/Ġ Ġa/' "$data/hf/merges.txt" >"$t/bad/merges.txt"
bad "a merge whose result is not in vocab.json" "merges.txt:5: \"ĠĠa\""
sed '6s/.*/Ġ a/' "$data/hf/merges.txt" >"$t/bad/merges.txt"
bad "a merge listed twice" "merges.txt:6: the merge \"Ġ a\" is listed twice"
cp "$data/hf/merges.txt" "$t/bad/"
sed 's/"a":/"aaaaq":/' "$data/hf/vocab.json" >"$t/bad/vocab.json"
bad "a vocabulary without a byte" "no token for byte 0x61"
sed 's/"b":\([0-9]*\),/"b":\1,"bb":\1,/' "$data/hf/vocab.json" >"$t/bad/vocab.json"
bad "two tokens with one id" "tokens \"b\" and \"bb\" both have id"
printf '{"a": 1,' >"$t/bad/vocab.json"
bad "vocab.json that is not JSON" "not a JSON object"
{ cat "$data/hf/vocab.json"; printf '\n{"x": 1}\n'; } >"$t/bad/vocab.json"
bad "text after vocab.json's object (another file joined on)" "text after the JSON object at byte"
sed 's/"b":[0-9]*,/"b":70000,/' "$data/hf/vocab.json" >"$t/bad/vocab.json"
bad "an id beyond uint16 shards" "the id must be an integer 0..65535"
rm -f "$t/bad/vocab.json" && truncate -s 65M "$t/bad/vocab.json" # sparse: no disk used
bad "a vocab.json over 64 MiB, with a hint for a tokenizer file" \
  "more than a tokenizer file may have (64 MiB; hint: GPT-2's vocab.json is 1 MiB"
# An option the command does not take, and an empty --out (it wrote /vocab.json): refused, nothing
# written.
refused() { # refused EXPECTED-MESSAGE ARGS...
  r_msg=$1
  shift
  "$TOK" "$@" >/dev/null 2>"$t/err"
  rc=$?
  [ $rc = 2 ] && grep -q -- "$r_msg" "$t/err" && [ ! -e "$t/never" ] && [ ! -e /vocab.json ]
  tap_ok $? "refused: $* (exit $rc: $(head -c 160 "$t/err"))"
}
refused "train takes --out --vocab-size --min-frequency, not --tokenizer" train --out "$t/never" --vocab-size 300 \
  --tokenizer "$data/hf" "$data/prose.txt"
refused "encode --ids takes --tokenizer --ids, not --out" encode --tokenizer "$data/hf" --ids "$data/prose.txt" \
  --out "$t/never"
refused "encode --ids FILE encodes FILE alone" encode --tokenizer "$data/hf" --ids "$data/prose.txt" "$data/prose.txt"
refused "--out: an empty name" train --out "" --vocab-size 300 "$data/prose.txt"
tap_done
