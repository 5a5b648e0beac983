#!/bin/sh
# Messages say what the file holds (issue 36): a profile's format version of 2^62 is printed as
# 2^62 (it was read as a 32-bit number and printed as 4294967295), and a number just past a bound
# is printed exactly, beside the bound as the check applies it (it read "time 1e+12 is not in
# [0, 1e+12]").
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
plan="$top_build/surge-plan"
net="--network a100 --ranks 2 --batch 2"

# says TEXT PATTERN PROGRAM ARGS...: exit 2 and one line matching PATTERN
says() {
  text=$1 pattern=$2; shift 2
  timeout 60 "$@" >/dev/null 2>"$tap_tmp/err.txt" </dev/null
  rc=$?
  [ $rc = 2 ] && [ "$(wc -l <"$tap_tmp/err.txt")" = 1 ] && grep -q -e "$pattern" "$tap_tmp/err.txt"
  tap_ok $? "$text: exit $rc ($(head -c 240 "$tap_tmp/err.txt"))"
}

deck="$tap_tmp/tiny.deck"
printf '[model]\nzoo = mlp\nmlp_hidden = 8\n[data]\nsource = synthetic\nsynthetic_samples = 64\n[train]\nglobal_batch = 4\n' >"$deck"
timeout 120 "$top_build/surge-profile" "$deck" -o "$tap_tmp/p.h5" --warmup 1 --repeats 2 >/dev/null 2>&1
tap_ok $? "surge-profile: a profile of a small mlp"
cp "$tap_tmp/p.h5" "$tap_tmp/v.h5" && "$top_build/tests/h5_hostile" "$tap_tmp/v.h5" /profile i64:version=4611686018427387904
says "a profile of format version 2^62" "v.h5: /profile format version 4611686018427387904; this program reads version 1 to 2" \
  "$plan" "$deck" --profile "$tap_tmp/v.h5"
cp "$tap_tmp/p.h5" "$tap_tmp/n.h5" && "$top_build/tests/h5_hostile" "$tap_tmp/n.h5" /profile i64:version=-1
says "a profile of format version -1" "n.h5: /profile format version -1;" "$plan" "$deck" --profile "$tap_tmp/n.h5"

printf 'surge-graph 1\nbatches 1 2\ninput input - 64 0\na relu input 64 0 1000000000000.0002 3\nend\n' >"$tap_tmp/t.graph"
says "a node time just past 1e12 us" "t.graph:4: node 'a': time '1000000000000.0002' for per-rank batch 1 is not a number in \[0, 1e+12\]" \
  "$plan" --graph "$tap_tmp/t.graph" $net
printf 'surge-graph 1\nbatches 1 2\nstep_us 1000000000000.0002\ninput input - 64 0\na relu input 64 0 5 3\nend\n' >"$tap_tmp/s.graph"
says "a step time just past 1e12 us" "s.graph:3: step_us 1000000000000.0002 out of range 0..1e+12" \
  "$plan" --graph "$tap_tmp/s.graph" $net
printf 'ReLU2d{"inplace":false}[32][64,8,8] 1 1000000000000.0002 1\n  SUM(avg) 1\n' >"$tap_tmp/f.prof"
says "a DeepPool forward time just past 1e12 us" "f.prof:1: forward time (us) 1000000000000.0002 out of range 0..1e+12" \
  "$plan" --deeppool "$tap_tmp/f.prof" $net
printf 'surge-graph 1\nbatches 1 2\np2p_alpha_us 1\nar_alpha_us 1\nar_bytes_per_us 1\np2p_bytes_per_us 1000000000000.0002\ninput input - 64 0\na relu input 64 0 5 3\nend\n' \
  >"$tap_tmp/b.graph"
says "a bandwidth just past 1e12 bytes/us" "b.graph:6: p2p_bytes_per_us 1000000000000.0002 out of range 1e-06..1e+12" \
  "$plan" --graph "$tap_tmp/b.graph" --ranks 2 --batch 2
# the live progress bar is redrawn at most 5 times a second: Open MPI gives the ranks a terminal even
# when mpiexec's output goes to a file, where each redraw is a line (every step's before: 400 lines
# of the demo's 48 KB)
t0=$(date +%s.%N)
timeout 120 "$mpiexec" -n 1 "$SURGE_TRAIN" "$deck" -D run.steps=2000 -D run.print_every=100000 -D run.eval_every=0 \
  -D "run.out_dir=$tap_tmp/bar" >"$tap_tmp/bar.txt" 2>&1
rc=$?
t1=$(date +%s.%N)
redraws=$(tr '\r' '\n' <"$tap_tmp/bar.txt" | grep -c '^.\[K\[')
[ $rc = 0 ] && awk -v n="$redraws" -v a="$t0" -v b="$t1" 'BEGIN { exit !(n <= 5 * (b - a) + 2) }'
tap_ok $? "2000 steps under mpiexec, output to a file: $redraws bar redraws in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
tap_done
