#!/bin/sh
# Bad input to surge-train: each case is a one-line error naming file:line (or the path) and exit
# code 2, before any training starts.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"

good="$tap_tmp/good.deck"
cat > "$good" <<DECK
[run]
name = bad-input
steps = 1
out_dir = $tap_tmp/out
overwrite = true
[model]
zoo = mlp
mlp_hidden = 8
[data]
source = fashion-mnist
train_samples = 64
test_samples = 64
[train]
global_batch = 8
DECK

# expect_error NAME EXPECTED_REGEX [surge-train args...]: exit 2, one line on stderr matching.
expect_error() {
  name=$1; pattern=$2; shift 2
  "$SURGE_TRAIN" "$@" >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
  rc=$?
  lines=$(wc -l <"$tap_tmp/err.txt")
  grep -q -E -e "$pattern" "$tap_tmp/err.txt"
  found=$?
  [ $rc = 2 ] && [ "$lines" = 1 ] && [ $found = 0 ]
  tap_ok $? "$name: exit $rc, $lines line(s): $(head -c 300 "$tap_tmp/err.txt")"
  [ $rc = 2 ] && [ "$lines" = 1 ] && [ $found = 0 ] || tap_diag "expected /$pattern/" "$(cat "$tap_tmp/err.txt")"
}

# the good deck really is good (so the failures below are caused by the one change each makes)
"$SURGE_TRAIN" "$good" >"$tap_tmp/good.txt" 2>&1
tap_ok $? "the unmodified deck trains"

sed 's/^mlp_hidden = 8/mlp_hiden = 8/' "$good" >"$tap_tmp/typo.deck"
expect_error "unknown key" "typo.deck:8: .*mlp_hiden.*did you mean.*mlp_hidden" "$tap_tmp/typo.deck"

sed 's/^steps = 1/steps = many/' "$good" >"$tap_tmp/type.deck"
expect_error "wrong type" "type.deck:3: .*steps.*integer" "$tap_tmp/type.deck"

sed 's/^global_batch = 8/global_batch = -4/' "$good" >"$tap_tmp/range.deck"
expect_error "out of range" "range.deck:14: .*global_batch.*" "$tap_tmp/range.deck"

expect_error "out of range via -D" "-D.*train.lr" "$good" -D train.lr=-1

# a [backend] enum (here gemm, whose values are auto and blas) named by its line
{ cat "$good"; printf '[backend]\ngemm = fast\n'; } >"$tap_tmp/gemm.deck"
expect_error "bad backend.gemm" "gemm.deck:$(($(wc -l <"$good") + 2)): .*gemm.*fast.*(auto.*blas)" "$tap_tmp/gemm.deck"

# [backend] epilogues (auto, bias, off; cuda's cuBLASLt epilogues) named by its line, on a host backend too
{ cat "$good"; printf '[backend]\nepilogues = gelu\n'; } >"$tap_tmp/epilogues.deck"
expect_error "bad backend.epilogues" "epilogues.deck:$(($(wc -l <"$good") + 2)): .*epilogues.*gelu.*(auto.*bias.*off)" \
  "$tap_tmp/epilogues.deck"
expect_error "bad backend.epilogues via -D" "-D.*backend.epilogues.*on" "$good" -D backend.epilogues=on
{ cat "$good"; printf '[backend]\nepilogues = off\n'; } >"$tap_tmp/epilogues-off.deck"
"$SURGE_TRAIN" "$tap_tmp/epilogues-off.deck" >"$tap_tmp/epilogues-off.txt" 2>&1
tap_ok $? "backend.epilogues = off is accepted on the cpu backend (no effect there)"

# [backend] attention_kernels (auto, wmma, wmma32: the bf16 fused attention's) named by its line; accepted on the host
{ cat "$good"; printf '[backend]\nattention_kernels = flash\n'; } >"$tap_tmp/att.deck"
expect_error "bad backend.attention_kernels" \
  "att.deck:$(($(wc -l <"$good") + 2)): .*attention_kernels.*flash.*(auto.*wmma.*wmma32)" "$tap_tmp/att.deck"
"$SURGE_TRAIN" "$good" -D backend.attention_kernels=wmma32 >"$tap_tmp/att-wmma32.txt" 2>&1
tap_ok $? "backend.attention_kernels = wmma32 is accepted on the cpu backend (no effect there)"

# [multiplex] piece_ms below 0 (0 is a piece per pass) or above 1000 ms, named by its line
{ cat "$good"; printf '[multiplex]\npiece_ms = -0.5\n'; } >"$tap_tmp/piece.deck"
expect_error "bad multiplex.piece_ms" "piece.deck:$(($(wc -l <"$good") + 2)): .*piece_ms.*-0.5" "$tap_tmp/piece.deck"
expect_error "multiplex.piece_ms above its bound via -D" "-D.*multiplex.piece_ms.*1000" "$good" -D multiplex.piece_ms=5000
expect_error "multiplex.poll_fraction of 0 via -D (a fraction in (0, 1])" "-D.*multiplex.poll_fraction" "$good" \
  -D multiplex.poll_fraction=0

expect_error "a burst plan file that does not exist names [parallel] plan (plan = auto is no keyword)" \
  "-D parallel.plan=auto: \[parallel\] plan = auto: No such file.*surge-plan -o" "$good" -D parallel.mode=burst \
  -D parallel.plan=auto
expect_error "a burst profile that does not exist names [parallel] profile" \
  "-D parallel.profile=.*nope.h5: \[parallel\] profile = .*nope.h5: No such file" "$good" -D parallel.mode=burst \
  -D "parallel.profile=$tap_tmp/nope.h5"

# data of the other kind for the model: the key the command line changed is blamed
expect_error "a sequence model on images, the model given by -D" \
  "-D model.zoo=gpt: \[model\] zoo = gpt: model gpt needs token sequences" "$good" -D model.zoo=gpt
expect_error "an image model on text, the source given by -D" \
  "-D data.source=text: \[data\] source: model mlp needs images" "$good" -D data.source=text

mkdir -p "$tap_tmp/nodata"
expect_error "missing data file" "$tap_tmp/nodata/train-labels-idx1-ubyte.gz.*(no such|missing|cannot open)" \
  "$good" -D "data.path=$tap_tmp/nodata"
expect_error "data path that does not exist" "$tap_tmp/nowhere.*not a directory" "$good" -D "data.path=$tap_tmp/nowhere"

mkdir -p "$tap_tmp/badidx"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  printf 'this is not an IDX file at all, just text' | gzip >"$tap_tmp/badidx/$f.gz"
done
expect_error "bad IDX magic" "badidx/.*magic" "$good" -D "data.path=$tap_tmp/badidx"

sed 's/^zoo = mlp/zoo = vgg-mini\nvgg_channels = 4,4,4,4,4,4/' "$good" >"$tap_tmp/shapes.deck"
expect_error "layer shapes that do not fit" "shapes.deck:7: \\[model\\] zoo = vgg-mini: .*pool5: maxpool2d: kernel 2 larger than padded input 1x1" \
  "$tap_tmp/shapes.deck"

# a byte-order mark (an editor's "UTF-8 with BOM") and an invisible character are named, not shown invisibly
printf '\357\273\277' >"$tap_tmp/bom.deck" && cat "$good" >>"$tap_tmp/bom.deck"
expect_error "byte-order mark" "bom.deck:1: .*byte-order mark \\(U\\+FEFF, bytes EF BB BF\\)" "$tap_tmp/bom.deck"
sed 's/^steps = 1/ste\xe2\x80\x8bps = 1/' "$good" >"$tap_tmp/zwsp.deck"
expect_error "zero-width space in a key" "zwsp.deck:3: .*invisible character U\\+200B in the line \\(column 4\\)" \
  "$tap_tmp/zwsp.deck"

expect_error "missing deck" "$tap_tmp/nothere.deck" "$tap_tmp/nothere.deck"

# optimizer constants as the update computes them, in float32 (a beta of 0.99999999 was 1 and AdamW
# divided by 1 - 1^t = 0; an eps of 1e-40 was flushed to 0 and divided 0 by 0: every parameter NaN);
# 0.99999994 is the largest below 1, and float32's FLT_MIN printed to 9 digits is FLT_MIN
printf '[train]\noptimizer = adamw\nbeta2 = 0.99999999\n' >>"$tap_tmp/beta.deck" && cat "$good" "$tap_tmp/beta.deck" >"$tap_tmp/beta2.deck"
expect_error "beta2 that float32 rounds to 1" "beta2.deck:[0-9]+: \[train\] beta2: 0.99999999 is 1 in float32.*at most 0.99999994" \
  "$tap_tmp/beta2.deck"
expect_error "beta1 that float32 rounds to 1" "-D train.beta1=0.9999999702: \[train\] beta1: 0.9999999702 is 1 in float32" \
  "$good" -D train.optimizer=adamw -D train.beta1=0.9999999702
expect_error "eps below float32's smallest normal number" "\[train\] eps: 1e-40 is below float32's smallest normal" \
  "$good" -D train.optimizer=adamw -D train.eps=1e-40
expect_error "momentum that float32 rounds to 1" "\[train\] momentum: 0.99999999 is 1 in float32" "$good" \
  -D train.momentum=0.99999999
expect_error "nesterov without momentum (PyTorch refuses it)" "\[train\] nesterov: true needs momentum > 0" "$good" \
  -D train.momentum=0 -D train.nesterov=true
"$SURGE_TRAIN" "$good" -D train.optimizer=adamw -D train.beta1=0.99999994 -D train.beta2=0.9999999701 \
  -D train.eps=1.17549435e-38 >"$tap_tmp/edge.txt" 2>&1
tap_ok $? "beta1 0.99999994, beta2 0.9999999701 (1 - 2^-24 in float32) and eps 1.17549435e-38 (FLT_MIN) train"

tap_done
