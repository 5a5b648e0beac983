#!/bin/sh
# Activation recomputation ([train] recompute, doc/recompute.md) end to end on the small gpt of
# tests/gpt3d.sh (10 steps of AdamW with clipping):
#  - block and attention give bitwise the parameters of none on 1 rank (cpu, and block on ref), block
#    on dp 2 ranks, both on the 3d layout (tp 2 x pp 2, 4 micro-batches in 1F1B), block under a 2-rank
#    burst plan whose second block runs on one rank alone (its input staged across rank sets); a run
#    checkpointed with block resumes with none and ends where none ends (the key is not in the
#    checkpoint's configuration);
#  - the memory they report drops: the training state of the memory line (1 rank), each pipeline
#    stage's activation bytes (/pipeline/stages/activation_bytes, 3d); the 3d stage balance counts the
#    re-run forwards (a narrow gpt splits 3 + 1 with none, 2 + 2 with block); and with none, every rank of
#    every layout (1 rank, dp, 3d, burst) has its activation gradients in shared buffers, fewer than
#    the gradients (model_init_on's order: the burst executor's, the 3d stage's), and on every rank residual
#    adds pass their gradient's buffer to their inputs (nn/grad_alias.h), with the parameters bitwise those of
#    block and attention (whose segments' interiors share buffers their own way);
#  - profile, plan, run: surge-plan's plan of the gpt measured by surge-profile, with recompute = block,
#    keeps each block on one rank set and the tied output layer on its embedding's, and runs with
#    block and none, bitwise the same;
#  - bad input: exit 2 naming the deck's file:line (a bad value, a model without transformer blocks),
#    or the plan's nodes (a burst plan splitting a block over rank sets).
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
[ -d /usr/share/games/fortunes ] || tap_skip_all "the fortunes text (Debian package fortunes) is not installed"
. "$top_src/tests/gpt3d.sh"
base="$tap_tmp/base.deck"
gpt3d_deck "$base" 100
sed -i 's/^steps = 8/steps = 10/; s/^print_every = 8/print_every = 10/' "$base"
grid="-D parallel.mode=3d -D parallel.tp=2 -D parallel.pp=2 -D parallel.dp=1 -D parallel.micro_batches=4"
train() { # train NP OUT MODE ARGS...: surge-train into $tap_tmp/OUT (its output in OUT.txt)
  np=$1; out=$2; mode=$3; shift 3
  timeout 300 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$base" -D "run.out_dir=$tap_tmp/$out" -D "train.recompute=$mode" \
    "$@" >"$tap_tmp/$out.txt" 2>&1
}
same() { # same A B: the parameters of two runs bit for bit
  h5diff "$tap_tmp/$1/model.h5" "$tap_tmp/$2/model.h5" /params /params >/dev/null 2>&1
}
# state NAME: the run's training state in bytes (the memory line's MiB round too coarsely for this small gpt)
state() { sed -n 's/^memory by rank (bytes): .*; state \([0-9]*\);.*/\1/p' "$tap_tmp/$1.txt"; }
# shared NAME: every rank's activation gradients take turns in shared buffers, fewer than the
# gradients in them (the line "activation gradients per rank: shared buffers B... for gradients N...")
shared() {
  grep '^activation gradients per rank: shared buffers' "$tap_tmp/$1.txt" | awk '{
    for (f = 7; f <= NF && $f != "for"; f++) b[++k] = $f
    ok = k > 0 && NF == f + 1 + k
    for (i = 1; i <= k; i++) ok = ok && b[i] > 0 && b[i] < $(f + 1 + i)
    print; exit !ok } END { if (NR == 0) exit 1 }'
}
# passing NAME: on every rank, residual adds pass their gradient's buffer to their inputs (nn/grad_alias.h; the line
# "add inputs whose gradient is the add's own buffer per rank (no copy): N...", a count for each rank)
passing() {
  grep "^add inputs whose gradient is the add's own buffer per rank" "$tap_tmp/$1.txt" | awk -v ranks="$2" '{
    ok = NF == 13 + ranks; for (f = 14; f <= NF; f++) ok = ok && $f > 0
    print; exit !ok } END { if (NR == 0) exit 1 }'
}

# 1 rank
for mode in none block attention; do
  train 1 "one-$mode" "$mode"
  tap_ok $? "1 rank, recompute = $mode: 10 steps"
done
for mode in block attention; do
  same one-none "one-$mode"
  tap_ok $? "1 rank: recompute = $mode gives bitwise the parameters of none"
done
# not part of the trajectory: 5 steps with block, resumed to 10 with none = 10 steps of none
train 1 resumed block -D run.steps=5 -D checkpoint.every=5 &&
  train 1 resumed none --resume && grep -q "resumed from .*ckpt-00000005.h5" "$tap_tmp/resumed.txt"
tap_ok $? "1 rank: 5 steps with recompute = block resume to 10 with none (the checkpoint's configuration allows it)"
same one-none resumed
tap_ok $? "1 rank: the resumed run ends bitwise where 10 steps of none end"
# the ref backend (its fused add + layer norm composes its own layer norm) the same
for mode in none block; do
  train 1 "ref-$mode" "$mode" -D backend.name=ref
done
same ref-none ref-block
tap_ok $? "1 rank, ref backend: recompute = block gives bitwise the parameters of none"
a=$(state one-none) b=$(state one-block) c=$(state one-attention)
# (the gradients are pooled in every mode, model_init_on's order: what recomputation saves is activations)
awk -v a="$a" -v b="$b" -v c="$c" 'BEGIN { exit !(a > 0 && b < c && c < a) }'
tap_ok $? "1 rank: the training state drops, the more so the more is recomputed: none $a, attention $c, block $b bytes"
line=$(shared one-none)
tap_ok $? "1 rank: the activation gradients share buffers: $line"
line=$(passing one-none 1)
tap_ok $? "1 rank: the residual adds' inputs take their add's gradient buffer on every rank: $line"

# data parallelism on 2 ranks (each rank's half of the batch)
for mode in none block; do
  train 2 "dp-$mode" "$mode" -D parallel.mode=dp
done
same dp-none dp-block
tap_ok $? "dp on 2 ranks: recompute = block gives bitwise the parameters of none"
line=$(shared dp-none)
tap_ok $? "dp on 2 ranks: each rank's activation gradients share buffers (the burst executor's order): $line"
line=$(passing dp-none 2)
tap_ok $? "dp on 2 ranks: the residual adds' inputs take their add's gradient buffer on every rank: $line"

# 3d: tp 2 x pp 2, 4 micro-batches
for mode in none block attention; do
  # shellcheck disable=SC2086
  train 4 "3d-$mode" "$mode" $grid
  tap_ok $? "3d tp 2 x pp 2, recompute = $mode: 10 steps"
done
for mode in block attention; do
  same 3d-none "3d-$mode"
  tap_ok $? "3d: recompute = $mode gives bitwise the parameters of none"
done
line=$(shared 3d-none)
tap_ok $? "3d: each stage's activation gradients share buffers (one micro-batch's backward at a time): $line"
line=$(passing 3d-none 4)
tap_ok $? "3d: the residual adds' inputs take their add's gradient buffer on every rank: $line"
for mode in none block attention; do
  h5vals "$tap_tmp/3d-$mode/log.h5" /pipeline/stages/activation_bytes >"$tap_tmp/bytes-$mode"
done
paste "$tap_tmp/bytes-none" "$tap_tmp/bytes-block" "$tap_tmp/bytes-attention" |
  awk 'NF == 3 && $2 < $1 && $3 < $1 { n++ } END { exit !(n == 2 && NR == 2) }'
tap_ok $? "3d: every stage's activation bytes drop (none, block, attention): $(paste -d/ "$tap_tmp/bytes-none" \
  "$tap_tmp/bytes-block" "$tap_tmp/bytes-attention" | tr '\n' ' ')"
# [parallel] stages = 0 balances the re-run forwards too: a gpt of width 16 (4 blocks, pp 2) whose
# output layer weighs about a block splits 3 + 1 without recomputation and 2 + 2 with block
for mode in none block; do
  train 2 "narrow-$mode" "$mode" -D model.gpt_width=16 -D model.gpt_heads=2 -D parallel.mode=3d -D parallel.pp=2 \
    -D parallel.micro_batches=2 -D run.steps=1 -D run.print_every=1 -D checkpoint.every=0
  echo "$(h5vals "$tap_tmp/narrow-$mode/log.h5" /pipeline/stages/blocks | tr '\n' ' ')" >"$tap_tmp/split-$mode"
done
[ "$(cat "$tap_tmp/split-none")" = "3 1 " ] && [ "$(cat "$tap_tmp/split-block")" = "2 2 " ]
tap_ok $? "3d stages = 0: recompute = block counts the re-run forwards in the balance (blocks per stage: none $(cat \
  "$tap_tmp/split-none")-> block $(cat "$tap_tmp/split-block"))"

# burst on 2 ranks: the planner's plan, block 1 moved to rank 1 alone and the tied output layer to
# the embedding's rank set
"$top_build/tests/make_plan" "$base" 2 "$tap_tmp/planner.plan" >"$tap_tmp/planner.txt" 2>&1
awk '/^[0-9]+ / && NF == 5 && $2 ~ /^blocks\.1\./ { print $1, $2, 1, 1, 16; next }
     /^[0-9]+ / && NF == 5 && $2 == "lm_head" { print $1, $2, 1, 0, 16; next }
     /^[0-9]+ / && NF == 5 && $2 == "wte" { print $1, $2, 1, 0, 16; next } { print }' \
  "$tap_tmp/planner.plan" >"$tap_tmp/moved.plan"
burst="-D parallel.mode=burst -D parallel.plan=$tap_tmp/moved.plan"
for mode in none block; do
  # shellcheck disable=SC2086
  train 2 "burst-$mode" "$mode" $burst
  tap_ok $? "burst on 2 ranks, block 1 on rank 1 alone, recompute = $mode: 10 steps"
done
same burst-none burst-block
tap_ok $? "burst: recompute = block gives bitwise the parameters of none"
line=$(shared burst-none)
tap_ok $? "burst on 2 ranks: each rank's activation gradients share buffers (staged inputs keep their own): $line"
line=$(passing burst-none 2)
tap_ok $? "burst on 2 ranks: the residual adds' inputs take their add's gradient buffer on every rank: $line"

# profile, plan, run: surge-profile measures the gpt on 2 ranks, surge-plan plans it with recompute =
# block under A = 2, and the plan runs as it is, with block and with none (bitwise the same): each
# block on one rank set, the output layer on the embedding's, each GELU on its linear's
timeout 120 "$mpiexec" -n 2 "$top_build/surge-profile" "$base" -D train.recompute=block --warmup 1 --repeats 3 \
  -o "$tap_tmp/gpt.prof.h5" >"$tap_tmp/profile.txt" 2>&1 &&
  grep -q '^note: measured without \[train\] recompute = block: surge-plan adds' "$tap_tmp/profile.txt" &&
  "$top_build/surge-plan" "$base" -D train.recompute=block --profile "$tap_tmp/gpt.prof.h5" --amp 2 \
    -o "$tap_tmp/measured.plan" >"$tap_tmp/plan.txt" 2>&1
rc=$?
# the plan's rank sets as "name n@first" lines; kept: every block's nodes, the tied pair, GELU and fc agree
sets=$(awk '/^[0-9]+ / && NF == 5 { print $2, $3 "@" $4 }' "$tap_tmp/measured.plan")
echo "$sets" | awk '{ split($1, p, "."); k = p[1] == "blocks" ? "b" p[2] : $1 == "lm_head" ? "wte" : $1; n++ }
  k in set && set[k] != $2 { bad++ } { set[k] = $2 } END { exit !(n == 44 && bad == 0) }'
[ $? = 0 ] && [ $rc = 0 ]
kept=$?
runs=$(echo "$sets" | awk '{ print $2 }' | uniq -c | awk '{ printf "%s%sx%s", s, $1, $2; s = " " }')
what="surge-profile on 2 ranks, surge-plan with recompute = block, A = 2: each block on one rank set"
tap_ok $kept "$what, the output layer on the embedding's (exit $rc; runs of nodes: $runs)"
for mode in none block; do
  train 2 "measured-$mode" "$mode" -D parallel.mode=burst -D "parallel.plan=$tap_tmp/measured.plan"
  tap_ok $? "the measured plan runs with recompute = $mode: 10 steps"
done
same measured-none measured-block
tap_ok $? "the measured plan: recompute = block gives bitwise the parameters of none"

# bad input
gpt3d_bad "a bad value" 1 ".*recompute.*(none|block|attention)" "" "[train]" "recompute = layers"
gpt3d_bad "a model without transformer blocks" 1 ".*recompute = block needs the gpt" "-D model.zoo=mlp" \
  "[train]" "recompute = block"
sed 's/^\([0-9]* blocks\.2\.attn\) .*/\1 1 0 16/' "$tap_tmp/moved.plan" >"$tap_tmp/split.plan"
timeout 120 "$mpiexec" -n 2 "$SURGE_TRAIN" "$base" -D "run.out_dir=$tap_tmp/split" -D train.recompute=block \
  -D parallel.mode=burst -D "parallel.plan=$tap_tmp/split.plan" >"$tap_tmp/split.txt" 2>&1
rc=$?
msg=$(grep -m 1 "surge: error" "$tap_tmp/split.txt")
[ $rc = 2 ] && echo "$msg" | grep -q "split.plan:[0-9]*: node [0-9]* 'blocks.2.attn' is in the recomputed segment 'blocks.2.ln1' .. 'blocks.2.add2', which runs on one rank set"
tap_ok $? "a burst plan splitting a block over rank sets: exit $rc: $msg"

tap_done
