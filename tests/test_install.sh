#!/bin/sh
# What make install puts in place works away from the source tree (found by trying the installed
# programs as an administrator and a user would):
#  - the job scripts' default decks are the installed ones (they named inputs/ of the source tree,
#    so an installed train.sbatch submitted from anywhere failed with "cannot open the deck");
#  - make-corpus.sh, which the shipped gpt-bpe and gpt2-124m decks need, is installed and finds the
#    surge-tokenize on PATH;
#  - the README's and the docs' links resolve among the installed documents (they were installed
#    flat, breaking every "doc/NAME.md" link of the README);
#  - make uninstall leaves no file behind.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
stage="$tap_tmp/stage"
# a make of its own (not the make check that runs this test: its flags and jobs stay there)
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "${MAKE:-make}" -s -C "$top_build" install DESTDIR="$stage" >"$tap_tmp/install.txt" 2>&1
tap_ok $? "make install DESTDIR=...: $(find "$stage" -type f | wc -l) files"

scripts=$(find "$stage" -path '*/jobscripts/*.sbatch' | sort)
n=0 bad=""
for s in $scripts; do
  inputs=$(sed -n 's/^SURGE_INPUTS=\${SURGE_INPUTS:-\(.*\)}$/\1/p' "$s")
  decks=$(sed -n 's/^[A-Z_]*DECK=\${[12]:-\$SURGE_INPUTS\/\(.*\)}$/\1/p' "$s")
  for d in $decks; do
    n=$((n + 1))
    case $inputs in /*) [ -f "$stage$inputs/$d" ] || bad="$bad $(basename "$s"):$inputs/$d" ;; *) bad="$bad $(basename "$s"):$inputs" ;; esac
  done
done
[ "$n" -ge 5 ] && [ -z "$bad" ]
tap_ok $? "the installed job scripts' $n default decks are installed decks, by absolute path${bad:+: not:$bad}"

corpus=$(find "$stage" -path '*/tools/make-corpus.sh')
bin=$(dirname "$(find "$stage" -path '*/bin/surge-tokenize')")
[ -x "$corpus" ]
tap_ok $? "make-corpus.sh is installed (${corpus#"$stage"})"
: >"$tap_tmp/file" # OUT under a file: the script stops at its mkdir, after finding surge-tokenize
out=$(cd / && env -u SURGE_BUILD PATH="$bin:/usr/bin:/bin" sh "$corpus" "$tap_tmp/file/corpus" 12 2>&1 | head -n 1)
case $out in *"surge-tokenize not found"*) false ;; *) true ;; esac
tap_ok $? "the installed make-corpus.sh finds the installed surge-tokenize on PATH: $out"

docs=$(dirname "$(find "$stage" -path '*/doc/surge/README.md')")
broken=""
links=0
for f in "$docs/README.md" "$docs"/doc/*.md; do
  for l in $(grep -o '](\([^)#:]*\.\(md\|svg\)\)\(#[^)]*\)\?)' "$f" | sed 's/^](\([^)#]*\).*/\1/'); do
    links=$((links + 1))
    [ -e "$(dirname "$f")/$l" ] || broken="$broken ${f#"$docs/"}:$l"
  done
done
[ "$links" -gt 20 ] && [ -z "$broken" ]
tap_ok $? "the installed README and docs: $links links to documents, all resolve${broken:+; broken:$broken}"

env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "${MAKE:-make}" -s -C "$top_build" uninstall DESTDIR="$stage" >"$tap_tmp/uninstall.txt" 2>&1
rc=$?
left=$(find "$stage" -type f | head -n 3)
[ $rc = 0 ] && [ -z "$left" ]
tap_ok $? "make uninstall leaves no file${left:+: $left}"
tap_done
