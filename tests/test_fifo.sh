#!/bin/sh
# A FIFO (or any file that is not regular) named as an input is refused at once (issue 36): every
# input option of every program, one line naming the path and what it is, exit 2. Before, open(2)
# waited forever for a writer. Each case runs under a timeout, so a regression fails here instead of
# hanging the suite.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
fifo="$tap_tmp/in.fifo"
mkfifo "$fifo" || tap_skip_all "mkfifo failed"
deck="$top_src/inputs/mlp-fmnist.deck"
graph="$top_src/inputs/gpt-2.5b.graph"
prof="$top_src/tests/data/deeppool/A100_vgg.prof"
net="--network a100 --ranks 8 --batch 32"

# refused TEXT PROGRAM ARGS...: PROGRAM ends within 10 s with exit 2 and one line naming the FIFO
refused() {
  text=$1; shift
  timeout 10 "$@" </dev/null >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
  rc=$?
  [ $rc = 2 ] && [ "$(wc -l <"$tap_tmp/err.txt")" = 1 ] && grep -q "in\.fifo: not a regular file but a FIFO" "$tap_tmp/err.txt"
  tap_ok $? "$text: exit $rc ($(head -c 200 "$tap_tmp/err.txt"))"
}

refused "surge-train DECK" "$SURGE_TRAIN" "$fifo"
refused "surge-sweep DECK" "$top_build/surge-sweep" "$fifo" --count
refused "surge-profile DECK" "$top_build/surge-profile" "$fifo"
refused "surge-plan DECK" "$top_build/surge-plan" "$fifo"
refused "surge-plan --profile" "$top_build/surge-plan" "$deck" --profile "$fifo"
refused "surge-plan --graph" "$top_build/surge-plan" --graph "$fifo" $net
refused "surge-plan --deeppool" "$top_build/surge-plan" --deeppool "$fifo" $net
refused "surge-plan --structure" "$top_build/surge-plan" --deeppool "$prof" --structure "$fifo" $net
refused "surge-sim --graph" "$top_build/surge-sim" --graph "$fifo" $net
refused "surge-sim --bg-deeppool" "$top_build/surge-sim" --deeppool "$prof" --bg-deeppool "$fifo" $net
refused "surge-sim --plan" "$top_build/surge-sim" --deeppool "$prof" --plan "$fifo" $net
refused "surge-train [parallel] plan" "$SURGE_TRAIN" "$deck" -D parallel.mode=burst -D "parallel.plan=$fifo" \
  -D "run.out_dir=$tap_tmp/run" -D data.source=synthetic -D run.steps=1
refused "surge-train [data] path (text)" "$SURGE_TRAIN" "$top_src/inputs/gpt-fortunes.deck" -D "data.path=$fifo" \
  -D "run.out_dir=$tap_tmp/run2" -D run.steps=1
refused "surge-report LOG" "$top_build/surge-report" "$fifo"
refused "surge-report LOG LOG (a table)" "$top_build/surge-report" "$fifo" "$fifo"
# an output that exists is never replaced: surge-sweep --write-deck onto a FIFO says so at once
timeout 10 "$top_build/surge-sweep" "$top_src/inputs/lr-sweep.deck" --write-deck 0 "$fifo" >/dev/null 2>"$tap_tmp/err.txt"
rc=$?
[ $rc = 2 ] && grep -q "in\.fifo: the file exists" "$tap_tmp/err.txt"
tap_ok $? "surge-sweep --write-deck onto a FIFO: exit $rc ($(head -c 200 "$tap_tmp/err.txt"))"
mkdir -p "$tap_tmp/dir"
timeout 20 "$top_build/surge-plan" --graph "$tap_tmp/dir" $net >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && grep -q "dir: not a regular file but a directory" "$tap_tmp/err.txt"
tap_ok $? "a directory as a graph file: named as a directory ($(head -c 200 "$tap_tmp/err.txt"))"
tap_done
