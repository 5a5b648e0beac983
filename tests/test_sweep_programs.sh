#!/bin/sh
# surge-sweep and surge-train --variant on sweep decks: every action's output (--count, --array,
# --list, --index, --write-deck), bad sweeps refused with exit 2 and one line naming DECK:LINE,
# surge-train training one variant for a step into that variant's own out_dir, and surge-train
# refusing a sweep deck without --variant (and --variant on a deck without [sweep]).
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"

SURGE_SWEEP="$top_build/surge-sweep"
deck="$tap_tmp/sweep.deck"
cat >"$deck" <<'EOF'
[run]
name = demo
out_dir = OUT/${run.name}
[model]
zoo = mlp
[data]
source = synthetic
[sweep]
train.lr = 1e-3:4e-3:1e-3           # four rates
model.mlp_hidden = 8, "8,8", 16     # three shapes; a list value is quoted
EOF
sed -i "s|OUT|$tap_tmp/runs|" "$deck"

# expect_output NAME EXPECTED_FILE ARGS...: exit 0, stdout exactly the file, stderr empty.
expect_output() {
  name=$1; want=$2; shift 2
  "$SURGE_SWEEP" "$@" >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
  rc=$?
  [ "$rc" = 0 ] && cmp -s "$tap_tmp/out.txt" "$want" && [ ! -s "$tap_tmp/err.txt" ]
  ok=$?
  tap_ok $ok "$name"
  [ $ok = 0 ] || tap_diag "exit $rc" "$(diff "$want" "$tap_tmp/out.txt")" "$(cat "$tap_tmp/err.txt")"
}

# expect_error NAME PROGRAM PHRASE ARGS...: exit 2, nothing on stdout, one line on stderr holding PHRASE.
expect_error() {
  name=$1; prog=$2; phrase=$3; shift 3
  "$prog" "$@" >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
  rc=$?
  lines=$(wc -l <"$tap_tmp/err.txt")
  [ "$rc" = 2 ] && [ "$lines" = 1 ] && grep -qF -- "$phrase" "$tap_tmp/err.txt" && [ ! -s "$tap_tmp/out.txt" ]
  ok=$?
  tap_ok $ok "$name"
  [ $ok = 0 ] || tap_diag "exit $rc, $lines lines; expected: $phrase" "$(cat "$tap_tmp/err.txt")"
}

# bad_sweep NAME PHRASE SWEEP_LINES: a deck (the [model] section, then [sweep] with the lines) that
# surge-sweep --count refuses.
bad_sweep() {
  printf '[model]\nzoo = mlp\n[sweep]\n%s\n' "$3" >"$tap_tmp/bad.deck"
  expect_error "$1" "$SURGE_SWEEP" "$2" "$tap_tmp/bad.deck" --count
}

# ---- the actions
echo 12 >"$tap_tmp/want"
expect_output "--count: 4 rates x 3 shapes" "$tap_tmp/want" "$deck" --count
echo 0-11 >"$tap_tmp/want"
expect_output "--array: the job array range" "$tap_tmp/want" "$deck" --array
cat >"$tap_tmp/want" <<'EOF'
variant  train.lr  model.mlp_hidden  run.name
0        0.001     8                 demo-v00
1        0.001     "8,8"             demo-v01
2        0.001     16                demo-v02
3        0.002     8                 demo-v03
4        0.002     "8,8"             demo-v04
5        0.002     16                demo-v05
6        0.003     8                 demo-v06
7        0.003     "8,8"             demo-v07
8        0.003     16                demo-v08
9        0.004     8                 demo-v09
10       0.004     "8,8"             demo-v10
11       0.004     16                demo-v11
EOF
expect_output "--list: every variant, the first key slowest, distinct names" "$tap_tmp/want" "$deck" --list
printf '%s\n' "-D train.lr=0.003" "-D model.mlp_hidden=8,8" "-D run.name=demo-v07" >"$tap_tmp/want"
expect_output "--index 7: the variant's -D arguments" "$tap_tmp/want" "$deck" --index 7
printf '%s\n' "-D train.lr=0.003" "-D model.mlp_hidden=8,8" "-D run.name=mine" "-D run.name=mine-v07" >"$tap_tmp/want"
expect_output "--index with -D run.name: the command's -D, then the suffixed name" "$tap_tmp/want" \
  "$deck" -D run.name=mine --index=7

printf '%s\n' '[model]' 'zoo = mlp' '[sweep]' 'run.name = a, b, c' \
  "data.path = \"x y\", it's, \"\${HOME}/d\"" 'mode = zip' >"$tap_tmp/quote.deck"
printf '%s\n' "-D run.name=b" "-D 'data.path=it'\\''s'" >"$tap_tmp/want"
expect_output "--index: an argument with a quote is one shell word" "$tap_tmp/want" \
  "$tap_tmp/quote.deck" --index 1
printf '%s\n' "-D run.name=c" "-D 'data.path=\${HOME}/d'" >"$tap_tmp/want"
expect_output "--index: a value with \${...} is single-quoted, for the deck to expand" "$tap_tmp/want" \
  "$tap_tmp/quote.deck" --index 2
printf '%s\n' "variant  run.name  data.path" "0        a         \"x y\"" \
  "1        b         it's" "2        c         \${HOME}/d" >"$tap_tmp/want"
expect_output "--list quotes a value with blanks" "$tap_tmp/want" "$tap_tmp/quote.deck" --list

"$SURGE_SWEEP" "$deck" --write-deck 10 "$tap_tmp/v10.deck" >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
rc=$?
[ "$rc" = 0 ] && grep -qx 'lr = 0.004' "$tap_tmp/v10.deck" &&
  grep -qx 'mlp_hidden = 8,8' "$tap_tmp/v10.deck" &&
  grep -qx 'name = demo-v10' "$tap_tmp/v10.deck" && ! grep -q '^\[sweep\]' "$tap_tmp/v10.deck" &&
  grep -qx "out_dir = $tap_tmp/runs/demo-v10" "$tap_tmp/v10.deck"
tap_ok $? "--write-deck 10 OUT: a resolved deck of variant 10, without [sweep] (exit $rc)"
"$SURGE_SWEEP" "$deck" --write-deck 10 - >"$tap_tmp/stdout.deck" 2>"$tap_tmp/err.txt"
cmp -s "$tap_tmp/stdout.deck" "$tap_tmp/v10.deck"
tap_ok $? "--write-deck 10 -: the same deck on stdout"
before=$(cksum <"$tap_tmp/v10.deck")
expect_error "--write-deck never overwrites" "$SURGE_SWEEP" "v10.deck: the file exists" \
  "$deck" --write-deck 3 "$tap_tmp/v10.deck"
[ "$(cksum <"$tap_tmp/v10.deck")" = "$before" ]
tap_ok $? "the existing file is unchanged"

# a -D that sets a swept key wins in every variant: --list shows what runs (with a warning), --index
# prints it after the swept values, before the suffixed name
"$SURGE_SWEEP" "$deck" -D train.lr=0.5 --list >"$tap_tmp/over.txt" 2>"$tap_tmp/over.err"
[ "$(awk 'NR > 1 { print $2 }' "$tap_tmp/over.txt" | sort -u)" = 0.5 ] &&
  grep -q "warning: -D train.lr=0.5 replaces the swept values of train.lr" "$tap_tmp/over.err" &&
  [ "$("$SURGE_SWEEP" "$deck" -D train.lr=0.5 --index 3 | tail -n 2 | head -n 1)" = "-D train.lr=0.5" ]
tap_ok $? "-D over a swept key: --list shows its value in every row and warns; --index prints it after the swept ones"

# ---- command lines
expect_error "two actions" "$SURGE_SWEEP" "give exactly one of --count" "$deck" --count --list
expect_error "no action" "$SURGE_SWEEP" "give exactly one of --count" "$deck"
expect_error "--index out of range" "$SURGE_SWEEP" "--index 12: the deck sweeps 12 variants, numbered 0..11" \
  "$deck" --index 12
expect_error "--index not a number" "$SURGE_SWEEP" "--index -1: the deck sweeps 12 variants" \
  "$deck" --index -1
expect_error "--write-deck without OUT" "$SURGE_SWEEP" "option '--write-deck' needs its values" \
  "$deck" --write-deck 3
printf '[model]\nzoo = mlp\n' >"$tap_tmp/plain.deck"
expect_error "a deck without [sweep]" "$SURGE_SWEEP" "plain.deck: the deck has no [sweep] section" \
  "$tap_tmp/plain.deck" --count

# ---- bad sweeps: DECK:LINE, the key, what is wrong
bad_sweep "unknown key, with a suggestion" \
  "bad.deck:4: [sweep] tran.lr: unknown key (hint: did you mean train.lr?)" \
  "tran.lr = 0.1, 0.2"
bad_sweep "a key without its section" \
  "bad.deck:4: [sweep] lr: expected section.key or mode (hint: did you mean train.lr?)" \
  "lr = 0.1"
bad_sweep "a bad value names its line and variant" \
  'bad.deck:5 (variant 1): [train] lr: expected a finite decimal number, got "fast"' "run.seed = 1, 2
train.lr = 0.1, fast"
bad_sweep "a value out of range" "bad.deck:4 (variant 1): [train] lr: 20 is out of range [0, 10]" \
  "train.lr = 0.1, 20"
bad_sweep "values checked together with the deck" \
  "bad.deck:4 (variant 1): [train] min_lr: min_lr (0.1) is above lr" \
  "train.min_lr = 0.01, 0.1"
long_name=$(printf 'n%.0s' $(seq 251))
bad_sweep "a default value that fails in one variant names the variant" \
  "bad.deck (variant 1, default value): [run] out_dir: is 256 characters long" "run.name = a, $long_name"
bad_sweep "zip with lists of different lengths names both lines" \
  "bad.deck:6: [sweep] run.seed: 3 values, but train.lr (line 5) has 2" "mode = zip
train.lr = 0.1, 0.2
run.seed = 1:3:1"
bad_sweep "too many variants, before expanding" \
  "bad.deck:5: [sweep] run.steps: 400 x 400 = 160000 variants so far (hint: a sweep may have at most 100000" \
  "run.seed = 1:400:1
run.steps = 1:400:1"
bad_sweep "one range over the limit" \
  "bad.deck:4: [sweep] run.seed: value 1: the range has 1000000001 values" \
  "run.seed = 0:1000000000:1"
bad_sweep "a range over the whole of int64 (its count wrapped to 0 variants, exit 0)" \
  "bad.deck:4: [sweep] run.seed: value 1: the range has 2^64 values" "run.seed = -9223372036854775808:9223372036854775807:1"
bad_sweep "a range that never reaches stop" "value 1: from 5 a step of 1 never reaches 1" "run.seed = 5:1:1"
bad_sweep "a range with step 0" "value 2: the step is 0" "train.lr = 0.1, 0.1:0.2:0"
bad_sweep "two numbers are not a range" 'value 1: "1:10" is not a range' "run.seed = 1:10"
bad_sweep "a bad log range" "value 1: start and stop must be above 0" "train.lr = log:0:1:3"
bad_sweep "an empty value" "bad.deck:4: [sweep] train.lr: value 2 is empty" "train.lr = 0.1, , 0.2"
bad_sweep "an unterminated quote" "value 2: unterminated quote" 'data.path = a, "b'
# the deck's lexer (io/deck_lex.c) reads sweep lines too: its errors, blamed on the value
bad_sweep "an unknown escape" "bad.deck:4: [sweep] data.path: value 2: unknown escape '\\q'" 'data.path = a, b\q'
bad_sweep "text after a closing quote" "value 1: text after the closing quote" 'data.path = "a" b, c'
bad_sweep "a control character" "bad.deck:4: [sweep]: control character 0x01 in the line" "$(printf 'train.lr = 0.1\001')"
printf '[model]\nzoo = mlp\n[sweep] x\ntrain.lr = 0.1, 0.2\n' >"$tap_tmp/bad.deck"
expect_error "text after a [sweep] header" "$SURGE_TRAIN" "bad.deck:3: text after the section header" "$tap_tmp/bad.deck"
bad_sweep "a key swept twice" "bad.deck:5: [sweep] train.lr: swept twice: first at line 4" "train.lr = 0.1
train.lr = 0.2"
bad_sweep "an unknown mode" 'bad.deck:4: [sweep] mode: "prodct" is not a mode (hint: did you mean product?' \
  "mode = prodct
train.lr = 0.1"
bad_sweep "two variants writing the same files" "[sweep]: variants 0 and 1 both write run.out_dir = runs/a" \
  "run.name = a, b
train.lr = 0.1, 0.2"
bad_sweep "one output directory spelt two ways" "[sweep]: variants 0 and 1 both write run.out_dir = runs/a" \
  "run.out_dir = runs/a, ./runs//a/"
bad_sweep "a fixed log file shared by variants" \
  "[sweep]: variants 0 and 1 both write log.file = /tmp/one.h5" \
  "train.lr = 0.1, 0.2
log.file = /tmp/one.h5"
bad_sweep "an empty [sweep]" "bad.deck:3: [sweep]: no key is swept" "# nothing"
printf '[model]\nzoo = mlp\n[swep]\n' >"$tap_tmp/bad.deck"
expect_error "a misspelt [sweep]" "$SURGE_TRAIN" "unknown section [swep] (hint: did you mean [sweep]?)" \
  "$tap_tmp/bad.deck"
expect_error "a bg: override (surge-train's in-process background) is no key of surge-sweep's deck" "$SURGE_SWEEP" \
  "-D bg:run.steps=7: unknown section [bg:run]" "$deck" -D bg:run.steps=7 --count
expect_error "a misspelt [sweep], to surge-sweep too" "$SURGE_SWEEP" "unknown section [swep] (hint: did you mean [sweep]?)" \
  "$tap_tmp/bad.deck" --count

# ---- surge-train runs one variant
tiny="-D data.train_samples=64 -D data.test_samples=64 -D train.global_batch=8 -D run.steps=1"
expect_error "surge-train on a sweep deck without --variant" "$SURGE_TRAIN" \
  "sweep.deck sweeps 12 variants: pass --variant I (0..11)" "$deck" $tiny
expect_error "surge-train --variant past the end" "$SURGE_TRAIN" "--variant 12: the deck sweeps 12 variants" \
  "$deck" --variant 12 $tiny
printf '[model]\nzoo = mlp\n[sweep]\nrun.name = a, b\n' >"$tap_tmp/named.deck"
"$SURGE_SWEEP" "$tap_tmp/named.deck" --list >"$tap_tmp/named.txt" 2>&1
[ "$(head -n 1 "$tap_tmp/named.txt" | tr -s ' ')" = "variant run.name" ]
tap_ok $? "--list of a sweep that sets run.name shows its column once: $(head -n 1 "$tap_tmp/named.txt")"
expect_error "surge-train --variant given twice (the last won)" "$SURGE_TRAIN" "option '--variant' is given twice" \
  "$deck" --variant 1 --variant 2 $tiny
cp "$deck" "$tap_tmp/my deck;x.deck"
expect_error "the hint's command quotes the deck's name" "$SURGE_TRAIN" \
  "(hint: surge-sweep '$tap_tmp/my deck;x.deck' --list shows them)" "$tap_tmp/my deck;x.deck" $tiny
expect_error "surge-train --variant on a deck without [sweep]" "$SURGE_TRAIN" \
  "plain.deck: --variant 0: the deck has no [sweep] section" "$tap_tmp/plain.deck" --variant 0
timeout 120 "$SURGE_TRAIN" "$deck" --variant 7 $tiny >"$tap_tmp/train.txt" 2>"$tap_tmp/train.err"
rc=$?
[ "$rc" = 0 ] && grep -q '^# resolved deck (.*sweep.deck, variant 7)' "$tap_tmp/train.txt" &&
  grep -qx 'name = demo-v07' "$tap_tmp/train.txt" && grep -qx 'lr = 0.003' "$tap_tmp/train.txt" &&
  grep -qx 'mlp_hidden = 8,8' "$tap_tmp/train.txt" && grep -qx 'steps = 1' "$tap_tmp/train.txt"
tap_ok $? "surge-train --variant 7 trains variant 7 for 1 step: lr 0.003, mlp_hidden 8,8, demo-v07 (exit $rc)"
[ "$rc" = 0 ] || tap_diag "$(tail -n 5 "$tap_tmp/train.err")"
[ -f "$tap_tmp/runs/demo-v07/log.h5" ] && [ -f "$tap_tmp/runs/demo-v07/model.h5" ] &&
  [ "$(ls "$tap_tmp/runs")" = demo-v07 ]
tap_ok $? "it writes into the variant's own out_dir: $(ls "$tap_tmp/runs" | tr '\n' ' ')"
timeout 120 "$SURGE_TRAIN" "$tap_tmp/v10.deck" $tiny >"$tap_tmp/train10.txt" 2>&1
rc=$?
[ "$rc" = 0 ] && [ -f "$tap_tmp/runs/demo-v10/log.h5" ]
tap_ok $? "surge-train runs the deck that --write-deck wrote, into variant 10's out_dir (exit $rc)"

tap_done
