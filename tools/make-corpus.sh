#!/bin/sh
# A real English corpus, tokenized: the Linux kernel's documentation (Debian package linux-doc-6.1,
# which tools/install-deps.sh installs; 24 MB of reStructuredText and text in about 5000 files).
#   tools/make-corpus.sh [OUT [VOCAB]]     default OUT ~/.cache/surge/linux-doc, VOCAB 4096
# writes
#   OUT/text/...                       the documents, decompressed (once, shared by every VOCAB)
#   OUT/tok-VOCAB/vocab.json, merges.txt   a byte-level BPE vocabulary trained on them (surge-tokenize train)
#   OUT/shards-VOCAB/doc_{train,val}_*.bin  llm.c shards, every 20th document for validation (encode,
#                                          on 2 ranks when mpiexec is there)
# The decks inputs/gpt-bpe.deck (VOCAB 4096) and inputs/gpt2-124m.deck (VOCAB 50257) read them.
# Finished steps are kept: run it again after an interruption. surge-tokenize is found in
# $SURGE_BUILD, else in the source tree's _build, else on PATH (an installed copy of this script,
# $(pkgdatadir)/tools/make-corpus.sh).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$HOME/.cache/surge/linux-doc}
vocab=${2:-4096}
tok=${SURGE_BUILD:-$top/_build}/surge-tokenize
if [ -z "${SURGE_BUILD:-}" ] && [ ! -x "$tok" ]; then tok=$(command -v surge-tokenize || echo "$tok"); fi
src=/usr/share/doc/linux-doc-6.1/Documentation
case $vocab in *[!0-9]* | '') echo "make-corpus: VOCAB must be a number, got '$vocab'" >&2; exit 2 ;; esac
[ -x "$tok" ] || { echo "make-corpus: $tok not found (build first: tools/build.sh, or put the installed surge-tokenize on PATH)" >&2; exit 2; }
[ -d "$src" ] || { echo "make-corpus: $src missing (tools/install-deps.sh installs linux-doc-6.1)" >&2; exit 2; }
mkdir -p "$out"
if [ ! -e "$out/text/.done" ]; then
  rm -rf "$out/text.partial"
  mkdir -p "$out/text.partial"
  (cd "$src" && find . -type f \( -name '*.rst' -o -name '*.rst.gz' -o -name '*.txt' -o -name '*.txt.gz' \) | LC_ALL=C sort) |
    while IFS= read -r f; do
      dest="$out/text.partial/${f%.gz}"
      mkdir -p "$(dirname "$dest")"
      case $f in *.gz) gzip -dc "$src/$f" >"$dest" ;; *) cp "$src/$f" "$dest" ;; esac
    done
  touch "$out/text.partial/.done"
  mv "$out/text.partial" "$out/text"
fi
echo "make-corpus: $(find "$out/text" -type f ! -name .done | wc -l) documents, $(du -sh "$out/text" | cut -f1) in $out/text"
if [ ! -e "$out/tok-$vocab/merges.txt" ]; then
  rm -rf "$out/tok-$vocab.partial"
  mkdir -p "$out/tok-$vocab.partial"
  "$tok" train --out "$out/tok-$vocab.partial" --vocab-size "$vocab" "$out/text"
  mv "$out/tok-$vocab.partial" "$out/tok-$vocab"
fi
if [ ! -e "$out/shards-$vocab/.done" ]; then
  rm -rf "$out/shards-$vocab"
  mkdir -p "$out/shards-$vocab"
  launch=""
  command -v mpiexec >/dev/null 2>&1 && launch="mpiexec -n 2"
  [ "$(id -u)" = 0 ] && [ -n "$launch" ] && launch="mpiexec --allow-run-as-root -n 2"
  $launch "$tok" encode --tokenizer "$out/tok-$vocab" --out "$out/shards-$vocab/doc" --val-fraction 0.05 "$out/text"
  touch "$out/shards-$vocab/.done"
fi
echo "make-corpus: [data] path = $out/shards-$vocab, tokenizer = $out/tok-$vocab"
