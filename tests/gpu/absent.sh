#!/bin/sh
# Where no GPU is usable (development machines, CI): a deck asking for the cuda backend ends the
# job with exit 1 and one line that says so, on 1 rank and on 2; bf16 on the cpu backend without its
# own kernels (simd = none) is the deck's fault (exit 2, one line naming [backend] simd and bf16).
# Skipped where a GPU is usable.
SURGE_TOP_SRCDIR=${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SURGE_TOP_SRCDIR/tests/tap.sh"
"$top_build/tests/gpu/gpu_probe" >/dev/null && tap_skip_all "a GPU is usable here (tests/gpu/*.gpu test it)"
run="$SURGE_TRAIN $top_src/inputs/mlp-fmnist.deck -D data.source=synthetic -D run.steps=1 -D run.overwrite=true"
for np in 1 2; do
  timeout 120 "$mpiexec" -n $np $run -D backend.name=cuda -D "run.out_dir=$tap_tmp/cuda$np" >"$tap_tmp/out$np.txt" 2>"$tap_tmp/err$np.txt"
  rc=$?
  lines=$(grep -c "^surge: " "$tap_tmp/err$np.txt")
  [ $rc = 1 ] && [ "$lines" = 1 ] && grep -q "^surge: error: .*backend cuda: no CUDA GPU usable on this machine\|^surge: error: .*backend cuda: this build has no CUDA backend" "$tap_tmp/err$np.txt"
  tap_ok $? "cuda without a GPU on $np rank(s): exit $rc, $lines line: $(grep "^surge: " "$tap_tmp/err$np.txt")"
done
timeout 120 "$mpiexec" -n 1 $run -D backend.precision=bf16 -D backend.simd=none -D "run.out_dir=$tap_tmp/bf16" \
  >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
rc=$?
[ $rc = 2 ] && [ "$(grep -c "^surge: " "$tap_tmp/err.txt")" = 1 ] && grep -q "bf16" "$tap_tmp/err.txt" &&
  grep -q "backend.simd\|\[backend\] simd" "$tap_tmp/err.txt"
tap_ok $? "bf16 on the cpu backend with simd = none: exit $rc, $(grep "^surge: " "$tap_tmp/err.txt")"
tap_done
