#!/bin/sh
# Strings from files never reach the terminal raw (issue 36): an ESC, a C1 control (U+009B, CSI),
# U+202E (right-to-left override) and invalid UTF-8 (a 0xff byte) in every kind of file whose text
# is printed (graph files, structure files, DeepPool profiles, plan files, surge-profile profiles,
# surge-sim results) come out escaped (io/printable.h) or are refused with the character named
# escaped; nothing of them is in the programs' output as bytes.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
plan="$top_build/surge-plan"
hostile="$top_build/tests/h5_hostile"
net="--network a100 --ranks 2 --batch 2"
esc=$(printf '\033') c1=$(printf '\302\233') rlo=$(printf '\342\200\256') bad=$(printf '\377')

# clean TEXT FILE: FILE (a program's stdout and stderr) holds none of the four as raw bytes
clean() {
  LC_ALL=C grep -q -e "$esc" -e "$c1" -e "$rlo" -e "$bad" "$2"
  [ $? = 1 ]
  tap_ok $? "$1: no raw ESC, C1, U+202E or 0xff in the output ($(LC_ALL=C tr -cd '\040-\176' <"$2" | head -c 200))"
}
# shown TEXT PATTERN PROGRAM ARGS...: PROGRAM's output is clean and matches PATTERN (the escape)
shown() {
  text=$1 pattern=$2; shift 2
  timeout 60 "$@" >"$tap_tmp/out.txt" 2>&1 </dev/null
  clean "$text" "$tap_tmp/out.txt"
  grep -q -e "$pattern" "$tap_tmp/out.txt"
  tap_ok $? "$text: shown as $pattern"
}

graph() { # graph FILE NAME: a two-node graph file whose second node is called NAME
  printf 'surge-graph 1\nbatches 1 2\ninput input - 64 0\n%s relu input 64 0 5 3\nend\n' "$2" >"$1"
}
n=0
for kind in c1 rlo bad; do
  eval "ch=\$$kind"
  case $kind in c1) want='\\u+009B' ;; rlo) want='\\u+202E' ;; bad) want='\\xff' ;; esac
  n=$((n + 1))
  graph "$tap_tmp/g$n.graph" "a${ch}b"
  shown "a graph file's node name with $kind" "g$n.graph:4: $want at byte 2 of the line" "$plan" --graph "$tap_tmp/g$n.graph" $net
  printf 'surge-graph 1\nmodel m%s\nbatches 1 2\ninput input - 64 0\na relu input 64 0 5 3\nend\n' "$ch" >"$tap_tmp/m$n.graph"
  shown "a graph file's model name with $kind" "m$n.graph:2: $want" "$plan" --graph "$tap_tmp/m$n.graph" $net
  printf 'surge-graph 1\ninput input - - -\nconv%s conv2d input - -\nend\n' "$ch" >"$tap_tmp/s$n.graph"
  shown "a structure file's node with $kind" "s$n.graph:3: $want" "$plan" --deeppool \
    "$top_src/tests/data/deeppool/A100_vgg.prof" --structure "$tap_tmp/s$n.graph" $net
  printf 'conv2d%s{"in_channels":3}[32][3,8,8] 1 1 1\n' "$ch" >"$tap_tmp/d$n.prof"
  shown "a DeepPool profile's layer type with $kind" "d$n.prof:1: $want" "$plan" --deeppool "$tap_tmp/d$n.prof" $net
done
# a plan file's model line, read against a graph (surge-sim --plan)
graph "$tap_tmp/ok.graph" b
"$plan" --graph "$tap_tmp/ok.graph" $net -o "$tap_tmp/ok.plan" >/dev/null 2>&1
sed "s/^model .*/model x${rlo}y${esc}[2J${c1}${bad}/" "$tap_tmp/ok.plan" >"$tap_tmp/bad.plan"
shown "a plan file's model with U+202E, ESC, C1 and 0xff" "bad.plan:2:" "$top_build/surge-sim" --graph "$tap_tmp/ok.graph" \
  $net --bg-batch 1 --plan "$tap_tmp/bad.plan"

# HDF5 files: surge-profile's /profile@model, surge-sim's /sim@model
deck="$tap_tmp/tiny.deck"
printf '[model]\nzoo = mlp\nmlp_hidden = 8\n[data]\nsource = synthetic\nsynthetic_samples = 64\n[train]\nglobal_batch = 4\n' >"$deck"
timeout 120 "$top_build/surge-profile" "$deck" -o "$tap_tmp/p.h5" --warmup 1 --repeats 2 >/dev/null 2>&1
tap_ok $? "surge-profile: a profile of a small mlp"
"$hostile" "$tap_tmp/p.h5" /profile 'str:model=m\x1b[31m\xc2\x9b\xe2\x80\xae\xff' &&
  shown "a profile's model with ESC, C1, U+202E and 0xff" "model = 'm\\\\x1b\[31m\\\\u+009B\\\\u+202E\\\\xff'" \
    "$plan" "$deck" --profile "$tap_tmp/p.h5"
"$top_build/surge-sim" --graph "$tap_tmp/ok.graph" --network a100 --pp 1 --micro-batches 2 --micro-batch 1 \
  -o "$tap_tmp/s.h5" >/dev/null 2>&1 &&
  "$hostile" "$tap_tmp/s.h5" /sim 'str:model=m\x1b]0;title\x07\xc2\x9b\xe2\x80\xae\xff' &&
  shown "a surge-sim file's model with ESC, BEL, C1, U+202E and 0xff" \
    "(model m\\\\x1b\]0;title\\\\x07\\\\u+009B\\\\u+202E\\\\xff)" "$top_build/surge-report" "$tap_tmp/s.h5"
tap_done
