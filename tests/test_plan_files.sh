#!/bin/sh
# surge-plan without a deck: DeepPool's A100 profiles (VGG-16 and WRN-101-2 as chains, Inception-v3
# through its structure file) with DeepPool's A100 network; the frontier of VGG-16 at B = 32 on 8
# ranks and at B = 64 on 64 printed; --budget and --deadline pick frontier plans within them; a plan
# file carries its predictions; --write-graph exports a graph file that plans the same; bad input
# exits 2 with one line naming file:line.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
plan="$top_build/surge-plan"
dp="$top_src/tests/data/deeppool"
vgg="--deeppool $dp/A100_vgg.prof --network a100"

"$plan" $vgg --ranks 8 --batch 32 --frontier --rows 5 >"$tap_tmp/vgg8.txt" 2>&1
tap_ok $? "VGG-16, B = 32, G = 8 plans"
grep -q '^imported .*A100_vgg.prof: 37 layers at 9 per-rank batches, 23 nodes; 15 in-place ReLUs' "$tap_tmp/vgg8.txt" &&
  grep -q '^Pareto frontier of iteration time against rank-time: 63 plans no other plan beats in both (exact)' "$tap_tmp/vgg8.txt" &&
  grep -Eq '^ +10842\.355 +69825\.956 ' "$tap_tmp/vgg8.txt" && grep -Eq '^ +53750\.000 +53750\.000 +1\.000 +1 ' "$tap_tmp/vgg8.txt"
tap_ok $? "its frontier: 63 plans, from one rank (53750 us) to the fastest (10842.355 us, 69825.956 rank-us)"

"$plan" $vgg --ranks 64 --batch 64 --frontier --rows 5 >"$tap_tmp/vgg64.txt" 2>&1 &&
  grep -q ': 211 plans no other plan beats in both (exact)' "$tap_tmp/vgg64.txt" &&
  grep -Eq '^ +6245\.167 +243038\.997 ' "$tap_tmp/vgg64.txt"
tap_ok $? "VGG-16, B = 64, G = 64: 211 plans, the fastest 6245.167 us"

"$plan" $vgg --ranks 8 --batch 32 --budget 60000 -o "$tap_tmp/lean.plan" >"$tap_tmp/budget.txt" 2>&1
rc=$?
rank=$(sed -n 's/^rank-time: \([0-9.]*\) rank-us.*/\1/p' "$tap_tmp/budget.txt")
[ $rc = 0 ] && grep -q '^fastest plan within the rank-time budget' "$tap_tmp/budget.txt" &&
  awk -v r="$rank" 'BEGIN { exit !(r > 0 && r <= 60000) }'
tap_ok $? "--budget 60000: the fastest plan within 60000 rank-us ($rank)"
grep -q '^predicted_iteration_us ' "$tap_tmp/lean.plan" && grep -q '^predicted_rank_us ' "$tap_tmp/lean.plan" &&
  grep -q '^model deeppool$' "$tap_tmp/lean.plan"
tap_ok $? "the plan file carries its predictions as data"

"$plan" $vgg --ranks 8 --batch 32 --deadline 20000 >"$tap_tmp/deadline.txt" 2>&1
rc=$?
iter=$(sed -n 's/^predicted iteration time: \([0-9.]*\) us.*/\1/p' "$tap_tmp/deadline.txt")
[ $rc = 0 ] && grep -q '^leanest plan within the deadline' "$tap_tmp/deadline.txt" &&
  awk -v t="$iter" 'BEGIN { exit !(t > 0 && t <= 20000) }'
tap_ok $? "--deadline 20000: the leanest plan within 20000 us ($iter us)"

"$plan" $vgg --ranks 8 --batch 32 --deadline 100 >"$tap_tmp/err.txt" 2>&1
[ $? = 2 ] && grep -q 'no plan is that fast (the fastest takes 10842.355 us)' "$tap_tmp/err.txt"
tap_ok $? "an impossible deadline exits 2 naming the fastest plan's time"

# a limit that data parallelism breaks: the table says so, naming the first nodes that break it
"$plan" $vgg --ranks 8 --batch 32 --amp 1.2 >"$tap_tmp/amp.txt" 2>&1 &&
  grep -q '^note: data parallelism predicts 13911.988 us, faster than this plan, and 13 nodes break the limit A = 1.2 there (conv2d_1+relu 1.21, ' \
    "$tap_tmp/amp.txt" && ! "$plan" $vgg --ranks 8 --batch 32 --amp 2 2>&1 | grep -q '^note: data parallelism'
tap_ok $? "a limit data parallelism breaks is named under the table (A = 1.2), none where the plan wins (A = 2)"
# ... by its groups where nodes share a rank set: the embedding with its tied output layer, each GELU
# with its linear, all nodes counted
"$plan" --graph "$top_src/inputs/gpt-2.5b.graph" --ranks 16 --batch 16 --amp 2 >"$tap_tmp/amp-gpt.txt" 2>&1 &&
  grep -q '^note: data parallelism predicts 881701.532 us, faster than this plan, and 471 nodes break the limit A = 2 there (embed with 1 more 6.99, l0.ln1 122.55, l0.qkv 7.01, ...)$' \
    "$tap_tmp/amp-gpt.txt"
tap_ok $? "the note names a group of nodes on one rank set once, by its first node: $(grep '^note' "$tap_tmp/amp-gpt.txt")"

"$plan" $vgg --ranks 8 --batch 32 --write-graph "$tap_tmp/vgg.graph" >"$tap_tmp/w.txt" 2>&1 &&
  "$plan" --graph "$tap_tmp/vgg.graph" --ranks 8 --batch 32 >"$tap_tmp/g.txt" 2>&1 &&
  [ "$(grep '^predicted iteration' "$tap_tmp/w.txt")" = "$(grep '^predicted iteration' "$tap_tmp/g.txt")" ]
tap_ok $? "--write-graph: the graph file plans the same ($(grep '^predicted iteration' "$tap_tmp/g.txt" | cut -c1-45))"

# a global batch whose per-rank share overflows an int (it was a division by zero: exit 136)
"$plan" --graph "$top_src/inputs/gpt-2.5b.graph" --ranks 8 --batch 2147483647 >/dev/null 2>"$tap_tmp/err.txt"
rc=$?
[ $rc = 2 ] && grep -q 'global batch 2147483647 (need 1 to 1073741824)' "$tap_tmp/err.txt"
tap_ok $? "--batch 2^31-1: exit $rc: $(cat "$tap_tmp/err.txt")"
# options of a table not asked for are refused, not ignored
"$plan" --graph "$top_src/inputs/gpt-2.5b.graph" --ranks 8 --batch 8 --rows 5 >/dev/null 2>"$tap_tmp/err.txt"
rc=$?
[ $rc = 2 ] && grep -q -- '--rows sets the rows of --frontier' "$tap_tmp/err.txt"
tap_ok $? "--rows without --frontier: exit $rc: $(cat "$tap_tmp/err.txt")"

# a join on its fork's ranks inside a branch that would start elsewhere: the inner block's join j1
# must share s's ranks, so the inner block may not move to rank 1 as a lane beside c (which would
# take 246 us); the fastest plan that keeps both rules takes 344 us
"$plan" --graph "$top_src/tests/data/graphs/nest.graph" --ranks 2 --batch 2 --frontier >"$tap_tmp/nest.txt" 2>&1 &&
  grep -Eq '^ +1 +s +linear +1 +0 ' "$tap_tmp/nest.txt" && grep -Eq '^ +4 +j1 +add +1 +0 ' "$tap_tmp/nest.txt" &&
  grep -q '^predicted iteration time: 344.001 us' "$tap_tmp/nest.txt"
tap_ok $? "a join tied to its fork stays on the fork's ranks in a nested block: $(grep '^predicted' "$tap_tmp/nest.txt")"

"$plan" --deeppool "$dp/A100_wrn.prof" --network a100 --ranks 8 --batch 32 >"$tap_tmp/wrn.txt" 2>&1 &&
  grep -q '39 layers at 8 per-rank batches, 39 nodes' "$tap_tmp/wrn.txt"
tap_ok $? "WRN-101-2 imports and plans"
"$plan" --deeppool "$dp/A100_inception.prof" --structure "$dp/inception-v3.graph" --network a100 --ranks 8 \
  --batch 32 >"$tap_tmp/inc.txt" 2>&1 &&
  grep -q 'note: 18 nodes have no row in the profile and cost 1 us' "$tap_tmp/inc.txt" &&
  grep -q '^ranks used: [1-8] of 8' "$tap_tmp/inc.txt"
tap_ok $? "Inception-v3 imports through its structure (18 nodes without a row, named) and plans within 8 ranks"

cat >"$tap_tmp/bad.graph" <<'G'
surge-graph 1
batches 1 2
input input - 64 0
a relu input 64 0 5 3
b relu nope 64 0 5 3
end
G
"$plan" --graph "$tap_tmp/bad.graph" --network a100 --ranks 2 --batch 2 >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && [ "$(wc -l <"$tap_tmp/err.txt")" = 1 ] && grep -q "bad.graph:5: node 'b' takes input 'nope', which no line defines" "$tap_tmp/err.txt"
tap_ok $? "a graph file with an unknown input: exit 2, one line naming file:line"
sed 's/^b relu nope/b relu a/' "$tap_tmp/bad.graph" >"$tap_tmp/ok.graph"
"$plan" --graph "$tap_tmp/ok.graph" --ranks 2 --batch 2 >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && grep -q "gives no p2p_alpha_us: add a 'p2p_alpha_us VALUE' line, give --p2p-latency" "$tap_tmp/err.txt"
tap_ok $? "no network constants: exit 2 naming how to give them"
"$plan" --graph "$tap_tmp/ok.graph" --network a100 --ranks 2 --batch 2 --amp 0.5 >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && grep -q -- "--amp 0.5: expected a number >= 1 or 'none'" "$tap_tmp/err.txt"
tap_ok $? "a bad --amp: exit 2"
# a NUL byte inside a line (it would have cut the line short, unseen)
{ sed -n 1,3p "$tap_tmp/ok.graph"; printf 'a relu input 64 0 5 3\000 junk\n'; sed -n '5,$p' "$tap_tmp/ok.graph"; } \
  >"$tap_tmp/nul.graph"
"$plan" --graph "$tap_tmp/nul.graph" --network a100 --ranks 2 --batch 2 >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && [ "$(wc -l <"$tap_tmp/err.txt")" = 1 ] && grep -q "nul.graph:4: control character 0x00 at byte 22" "$tap_tmp/err.txt"
tap_ok $? "a NUL byte in a line: exit 2 naming file:line ($(cat "$tap_tmp/err.txt"))"
# a line over the 1 MiB bound is named by its own number (it was the line before's)
{ sed -n 1,4p "$tap_tmp/ok.graph"; printf '# '; head -c 1100000 /dev/zero | tr '\0' x; printf '\n'; sed -n '5,$p' "$tap_tmp/ok.graph"; } \
  >"$tap_tmp/long.graph"
"$plan" --graph "$tap_tmp/long.graph" --network a100 --ranks 2 --batch 2 >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && grep -q "long.graph:5: line longer than 1048576 bytes" "$tap_tmp/err.txt"
tap_ok $? "a line of 1.1 MB: exit 2 naming its line ($(cat "$tap_tmp/err.txt"))"
# DeepPool profiles the graph reader's bounds refuse (issue 36): the importer applies them, so that
# --write-graph never writes a graph that --graph refuses. A negative downsampleParams made -1.1e15
# parameter bytes (exit 0); an input of 2^72 bytes per sample overflowed the graph file's bound.
sed 's/"downsampleParams":\[\[64,256,1\],256\]/"downsampleParams":[[-16777216,16777216,1],256]/' "$dp/A100_wrn.prof" \
  >"$tap_tmp/neg.prof"
"$plan" --deeppool "$tap_tmp/neg.prof" --network a100 --ranks 8 --batch 32 --write-graph "$tap_tmp/neg.graph" \
  >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && [ "$(wc -l <"$tap_tmp/err.txt")" = 1 ] &&
  grep -q "neg.prof:4: ResnetBottleneck row: 'downsampleParams' holds -16777216, out of range 0..16777216" "$tap_tmp/err.txt"
tap_ok $? "a DeepPool profile with a negative downsampleParams: exit 2 naming file:line ($(head -c 200 "$tap_tmp/err.txt"))"
printf 'ReLU2d{"inplace":false}[32][16777216,16777216,16777216] 1 1 1\n  SUM(avg) 1\n' >"$tap_tmp/huge.prof"
"$plan" --deeppool "$tap_tmp/huge.prof" --network a100 --ranks 8 --batch 32 >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && [ "$(wc -l <"$tap_tmp/err.txt")" = 1 ] &&
  grep -q "huge.prof:1: ReLU2d{.*}: its input bytes per sample, .*, are not in \[0, 1e+18\]" "$tap_tmp/err.txt"
tap_ok $? "a DeepPool row of 2^72 input bytes per sample: exit 2 naming file:line ($(head -c 200 "$tap_tmp/err.txt"))"
sed 's/"in_channels":64,"kernel_size":3,/"in_channels":64,"kernel_size":0,/' "$dp/A100_vgg.prof" >"$tap_tmp/k0.prof"
"$plan" --deeppool "$tap_tmp/k0.prof" --network a100 --ranks 8 --batch 32 >/dev/null 2>"$tap_tmp/err.txt"
[ $? = 2 ] && [ "$(wc -l <"$tap_tmp/err.txt")" = 1 ] && grep -q "k0.prof:3: conv2d row: kernel_size 0x0 (each at least 1)" \
  "$tap_tmp/err.txt"
tap_ok $? "a DeepPool convolution of kernel_size 0 (was planned): exit 2 naming file:line ($(head -c 200 "$tap_tmp/err.txt"))"
tap_done
