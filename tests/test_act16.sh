#!/bin/sh
# [backend] activations = auto in precision = bf16 (nn/act16.h): a training model holds an activation in
# bfloat16 where every layer that reads it rounds it to bfloat16 anyway (the layer norms', query-key-value
# products' and GELUs' outputs and the GELUs' inputs, read by linear layers, attention, the tied output projection
# and GELU). The small
# gpt of tests/gpt3d.sh,
# 10 AdamW steps with clipping, in bf16:
#  - auto ends with bitwise the parameters of activations = float32 (h5diff of /params) on 1 rank (cpu
#    and ref), on 2 data-parallel ranks, on the 3d layout tp 2 x pp 2 (4 micro-batches, 1F1B), under a
#    2-rank burst plan whose block 1 runs on rank 1 alone (its input staged across rank sets), and
#    with [train] recompute = attention and block; each of those runs says on which ranks it holds how
#    many, and every rank of the 1-rank, ref, dp, 3d, burst and recompute = attention runs holds some (the line
#    "activations held in bfloat16 per rank"; block holds none: its segments' interiors share buffers
#    already, and what stays outside them would save less than the float buffers cost);
#  - the 1-rank run's activations (the memory line's bytes) are fewer with auto than with float32;
#  - 5 steps with auto resume to 10 with float32, bitwise the 10 of float32;
#  - fp32 holds none and says nothing of it; a bad value exits 2 naming the deck key.
# It fails when a held activation is read as floats, or not rounded where it is written (parameters differ).
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
[ -d /usr/share/games/fortunes ] || tap_skip_all "the fortunes text (Debian package fortunes) is not installed"
"$top_build/tests/test_bf16" | grep -q "^ok [0-9]* # SKIP the cpu backend's bf16" &&
  tap_skip_all "the cpu backend cannot run bf16 here (tests/test_bf16 says why)"
. "$top_src/tests/gpt3d.sh"
base="$tap_tmp/base.deck"
gpt3d_deck "$base" 100
sed -i 's/^steps = 8/steps = 10/; s/^print_every = 8/print_every = 10/' "$base"
train() { # train NP OUT ACTIVATIONS ARGS...: surge-train in bf16 into $tap_tmp/OUT (its output in OUT.txt)
  np=$1; out=$2; how=$3; shift 3
  timeout 300 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$base" -D "run.out_dir=$tap_tmp/$out" -D backend.precision=bf16 \
    -D "backend.activations=$how" "$@" >"$tap_tmp/$out.txt" 2>&1
}
same() { # same A B: the parameters of two runs bit for bit
  h5diff "$tap_tmp/$1/model.h5" "$tap_tmp/$2/model.h5" /params /params >/dev/null 2>&1
}
held() { grep '^activations held in bfloat16 per rank' "$tap_tmp/$1.txt"; }
acts() { sed -n 's/^memory by rank.*; activations \([0-9]*\).*/\1/p' "$tap_tmp/$1.txt"; }
# twin NAME NP ARGS...: auto and float32, both run, the same parameters, and auto says what it holds
twin() {
  name=$1; np=$2; shift 2
  train "$np" "$name-auto" auto "$@" && train "$np" "$name-f32" float32 "$@"
  rc=$?
  same "$name-auto" "$name-f32"
  tap_ok $? "$name: activations = auto gives bitwise the parameters of float32 (exit $rc); $(held "$name-auto" ||
    echo "none held")"
}
# every NAME: every rank of the run holds some (the counts after the line's "): ")
every() {
  held "$1" | sed 's/.*): //' |
    awk '{ for (f = 1; f <= NF; f++) if (!($f + 0 > 0)) bad++ } END { exit !(NR == 1 && NF > 0 && !bad) }'
}

twin one 1
every one-auto && ! held one-f32 >/dev/null
tap_ok $? "1 rank: auto holds some activations in bfloat16, float32 none"
a=$(acts one-auto) f=$(acts one-f32)
[ -n "$a" ] && [ -n "$f" ] && [ "$a" -lt "$f" ]
tap_ok $? "1 rank: the activations take fewer bytes with auto ($a) than with float32 ($f)"
twin ref 1 -D backend.name=ref
every ref-auto
tap_ok $? "ref: holds some too"
twin dp 2 -D parallel.mode=dp
every dp-auto
tap_ok $? "dp on 2 ranks: each rank holds some"
twin 3d 4 -D parallel.mode=3d -D parallel.tp=2 -D parallel.pp=2 -D parallel.dp=1 -D parallel.micro_batches=4
every 3d-auto
tap_ok $? "3d: every stage's ranks hold some"
twin attention 1 -D train.recompute=attention
every attention-auto
tap_ok $? "recompute = attention: holds some"
twin block 1 -D train.recompute=block

# burst on 2 ranks: the planner's plan, block 1 moved to rank 1 alone and the tied output layer to the
# embedding's rank set (as tests/test_recompute.sh)
"$top_build/tests/make_plan" "$base" 2 "$tap_tmp/planner.plan" >"$tap_tmp/planner.txt" 2>&1
awk '/^[0-9]+ / && NF == 5 && $2 ~ /^blocks\.1\./ { print $1, $2, 1, 1, 16; next }
     /^[0-9]+ / && NF == 5 && $2 == "lm_head" { print $1, $2, 1, 0, 16; next }
     /^[0-9]+ / && NF == 5 && $2 == "wte" { print $1, $2, 1, 0, 16; next } { print }' \
  "$tap_tmp/planner.plan" >"$tap_tmp/moved.plan"
twin burst 2 -D parallel.mode=burst -D "parallel.plan=$tap_tmp/moved.plan"
every burst-auto
tap_ok $? "burst on 2 ranks: each rank holds some"

# not part of the trajectory: 5 steps with auto, resumed to 10 with float32
train 1 resumed auto -D run.steps=5 -D checkpoint.every=5 &&
  train 1 resumed float32 --resume && grep -q "resumed from .*ckpt-00000005.h5" "$tap_tmp/resumed.txt"
tap_ok $? "1 rank: 5 steps with auto resume to 10 with float32"
same one-f32 resumed
tap_ok $? "1 rank: the resumed run ends bitwise where 10 steps of float32 end"

timeout 300 "$mpiexec" -n 1 "$SURGE_TRAIN" "$base" -D "run.out_dir=$tap_tmp/fp32" >"$tap_tmp/fp32.txt" 2>&1 &&
  ! held fp32 >/dev/null
tap_ok $? "fp32: no activation held in bfloat16, and no line of it"
timeout 60 "$mpiexec" -n 1 "$SURGE_TRAIN" "$base" -D backend.activations=bf16 -D "run.out_dir=$tap_tmp/bad" \
  >"$tap_tmp/bad.txt" 2>&1
rc=$?
msg=$(grep -m1 "error" "$tap_tmp/bad.txt")
[ $rc = 2 ] && echo "$msg" | grep -q "activations"
tap_ok $? "a bad value exits 2 naming the key: exit $rc: $msg"
tap_done
