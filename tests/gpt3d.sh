# Shared by the tests of 3d runs (tests/test_3d.sh, tests/test_compress_run.sh); sourced after tests/tap.sh.
#   gpt3d_deck FILE EVERY       the small gpt of both, 8 steps of AdamW on the fortunes text, a
#                               checkpoint every EVERY steps; no [parallel] (the bad-input decks append theirs)
#   gpt3d_grid FILE MB          appends the (tp 2, pp 2, dp 2) layout of MB micro-batches
#   gpt3d_bad NAME NP PATTERN "-D OVERRIDES" DECK-LINES...
#                               surge-train on NP ranks with $base plus the lines must exit 2, its
#                               first error line naming the deck's file:line and matching PATTERN
gpt3d_deck() {
  cat >"$1" <<DECK
[run]
name = gpt3d
steps = 8
print_every = 8
overwrite = true
[model]
zoo = gpt
gpt_layers = 4
gpt_width = 32
gpt_heads = 4
gpt_context = 16
[data]
source = text
test_samples = 8
[train]
global_batch = 16
optimizer = adamw
lr = 1e-3
clip_norm = 1.0
[checkpoint]
every = $2
DECK
}

gpt3d_grid() {
  cat >>"$1" <<DECK
[parallel]
mode = 3d
tp = 2
pp = 2
dp = 2
[train]
micro_batches = $2
DECK
}

gpt3d_bad() {
  name=$1; np=$2; pattern=$3; overrides=$4; shift 4
  cp "$base" "$tap_tmp/bad.deck"
  for line in "$@"; do printf '%s\n' "$line" >>"$tap_tmp/bad.deck"; done
  # shellcheck disable=SC2086
  timeout 120 "$mpiexec" -n "$np" "$SURGE_TRAIN" "$tap_tmp/bad.deck" -D "run.out_dir=$tap_tmp/bad" $overrides \
    >"$tap_tmp/bad.out" 2>"$tap_tmp/bad.err"
  rc=$?
  msg=$(grep -m 1 "surge: error" "$tap_tmp/bad.err")
  echo "$msg" | grep -q -E -e "bad.deck:[0-9]+: $pattern"
  found=$?
  [ $rc = 2 ] && [ $found = 0 ]
  tap_ok $? "$name: exit $rc: $msg"
}
