#!/bin/sh
# A 3d rank's host memory at start-up (doc/3d.md, "Start-up memory"): a rank computes the values of its
# own pieces a node at a time, or reads them from a [model] init file a tensor at a time, so no rank
# holds a copy of the whole model. A gpt of 12 blocks of width 1024 (151M parameters, 605 MB) on tp 1 x pp 4, plain SGD:
# every rank's peak (surge-train's "memory by rank") is less than half the whole model's bytes above
# its training state, from the seed and from the first run's model.h5; a copy of the whole model on
# every rank (as before) put each peak more than one whole model above it (1.30 and 1.30).
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
[ -d /usr/share/games/fortunes ] || tap_skip_all "the fortunes text (Debian package fortunes) is not installed"

big="-D model.gpt_layers=12 -D model.gpt_width=1024 -D model.gpt_heads=16 -D model.gpt_context=16
  -D train.global_batch=4 -D train.micro_batches=4 -D train.optimizer=sgd -D train.momentum=0 -D parallel.tp=1
  -D parallel.pp=4 -D parallel.dp=1 -D run.steps=1 -D run.eval_every=0 -D checkpoint.every=0 -D data.test_samples=4"
run() { # run OUT ARGS...
  out=$1; shift
  # shellcheck disable=SC2086 # big is a word list
  timeout 300 "$mpiexec" -n 4 "$SURGE_TRAIN" "$top_src/inputs/gpt-3d.deck" $big -D "run.out_dir=$out" "$@" \
    >"$out.txt" 2>&1
}
# the largest (peak - state) over the ranks, in units of the whole model's parameter bytes
over_state() {
  awk '/^total parameters:/ { sub(",", "", $3); whole = 4 * $3 }
       /memory by rank \(bytes\)/ {
         line = $0; sub(/.*: peak /, "", line); split(line, parts, ";"); n = split(parts[1], peak, " ")
         s = $0; sub(/.*; state /, "", s); sub(/;.*/, "", s); split(s, state, " ")
         for (r = 1; r <= n; r++) if (peak[r] - state[r] > worst) worst = peak[r] - state[r]
       }
       END { if (whole > 0 && n == 4) printf "%.3f\n", worst / whole }' "$1"
}

run "$tap_tmp/seed"
rc=$?
x=$(over_state "$tap_tmp/seed.txt")
[ "$rc" = 0 ] && [ -n "$x" ] && awk -v x="$x" 'BEGIN { exit !(x < 0.5) }'
tap_ok $? "from the seed: each rank's peak is at most $x whole models' bytes above its training state (exit $rc)"
[ "$rc" = 0 ] || tap_diag "$(tail -n 5 "$tap_tmp/seed.txt")"

run "$tap_tmp/init" -D "model.init=$tap_tmp/seed/model.h5"
rc=$?
x=$(over_state "$tap_tmp/init.txt")
[ "$rc" = 0 ] && [ -n "$x" ] && awk -v x="$x" 'BEGIN { exit !(x < 0.5) }'
tap_ok $? "from [model] init (the first run's model.h5): at most $x whole models' bytes above it (exit $rc)"
[ "$rc" = 0 ] || tap_diag "$(tail -n 5 "$tap_tmp/init.txt")"
tap_done
