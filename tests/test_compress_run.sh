#!/bin/sh
# Optimus-CC's compression in 3d runs (doc/compression.md):
#  - the reducer and compressed back-propagation over real groups (tests/test_compress_mpi, 4 ranks);
#  - the techniques against the exact 3d run (tests/test_compress_equiv, one 8-rank job);
#  - surge-train on tp 2 x pp 2 x dp 2 with CB + FE + SC (and a warm-up): a checkpoint holds the
#    compressors' state and resuming from it ends bit for bit where the straight run ends; the log's
#    compressed bytes are the formula's; surge-report shows the compression section;
#  - bad input: exit 2 with the deck's file:line.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
[ -d /usr/share/games/fortunes ] || tap_skip_all "the fortunes text (Debian package fortunes) is not installed"

tap_timeout=120 tap_pass_through "groups" 4 "$top_build/tests/test_compress_mpi"
tap_timeout=600 tap_pass_through "3d" 8 "$top_build/tests/test_compress_equiv"

. "$top_src/tests/gpt3d.sh"
base="$tap_tmp/base.deck"
gpt3d_deck "$base" 3
deck="$tap_tmp/cc.deck"
cp "$base" "$deck"
gpt3d_grid "$deck" 4
cat >>"$deck" <<DECK
[compress]
cb = true
cb_rank = 4
fe = true
sc_stages = 1
dp_rank = 4
warmup_fraction = 0.5
DECK
train() { # train OUT ARGS...
  out=$1; shift
  timeout 300 "$mpiexec" -n 8 "$SURGE_TRAIN" "$deck" -D "run.out_dir=$out" "$@" >>"$out.txt" 2>&1
}
train "$tap_tmp/straight"
tap_ok $? "CB + FE + SC (warm-up: 4 of 8 steps) on tp 2 x pp 2 x dp 2 trains 8 steps"
# the warm-up is a fraction of [run] steps: resume the straight run's copy from its step-3 checkpoint
cp -r "$tap_tmp/straight" "$tap_tmp/half" && rm "$tap_tmp/half/checkpoints/ckpt-00000006.h5" \
  "$tap_tmp/half/checkpoints/ckpt-00000008.h5" "$tap_tmp/half/model.h5"
tap_ok $? "its checkpoint of step 3 (inside the warm-up) kept alone"
ckpt="$tap_tmp/half/checkpoints/ckpt-00000003.h5"
cp -r "$tap_tmp/half" "$tap_tmp/forge-base"
nonzero() { h5vals "$ckpt" "$1" | awk '$1 != 0 { n++ } END { print n + 0 }'; }
cb_e=$(nonzero /compress/cb/error) cb_q=$(nonzero /compress/cb/q) dp_q=$(nonzero /compress/dp/q)
steps=$(h5vals "$ckpt" /compress/dp/steps | sort -u | tr '\n' ' ')
[ "$cb_e" -gt 0 ] && [ "$cb_q" -gt 0 ] && [ "$dp_q" -gt 0 ] && [ "$steps" = "3 " ]
tap_ok $? "the checkpoint holds the compressors' state: CB error ($cb_e nonzero), CB and DP factors ($cb_q, $dp_q), the steps counted ($steps)"
train "$tap_tmp/half" --resume
h5diff "$tap_tmp/half/model.h5" "$tap_tmp/straight/model.h5" /params /params >/dev/null 2>&1
tap_ok $? "resumed at step 3 with CB + FE + SC: bitwise the straight run's parameters"
grep -q "resumed from .*ckpt-00000003.h5" "$tap_tmp/half.txt"
tap_ok $? "the resumed run says it resumed from the step-3 checkpoint"
# compressor state forged under a valid checksum (issue 36): refused at load, naming the dataset
# (before, a NaN count was cast to long, undefined behaviour, and a NaN error buffer ended the run
# later with exit 1 and a hint to lower lr)
n=0
for forged in /compress/dp/steps=nan@0 /compress/dp/steps=4611686018427387904@1 /compress/dp/steps=-1@2 \
  /compress/dp/steps=2.5@0 /compress/dp/error=nan@5 /compress/dp/q=inf@3 /compress/cb/error=-inf@0; do
  n=$((n + 1))
  d="$tap_tmp/forged$n"
  cp -r "$tap_tmp/forge-base" "$d" && c="$d/checkpoints/ckpt-00000003.h5" &&
    "$top_build/tests/test_checkpoint" damage "$c" "$c.new" "forge-tensor:$forged" >/dev/null 2>&1 && mv "$c.new" "$c" ||
    { tap_ok 1 "forging $forged failed"; continue; }
  train "$d" --resume
  rc=$?
  name=${forged%%=*}
  grep "surge: error" "$d.txt" | head -n 1 >"$d.err"
  [ $rc = 2 ] && grep -q "ckpt-00000003\.h5: $name holds .* at element [0-9]*, not a .*not written by a Surge run" "$d.err"
  tap_ok $? "a checkpoint whose $forged is refused at load: exit $rc ($(head -c 240 "$d.err"))"
done
# fewer [run] steps on resume move the warm-up's end (warmup_fraction x steps) before the steps a
# checkpoint counted: the warm-up is then over (refused before as a count "not written by a Surge run")
d="$tap_tmp/fewer"
cp -r "$tap_tmp/straight" "$d" && rm "$d/checkpoints/ckpt-00000008.h5" "$d/model.h5"
train "$d" --resume -D run.steps=7
rc=$?
[ $rc = 0 ] && grep -q "resumed from .*ckpt-00000006.h5" "$d.txt"
tap_ok $? "a checkpoint of step 6 (4 warm-up steps counted) resumes with run.steps = 7 (a warm-up of 3): exit $rc $(grep -o 'error: .*' "$d.txt" | head -c 200)"

# the compressors' state belongs to the layout that wrote it (the checkpoint's rank_grid): another
# micro-batch count, or another grid of the same 8 ranks (whose buffers could have the same lengths),
# is refused naming both layouts
for change in "train.micro_batches=2" "parallel.tp=1 parallel.dp=4"; do
  d="$tap_tmp/relayout-$(echo "$change" | tr ' =' '__')"
  cp -r "$tap_tmp/forge-base" "$d"
  set --
  for kv in $change; do set -- "$@" -D "$kv"; done
  train "$d" --resume "$@"
  rc=$?
  grep "surge: error" "$d.txt" | head -n 1 >"$d.err"
  [ $rc = 2 ] && grep -q "ckpt-00000003\.h5 holds the compressors' state of 8 ranks: tp 2 x pp 2 x dp 2, stages balanced, scatter_gather on, 4 micro-batches; this run is .*resumes only on the layout that wrote it" "$d.err"
  tap_ok $? "a checkpoint with CB state resumed with $change is refused naming both layouts: exit $rc ($(head -c 300 "$d.err"))"
done

log="$tap_tmp/straight/log.h5"
sum() { h5vals "$log" "$1" | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
# per step: 1 compressed gradient per pipeline (PP (PP - 1) / 2), sent by each of 2 tp x 2 dp ranks,
# each its half of the rows (scatter-gather): a micro-batch of 2 samples x 16 tokens, 16 of them a
# rank's, width 32, rank 4: (16 + 32) x 4 floats, raw 16 x 32
sent=$(sum /metrics/bytes_activation_grad_compressed) raw=$(sum /compress/activation_grad_raw_bytes)
[ "$sent" = $((8 * 4 * (16 + 32) * 4 * 4)) ] && [ "$raw" = $((8 * 4 * 16 * 32 * 4)) ]
tap_ok $? "the log's compressed pipeline gradient bytes are the formula's: $sent sent for $raw (8 steps x 4 ranks x (n + m) r x 4 bytes, n a rank's half of the tokens)"
dp_c=$(h5vals "$log" /metrics/bytes_dp_compressed | tr '\n' ' ')
# SC's mask: only stage 0 (sc_stages = 1) sends factors, per step after the warm-up on each of 2 tp x
# 2 dp ranks its 2 blocks' matrices at rank 4, qkv (48, 32), proj (32, 16), fc (64, 32), fcproj (32, 64):
# (80 + 48 + 96 + 96) x 4 floats each, and the position table (16, 32) on the 2 tp-rank-0 ranks:
# (16 + 32) x 4 floats (the word embedding is FE's); stage 1's blocks would add as much again
sc=$((4 * (2 * 2 * 2 * (80 + 48 + 96 + 96) * 4 + 2 * (16 + 32) * 4)))
echo "$dp_c" | awk -v sc="$sc" '{ for (i = 1; i <= 4; i++) if ($i != 0) exit 1; for (i = 5; i <= 8; i++) if ($i != sc) exit 1 }'
tap_ok $? "data-parallel compression starts after the warm-up, on stage 0 only: bytes_dp_compressed per step $dp_c (formula $sc)"
[ "$(h5vals "$log" /compress/step | wc -l)" = 8 ] && [ "$(h5vals "$log" /compress/error_norm | awk '$1 > 0' | wc -l)" = 8 ]
tap_ok $? "/compress has a row per step, the error carried over the boundary positive in each"
grep -q "^compression: cb rank 4 (lep on, epilogue only): 1 of 4 activation-gradient sends" "$tap_tmp/straight.txt" &&
  h5attr "$log" /compress/summary | grep -q "fe: the word embedding's gradient summed once over the 4 first- and last-stage"
tap_ok $? "the choices are printed at start and stored as /compress@summary"
report="$top_build/surge-report"
"$report" "$log" >"$tap_tmp/report.txt" 2>&1 &&
  grep -q "^Compression (Optimus-CC)" "$tap_tmp/report.txt" &&
  grep -q "^  pipeline gradients .* 2.7x " "$tap_tmp/report.txt" &&
  grep -q "^  error ||E|| per boundary" "$tap_tmp/report.txt"
tap_ok $? "surge-report shows the compression section: $(grep -E '^  (pipeline gradients|data-parallel) ' "$tap_tmp/report.txt" | tr -s ' ' | tr '\n' ';')"
per_boundary=$(grep "^  error ||E|| per boundary" "$tap_tmp/report.txt" | head -c 400)
[ "$(echo "$per_boundary" | grep -o 'last' | wc -l)" = 1 ] && [ "$(wc -c <"$tap_tmp/report.txt")" -lt 65536 ]
tap_ok $? "one boundary (pp 2), as /compress/error_norm is wide, and a short report (a reader that took the read limit for the width listed 16777216): $per_boundary"

# bad input: exit 2, the first line names the deck's file:line
g="[parallel]" m="mode = 3d" p="pp = 2" d="dp = 2" t="[train]" mb="micro_batches = 2"
gpt3d_bad "cb rank 0" 4 "\[compress\] cb_rank: 0 is out of range" "" "$g" "$m" "$p" "$d" "$t" "$mb" "[compress]" "cb = true" "cb_rank = 0"
gpt3d_bad "cb rank larger than the gradients" 4 \
  "\[compress\] cb_rank = 100, but an activation gradient is a \(tokens x width\) matrix of at most \(64 x 32\)" "" \
  "$g" "$m" "$p" "$d" "$t" "$mb" "[compress]" "cb = true" "cb_rank = 100"
# with scatter-gather (tp 2, 4 micro-batches of 2 samples) each rank compresses its 16 of a micro-batch's
# 32 tokens: rank 20 is too large (whole gradients would take it)
gpt3d_bad "cb rank larger than a tensor-parallel rank's part" 8 \
  "\[compress\] cb_rank = 20, but an activation gradient \(a tensor-parallel rank's part of its tokens: \[parallel\] scatter_gather\) is a \(tokens x width\) matrix of at most \(16 x 32\).*or \[parallel\] scatter_gather = false" "" \
  "$g" "$m" "tp = 2" "$p" "$d" "$t" "micro_batches = 4" "[compress]" "cb = true" "cb_rank = 20"
gpt3d_bad "dp rank larger than every matrix" 4 "\[compress\] dp_rank = 200 is larger than every gradient matrix" "" \
  "$g" "$m" "$p" "$d" "$t" "$mb" "[compress]" "sc_stages = 1" "dp_rank = 200"
gpt3d_bad "sc_stages beyond the pipeline" 4 "\[compress\] sc_stages: sc_stages = 3, but the pipeline has 2 stages" "" \
  "$g" "$m" "$p" "$d" "$t" "$mb" "[compress]" "sc_stages = 3"
gpt3d_bad "cb without a pipeline" 2 "\[compress\] cb: the 3d layout has no pipeline \(\[parallel\] pp = 1\)" "" \
  "[parallel]" "mode = 3d" "tp = 1" "pp = 1" "dp = 2" "[compress]" "cb = true"
gpt3d_bad "fe without a pipeline" 2 "\[compress\] fe: the 3d layout has no pipeline" "" \
  "[parallel]" "mode = 3d" "dp = 2" "[compress]" "fe = true"
gpt3d_bad "sc without data parallelism" 2 "\[compress\] sc_stages: the 3d layout has no data parallelism \(\[parallel\] dp = 1\)" "" \
  "[parallel]" "mode = 3d" "pp = 2" "[compress]" "sc_stages = 1"
gpt3d_bad "compression keys with data parallelism" 2 "\[compress\] cb: \[compress\] applies to 3d runs, but \[parallel\] mode = dp" "" \
  "[parallel]" "mode = dp" "[compress]" "cb = true"
tap_done
