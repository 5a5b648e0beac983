#!/bin/sh
# Background jobs in a 3D pipeline's bubbles (doc/multiplexing.md): a 3d foreground (the small gpt,
# tp 1 x pp 2 x dp 1, 4 micro-batches, 1F1B) and a 1-rank mlp background beside each of its ranks in
# one MPMD launch. The pipeline raises its waits as events (core/events.h), so the foreground
# publishes its warm-up and cool-down bubbles and its receive waits to its partner:
#  - the foreground's parameters are bitwise those of the same run without backgrounds;
#  - the backgrounds train: the loss of each falls;
#  - the foreground's published states show the bubbles: each stage offers its partner time in every
#    logged step (/ranks/phase_offered > 0; the last stage waits for activations in the warm-up, the
#    first for gradients in the cool-down), and the backgrounds ran beside it (lent time > 0).
. "$(dirname "$0")/tap.sh"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || tap_skip_all "dataset-fashion-mnist is not installed"
[ -d /usr/share/games/fortunes ] || tap_skip_all "the fortunes text (Debian package fortunes) is not installed"
export OMPI_MCA_rmaps_base_oversubscribe=1
. "$top_src/tests/gpt3d.sh"
deck="$tap_tmp/fg.deck"
gpt3d_deck "$deck" 0
cat >>"$deck" <<DECK
[parallel]
mode = 3d
tp = 1
pp = 2
dp = 1
[train]
micro_batches = 4
DECK
FG="$SURGE_TRAIN $deck -D run.steps=150 -D run.print_every=1000 -D checkpoint.every=0 -D model.gpt_width=64
  -D model.gpt_context=32 -D train.global_batch=32"
BG="$SURGE_TRAIN $top_src/inputs/mlp-fmnist.deck -D model.mlp_hidden=64 -D data.train_samples=5000
  -D data.test_samples=100 -D run.eval_every=0 -D run.print_every=1000 -D train.lr=0.1 -D multiplex.priority=none"
# falls LOG: the mean of the last 5 losses is below the mean of the first 5 (at least 10 steps)
falls() {
  h5vals "$1" /metrics/loss | awk '{ v[NR] = $1 } END {
    if (NR < 10) exit 1; for (i = 1; i <= 5; i++) { a += v[i]; b += v[NR - 5 + i] } exit !(b < a) }'
}
# rank_sum LOG DATASET R: the sum of rank R's column of a (steps, ranks) dataset
rank_sum() { h5vals "$1" "$2" | awk -v r="$3" 'NR % 2 == r % 2 { s += $1 } END { printf "%.6f", s }'; }

timeout 300 "$mpiexec" -n 2 $FG -D "run.out_dir=$tap_tmp/solo" >"$tap_tmp/solo.txt" 2>&1
rc=$?
tap_ok $rc "the 3d foreground alone (pp 2, 4 micro-batches): exit $rc"
# shellcheck disable=SC2086
timeout 300 "$mpiexec" --bind-to core --map-by core -n 2 $FG -D "run.out_dir=$tap_tmp/fg" \
  : -n 1 $BG --background -D run.steps=100000 -D "run.out_dir=$tap_tmp/b0" \
  : -n 1 $BG --background -D run.steps=100000 -D "run.out_dir=$tap_tmp/b1" -D multiplex.partner_offset=1 \
  >"$tap_tmp/mpmd.txt" 2>&1
rc=$?
tap_ok $rc "the 3d foreground with a background beside each rank (MPMD): exit $rc"
[ $rc = 0 ] || tap_diag "$(tail -20 "$tap_tmp/mpmd.txt")"

"$top_build/tests/h5_compare" "$tap_tmp/fg/model.h5" "$tap_tmp/solo/model.h5" 0 >"$tap_tmp/cmp.txt" 2>&1
tap_ok $? "the foreground's parameters are bitwise those of the run alone ($(cat "$tap_tmp/cmp.txt"))"
for b in b0 b1; do
  falls "$tap_tmp/$b/log.h5"
  tap_ok $? "the background beside stage ${b#b} trains in the bubbles: its loss falls ($(h5vals "$tap_tmp/$b/log.h5" /metrics/loss | wc -l) steps)"
done
for r in 0 1; do
  offered=$(rank_sum "$tap_tmp/fg/log.h5" /ranks/phase_offered $r)
  lent=$(rank_sum "$tap_tmp/fg/log.h5" /ranks/phase_background $r)
  every=$(h5vals "$tap_tmp/fg/log.h5" /ranks/phase_offered | awk -v r=$r 'NR % 2 == r % 2 && !($1 > 0) { n++ } END { print n + 0 }')
  [ "$every" = 0 ] && awk -v o="$offered" -v l="$lent" 'BEGIN { exit !(o > 0 && l > 0) }'
  tap_ok $? "stage $r published its bubbles: offered its partner ${offered} s over 150 steps (no step without), its partner ran ${lent} s"
done
bubble=$(h5attr "$tap_tmp/fg/log.h5" /pipeline/theoretical_bubble 2>/dev/null)
tap_diag "the schedule's bubble (PP-1)/(M+PP-1): ${bubble:-?}"
tap_done
